// Line formats through the real server and ClickHouse: failures with their line numbers, mixed
// formats with nested JSON landing in the right columns (the stored rows are checked), attrs,
// timestamps.
import t from 'tap'
import { startServer } from '../helpers/server.ts'
import type { TestServer } from '../helpers/server.ts'
import { createIngestTarget, postIngest, storedEvents } from '../helpers/ingest.ts'
import type { IngestTarget } from '../helpers/ingest.ts'

let s: TestServer
t.before(async () => { s = await startServer(t) })

async function target (name: string, retentionDays?: number): Promise<IngestTarget> {
  return createIngestTarget(s, name, retentionDays)
}

t.test('each failure code with its line number; the good lines are stored', async (t) => {
  const tgt = await target('failures')
  const lines = [
    '{"path":"/ok-1","status":200}', // 1
    '{"path": "/broken"', // 2 invalid_json
    '[1,2,3]', // 3 not_an_object
    '"just a string"', // 4 not_an_object
    '{"status":"2OO"}', // 5 invalid_field ("200" would be a number: issue 15)
    '{"status":99}', // 6 invalid_field
    '{"rt":-1}', // 7 invalid_field
    '{"bytes":1.5}', // 8 invalid_field
    '{"host":7}', // 9 invalid_field
    '{"log":42}', // 10 invalid_field
    '{"log":"x","filename":1}', // 11 invalid_field
    '{"ts":1}', // 12 ts_out_of_range (1970)
    `{"ts":${Date.now() + 3 * 86_400_000}}`, // 13 ts_out_of_range (3 days ahead)
    '', // 14 blank: skipped, not counted
    '{"path":"/ok-2"}', // 15
  ]
  const body = Buffer.concat([Buffer.from(lines.join('\n') + '\n'), Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d, 0x0a])]) // 16 invalid_utf8
  const r = await postIngest(tgt, body)
  t.equal(r.status, 200)
  t.equal(r.body.ingested, 2)
  t.equal(r.body.failed, 13)
  t.equal(r.body.failures_truncated, false)
  t.same(r.body.failures.map((f: { line: number, code: string }) => [f.line, f.code]), [
    [2, 'invalid_json'], [3, 'not_an_object'], [4, 'not_an_object'],
    [5, 'invalid_field'], [6, 'invalid_field'], [7, 'invalid_field'], [8, 'invalid_field'], [9, 'invalid_field'],
    [10, 'invalid_field'], [11, 'invalid_field'], [12, 'ts_out_of_range'], [13, 'ts_out_of_range'], [16, 'invalid_utf8'],
  ])
  t.match(r.body.failures.find((f: { line: number }) => f.line === 5).message, /status/)
  t.match(r.body.failures.find((f: { line: number }) => f.line === 9).message, /host/)
  t.equal(r.body.bytes, body.length)
  t.type(r.body.request_id, 'string')
  t.same((await storedEvents(tgt)).map((e) => e.path).sort(), ['/ok-1', '/ok-2'])
})

