// Wrapped bodies on POST /api/ingest (docs/api.md section 6.6, issue 15): a line that is a
// wrapper of many records (an OTLP export, a Loki push, {"logs":[...]}, an Elasticsearch _bulk
// body) is not stored as one event. Alone it is 400 wrapped_body naming the endpoint to use, and
// nothing is stored; among stored lines it is a line failure of the 200 summary.
import t from 'tap'
import { gzipSync } from 'node:zlib'
import { startServer } from '../helpers/server.ts'
import type { TestServer } from '../helpers/server.ts'
import { countEvents, createIngestTarget, postIngest, storedEvents } from '../helpers/ingest.ts'
import type { IngestTarget } from '../helpers/ingest.ts'

let s: TestServer
t.before(async () => { s = await startServer(t) })

let streams = 0
async function target (): Promise<IngestTarget> {
  return createIngestTarget(s, `wrapped-${++streams}`)
}

const now = Date.now()
const otlpLogs = { resourceLogs: [{ resource: { attributes: [] }, scopeLogs: [{ logRecords: [{ timeUnixNano: String(now * 1e6), body: { stringValue: 'hi' } }] }] }] }
const lokiPush = { streams: [{ stream: { app: 'a' }, values: [[String(now * 1e6), 'hi']] }] }

/** Each wrapper shape, and a piece of the endpoint or advice its message must name. */
const shapes: Array<[string, unknown, string]> = [
  ['OTLP/JSON logs export', otlpLogs, '/v1/logs'],
  ['OTLP/JSON traces export', { resourceSpans: [{ scopeSpans: [] }] }, 'logs only'],
  ['OTLP/JSON metrics export', { resourceMetrics: [{ scopeMetrics: [] }] }, 'logs only'],
  ['Loki push (values)', lokiPush, '/loki/api/v1/push'],
  ['Loki push (entries)', { streams: [{ labels: '{app="a"}', entries: [{ ts: new Date(now).toISOString(), line: 'hi' }] }] }, '/loki/api/v1/push'],
  ...['logs', 'events', 'records', 'messages', 'data', 'entries', 'items'].map((key): [string, unknown, string] =>
    [`{"${key}":[...]}`, { [key]: [{ message: 'a' }, { message: 'b' }] }, 'one event per line']),
  ['Elasticsearch _bulk action (index)', { index: { _index: 'logs', _id: '1' } }, '/api/elastic/_bulk'],
  ['Elasticsearch _bulk action (create)', { create: {} }, '/api/elastic/_bulk'],
]

for (const [name, value, names] of shapes) {
  t.test(`${name}: 400 wrapped_body naming ${names}, nothing stored`, async (t) => {
    const tgt = await target()
    const r = await postIngest(tgt, JSON.stringify(value) + '\n')
    t.equal(r.status, 400)
    t.equal(r.body.error, 'wrapped_body')
    t.ok(r.body.message.includes(names), r.body.message)
    t.equal(r.body.ingested, 0)
    t.equal(r.body.failed, 1)
    t.same(r.body.failures.map((f: { line: number, code: string }) => [f.line, f.code]), [[1, 'wrapped_body']])
    t.type(r.body.request_id, 'string')
    t.equal(await countEvents(tgt), 0)
  })
}

t.test('a gzip body holding an OTLP export: the same 400', async (t) => {
  const tgt = await target()
  const r = await postIngest(tgt, gzipSync(JSON.stringify(otlpLogs) + '\n'), { 'content-encoding': 'gzip' })
  t.equal(r.status, 400)
  t.equal(r.body.error, 'wrapped_body')
  t.ok(r.body.message.includes('/v1/logs'), r.body.message)
  t.equal(await countEvents(tgt), 0)
})

t.test('a JSON array body whose element is a wrapper: the same 400', async (t) => {
  const tgt = await target()
  const r = await postIngest(tgt, JSON.stringify([lokiPush]), { 'content-type': 'application/json' })
  t.equal(r.status, 400)
  t.equal(r.body.error, 'wrapped_body')
  t.ok(r.body.message.includes('/loki/api/v1/push'), r.body.message)
  t.equal(await countEvents(tgt), 0)
})