t.test('mixed formats with nested JSON land in the right columns', async (t) => {
  const tgt = await target('mixed')
  const now = Date.now()
  const lines = [
    JSON.stringify({ host: 'web-1', path: '/a', status: 200, ts: now - 1000, rt: 0.25, bytes: 512, method: 'GET', src: '10.0.0.1', user_agent: 'curl/8', region: 'eu', tags: ['x'] }),
    JSON.stringify({ log: 'plain text line', filename: '/var/log/app.log' }),
    JSON.stringify({ log: JSON.stringify({ host: 'api-2', path: '/b', status: 503, rt: 1.5, ts: now - 2000, user: 'u1' }), filename: '/var/log/api.log', kubernetes: { pod: 'p1' } }),
    JSON.stringify({ log: JSON.stringify({ status: 'oops', path: '/c', ts: now - 3000 }) }),
  ]
  const r = await postIngest(tgt, lines.join('\n'))
  t.equal(r.status, 200)
  t.match(r.body, { ingested: 4, failed: 0, failures: [] })
  const rows = await storedEvents(tgt)
  const byPath = (p: string | null) => rows.find((e) => e.path === p)!

  const f1 = byPath('/a')
  t.match(f1, { host: 'web-1', status: 200, ts: now - 1000, rt: 0.25, bytes: 512, method: 'GET', src: '10.0.0.1', user_agent: 'curl/8', message: null, filename: null })
  t.same(JSON.parse(f1.attrs), { region: 'eu', tags: ['x'] })
  t.equal(f1.size, Buffer.byteLength(lines[0]), 'size is the line\'s bytes')

  const nested = byPath('/b')
  t.match(nested, { host: 'api-2', status: 503, rt: 1.5, ts: now - 2000, filename: '/var/log/api.log' })
  t.equal(nested.message, lines[2] && JSON.parse(lines[2]).log, 'message keeps the whole log string')
  t.same(JSON.parse(nested.attrs), { user: 'u1', kubernetes: { pod: 'p1' } }, 'nested keys that are not fields are kept in attrs too (issue 15)')

  const wrongNested = byPath('/c')
  t.equal(wrongNested.status, null, 'a nested field of the wrong type is not a column...')
  t.equal(JSON.parse(wrongNested.attrs).status, 'oops', '...but kept in attrs')

  const plain = rows.find((e) => e.message === 'plain text line')!
  t.match(plain, { host: null, path: null, status: null, filename: '/var/log/app.log' })
  t.ok(plain.ts >= plain.received_at - 1 && plain.ts <= Date.now(), 'ts defaults to the receive time')
  t.equal(plain.ts, plain.received_at)
})

t.test('ts forms: ms, s, µs, ns, RFC 3339', async (t) => {
  const tgt = await target('times')
  const ms = Date.now() - 60_000
  const lines = [
    { path: '/ms', ts: ms },
    { path: '/s', ts: ms / 1000 },
    { path: '/us', ts: ms * 1000 },
    { path: '/ns', ts: ms * 1_000_000 },
    { path: '/rfc', ts: new Date(ms).toISOString() },
  ].map((x) => JSON.stringify(x)).join('\n')
  const r = await postIngest(tgt, lines)
  t.match(r.body, { ingested: 5, failed: 0 })
  for (const e of await storedEvents(tgt)) t.equal(e.ts, ms, `${e.path} → ${ms}`)
})

t.test('retention bounds ts: older than the stream keeps fails', async (t) => {
  const tgt = await target('short', 1)
  const r = await postIngest(tgt, [
    JSON.stringify({ path: '/old', ts: Date.now() - 2 * 86_400_000 }),
    JSON.stringify({ path: '/recent', ts: Date.now() - 3_600_000 }),
  ].join('\n'))
  t.equal(r.body.ingested, 1)
  t.same(r.body.failures.map((f: { code: string, line: number }) => [f.line, f.code]), [[1, 'ts_out_of_range']])
})

t.test('a time out of range under an alias of ts does not fit: the line is stored at arrival, the value kept in attrs (explore34 F10, F15)', async (t) => {
  const tgt = await target('aliasrange')
  const old = new Date(Date.now() - 40 * 86_400_000).toISOString()
  const r = await postIngest(tgt, [
    { message: 'u1', '@timestamp': old },
    { message: 'u2', date: 20241129153000 }, // a business date in digits
    { message: 'u3', ts: old },
  ].map((l) => JSON.stringify(l)).join('\n'))
  t.same(r.body.failures.map((f: { code: string, line: number }) => [f.line, f.code]), [[3, 'ts_out_of_range']], 'only ts itself is enforced')
  const events = await storedEvents(tgt)
  const by = (m: string) => events.find((e) => e.message === m)!
  t.same(JSON.parse(by('u1').attrs), { '@timestamp': old })
  t.same(JSON.parse(by('u2').attrs), { date: 20241129153000 })
  t.ok(Math.abs(by('u1').ts - Date.now()) < 60_000, 'stored at the time the request arrived')
})

t.test('__proto__ and constructor are plain data in attrs', async (t) => {
  const tgt = await target('proto')
  const r = await postIngest(tgt, '{"path":"/p","__proto__":{"polluted":true},"constructor":{"prototype":{"bad":1}}}\n')
  t.equal(r.body.ingested, 1)
  t.equal(({} as Record<string, unknown>).polluted, undefined, 'no prototype was touched')
  const [e] = await storedEvents(tgt)
  const attrs = JSON.parse(e.attrs)
  t.same(Object.keys(attrs).sort(), ['__proto__', 'constructor'])
  // eslint-disable-next-line no-proto -- an attribute named __proto__ stays data
  t.same(attrs.__proto__, { polluted: true })
})

t.test('every line failed: 422 all_lines_failed with the failures', async (t) => {
  const tgt = await target('allbad')
  const r = await postIngest(tgt, 'nope\n{"status":1000}\n')
  t.equal(r.status, 422)
  t.equal(r.body.error, 'all_lines_failed')
  t.match(r.body, { ingested: 0, failed: 2, failures_truncated: false })
  t.same(r.body.failures.map((f: { line: number }) => f.line), [1, 2])
  t.equal((await storedEvents(tgt)).length, 0)
})

t.test('at most 100 failures are listed, in line order', async (t) => {
  const tgt = await target('many')
  const lines = Array.from({ length: 250 }, (_, i) => (i % 2 === 0 ? 'bad' : `{"path":"/${i}"}`))
  const r = await postIngest(tgt, lines.join('\n'))
  t.equal(r.status, 200)
  t.match(r.body, { ingested: 125, failed: 125, failures_truncated: true })
  t.equal(r.body.failures.length, 100)
  t.same(r.body.failures.map((f: { line: number }) => f.line), Array.from({ length: 100 }, (_, i) => 1 + 2 * i))
})

t.test('trace and span ids in hex are stored in lowercase, as OTLP\'s are; q finds them in any case', async (t) => {
  const tgt = await target('ids')
  const upper = '4BF92F3577B34DA6A3CE929D0E0E4736'
  const lines = [
    JSON.stringify({ message: 'plain', trace_id: upper, span_id: '00F067AA0BA902B7' }),
    // An escape sends the line through the unescaping path; a nested log through the reference path.
    '{"message":"escaped","traceId":"4BF92F3577B34DA6A3CE929D0E0E\\u0034736"}',
    JSON.stringify({ log: JSON.stringify({ message: 'nested', 'trace.id': upper }) }),
    JSON.stringify({ message: 'not hex', trace_id: 'Trace-XYZ', span_id: 'ABCG' }),
  ]
  const r = await postIngest(tgt, lines.join('\n'))
  t.equal(r.status, 200)
  const rows = await storedEvents(tgt)
  const by = (m: string) => rows.find((e) => e.message === m || e.message?.includes(m))!
  t.equal(by('plain').trace_id, upper.toLowerCase())
  t.equal(by('plain').span_id, '00f067aa0ba902b7')
  t.equal(by('escaped').trace_id, upper.toLowerCase(), 'after unescaping')
  t.equal(by('nested').trace_id, upper.toLowerCase(), 'through the reference path')
  t.equal(by('not hex').trace_id, 'Trace-XYZ', 'an id that is not hex is kept as sent')
  t.equal(by('not hex').span_id, 'ABCG')
  for (const q of [`trace_id:${upper}`, `trace_id:${upper.toLowerCase()}`, `trace_id:${upper.slice(0, 8)}*`]) {
    const found = await s.api('GET', `/api/streams/${tgt.stream}/events?from=now-1h&q=${encodeURIComponent(q)}`)
    t.equal(found.body.events.length, 3, `${q} finds the three`)
  }
  const kept = await s.api('GET', `/api/streams/${tgt.stream}/events?from=now-1h&q=${encodeURIComponent('trace_id:Trace-XYZ')}`)
  t.equal(kept.body.events.length, 1)
})