t.test('several wrapper lines, and other failures: 400 with the first wrapper\'s message', async (t) => {
  const tgt = await target()
  const r = await postIngest(tgt, ['{"oops"', JSON.stringify(lokiPush), JSON.stringify(otlpLogs)].join('\n') + '\n')
  t.equal(r.status, 400)
  t.equal(r.body.error, 'wrapped_body')
  t.ok(r.body.message.includes('/loki/api/v1/push'), r.body.message)
  t.same(r.body.failures.map((f: { code: string }) => f.code), ['invalid_json', 'wrapped_body', 'wrapped_body'])
  t.equal(await countEvents(tgt), 0)
})

t.test('events that carry such keys among other fields are events', async (t) => {
  const tgt = await target()
  const lines = [
    { message: 'batch done', events: [{ id: 1 }, { id: 2 }] },
    { host: 'h1', logs: [{ a: 1 }] },
    { data: [{ a: 1 }], level: 'info' },
    { index: { name: 'users' } }, // not an action: its keys are no bulk metadata
    { logs: 'not an array' },
    { items: [1, 2, 3] }, // not an array of objects
    { streams: [{ stream: { app: 'a' } }] }, // no values or entries
    { resourceLogs: 'x' },
  ]
  const r = await postIngest(tgt, lines.map((l) => JSON.stringify(l)).join('\n') + '\n')
  t.equal(r.status, 200)
  t.equal(r.body.ingested, lines.length)
  t.equal(r.body.failed, 0)
  const stored = await storedEvents(tgt)
  t.equal(stored.length, lines.length)
  const batch = stored.find((e) => e.message === 'batch done')
  t.same(JSON.parse(batch!.attrs), { events: [{ id: 1 }, { id: 2 }] }, 'the events array kept in attrs')
})

t.test('a wrapper among stored lines: 200, the wrapper a line failure', async (t) => {
  const tgt = await target()
  const lines = [
    JSON.stringify({ message: 'first' }),
    JSON.stringify({ logs: [{ message: 'x' }] }),
    JSON.stringify({ message: 'third' }),
  ]
  const r = await postIngest(tgt, lines.join('\n') + '\n')
  t.equal(r.status, 200)
  t.equal(r.body.ingested, 2)
  t.equal(r.body.failed, 1)
  t.same(r.body.failures.map((f: { line: number, code: string }) => [f.line, f.code]), [[2, 'wrapped_body']])
  t.ok(r.body.failures[0].message.includes('one event per line'), r.body.failures[0].message)
  t.same((await storedEvents(tgt)).map((e) => e.message).sort(), ['first', 'third'])
})

t.test('an Elasticsearch _bulk body (actions and documents): 400, its documents not stored', async (t) => {
  const tgt = await target()
  const lines = [
    { index: { _index: 'logs' } }, { message: 'one' },
    { create: { _index: 'logs', _id: '2' } }, { message: 'two' },
  ]
  const r = await postIngest(tgt, lines.map((l) => JSON.stringify(l)).join('\n') + '\n')
  t.equal(r.status, 400)
  t.equal(r.body.error, 'wrapped_body')
  t.ok(r.body.message.includes('/api/elastic/_bulk'), r.body.message)
  t.equal(r.body.ingested, 0)
  t.same(r.body.failures.map((f: { line: number }) => f.line), [1, 3])
  t.equal(await countEvents(tgt), 0)
})

t.test('a bulk action line after the first line fails alone', async (t) => {
  const tgt = await target()
  const lines = [{ message: 'one' }, { index: {} }, { message: 'two' }]
  const r = await postIngest(tgt, lines.map((l) => JSON.stringify(l)).join('\n') + '\n')
  t.equal(r.status, 200)
  t.equal(r.body.ingested, 2)
  t.same(r.body.failures.map((f: { line: number, code: string }) => [f.line, f.code]), [[2, 'wrapped_body']])
  t.equal(await countEvents(tgt), 2)
})

t.test('the protocol inputs are unchanged: an OTLP/JSON export to /v1/logs is stored', async (t) => {
  const tgt = await target()
  const res = await fetch(`${s.url}/v1/logs`, {
    method: 'POST',
    headers: { authorization: `Bearer ${tgt.token}`, 'content-type': 'application/json' },
    body: JSON.stringify(otlpLogs),
  })
  t.equal(res.status, 200)
  await res.arrayBuffer()
  t.same((await storedEvents(tgt)).map((e) => e.message), ['hi'])
})
