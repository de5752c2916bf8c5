// Real clients' attributes are findable (issue 22): records sent through the OpenTelemetry SDK's
// exporter, winston-loki and plain NDJSON are found again by service, by an attribute, by trace
// id, with OR and a regular expression, in /events, stats?by=, /fields, the tail and /export.
import t from 'tap'
import { ROOT_CONTEXT, trace, TraceFlags } from '@opentelemetry/api'
import { SeverityNumber } from '@opentelemetry/api-logs'
import { LoggerProvider, SimpleLogRecordProcessor } from '@opentelemetry/sdk-logs'
import { resourceFromAttributes } from '@opentelemetry/resources'
import { OTLPLogExporter } from '@opentelemetry/exporter-logs-otlp-proto'
import winston from 'winston'
import LokiTransport from 'winston-loki'
import { startServer } from '../helpers/server.ts'
import type { TestServer } from '../helpers/server.ts'
import { createIngestTarget, postIngest } from '../helpers/ingest.ts'
import type { IngestTarget } from '../helpers/ingest.ts'
import { openSse } from '../helpers/sse.ts'
import { waitFor } from '../helpers/wait-for.ts'

const traceId = '5b8efff798038103d269b633813fc60c'
const spanId = 'eee19b7ec3c1b174'

interface Event { id: string, message: string, service: string | null, trace_id: string | null, level: string | null, attrs: Record<string, unknown> }

let s: TestServer
let tgt: IngestTarget
const from = Date.now() - 60_000
const range = (): string => `from=${from}&to=${Date.now() + 60_000}`

async function sendOtel (body: string, attributes: Record<string, string | number>, severity: SeverityNumber): Promise<void> {
  const provider = new LoggerProvider({
    resource: resourceFromAttributes({ 'service.name': 'checkout', 'host.name': 'web-7' }),
    // A long export deadline: on a loaded CI machine the default 10 s once dropped a record.
    processors: [new SimpleLogRecordProcessor({ exporter: new OTLPLogExporter({ url: `${s.url}/v1/logs`, headers: { Authorization: `Bearer ${tgt.token}` }, timeoutMillis: 60_000 }) })],
  })
  const context = trace.setSpanContext(ROOT_CONTEXT, { traceId, spanId, traceFlags: TraceFlags.SAMPLED })
  provider.getLogger('payments').emit({ body, severityNumber: severity, attributes, context })
  await provider.forceFlush()
  await provider.shutdown()
  await waitFor(async () => (await s.api('GET', `/api/streams/app/events?${range()}&q=${encodeURIComponent(`"${body}"`)}`)).body.events.length > 0,
    { what: `the OTel record "${body}" stored` })
}

async function sendWinston (message: string): Promise<void> {
  const transport = new LokiTransport({
    host: s.url, basicAuth: `app:${tgt.token}`, labels: { job: 'billing', service_name: 'billing-api' }, json: true, interval: 0.1,
    format: winston.format.printf((info) => String(info.message)),
  })
  const logger = winston.createLogger({ level: 'info', transports: [transport] })
  logger.warn(message)
  await waitFor(async () => (await s.api('GET', `/api/streams/app/events?${range()}&q=${encodeURIComponent(`"${message}"`)}`)).body.events.length > 0,
    { what: 'the winston-loki record stored' })
  logger.close()
}

t.before(async () => {
  s = await startServer(t)
  tgt = await createIngestTarget(s, 'app')
  await sendOtel('payment declined', { user_id: 42, 'order.total': 129.5, region: 'eu' }, SeverityNumber.ERROR)
  await sendOtel('payment accepted', { user_id: 43, 'order.total': 12, region: 'us' }, SeverityNumber.INFO)
  await sendWinston('invoice 77 overdue')
  const r = await postIngest(tgt, [
    JSON.stringify({ msg: 'cart emptied', service: 'cart', user_id: 7, trace_id: 'abc123', level: 'info' }),
    JSON.stringify({ msg: 'cart viewed', service: 'cart', user: { id: 8 }, level: 'debug' }),
  ].join('\n'))
  if (r.status !== 200) throw new Error('setup: ' + JSON.stringify(r.body))
})

async function find (q: string): Promise<string[]> {
  const r = await s.api('GET', `/api/streams/app/events?${range()}&q=${encodeURIComponent(q)}`)
  if (r.status !== 200) throw new Error(`${q}: ${r.status} ${JSON.stringify(r.body)}`)
  return (r.body.events as Event[]).map((e) => e.message).sort()
}

t.test('/events: by service, attribute, trace id, OR, NOT and a regex', async (t) => {
  t.same(await find('service:checkout'), ['payment accepted', 'payment declined'])
  t.same(await find('service.name:checkout'), ['payment accepted', 'payment declined'], 'the OTel name of the field names it too')
  t.same(await find('service_name:billing-api'), ['invoice 77 overdue'], 'and Loki\'s')
  t.same(await find(`traceId:${traceId.toUpperCase()}`), ['payment accepted', 'payment declined'], 'traceId, in any case')
  t.same(await find('user_id:42'), ['payment declined'], 'an OTel record attribute')
  t.same(await find(`trace_id:${traceId}`), ['payment declined', 'payment accepted'].sort(), 'the OTel trace id')
  t.same(await find('level:error OR user_id:7'), ['cart emptied', 'payment declined'], 'OR across a column and an attribute')
  t.same(await find('service:cart -user.id:8'), ['cart emptied'], 'NOT on a nested attribute')
  t.same(await find('order.total:>100'), ['payment declined'], 'a numeric comparison on an attribute')
  t.same(await find('message:~"invoice [0-9]+ overdue"'), ['invoice 77 overdue'], 'a regex')
  t.same(await find('job:billing'), ['invoice 77 overdue'], 'a Loki label')
  t.same(await find('service:billing-api'), ['invoice 77 overdue'], 'Loki\'s service_name label is the service')
  t.same(await find('(service:checkout region:us) OR trace_id:abc123'), ['cart emptied', 'payment accepted'], 'parentheses')
})

t.test('stats?by= and /fields see the attributes', async (t) => {
  const stats = await s.api('GET', `/api/streams/app/stats?${range()}&by=service`)
  t.equal(stats.status, 200)
  t.same(stats.body.groups, [{ value: 'cart', count: 2 }, { value: 'checkout', count: 2 }, { value: 'billing-api', count: 1 }])
  const byRegion = await s.api('GET', `/api/streams/app/stats?${range()}&by=region&q=${encodeURIComponent('service:checkout')}`)
  t.same(byRegion.body.groups, [{ value: 'eu', count: 1 }, { value: 'us', count: 1 }])
  // An attribute equality (on 18.16 also the read's PREWHERE: filter-sql.ts valuesPrefilterSql),
  // alone and beside a column term, in the series and the groups.
  for (const q of ['region:eu', 'region:eu service:checkout', '(user_id:7 OR user_id:43) -level:debug']) {
    const byService = await s.api('GET', `/api/streams/app/stats?${range()}&by=service&sample=0&q=${encodeURIComponent(q)}`)
    t.equal(byService.status, 200, q)
    const expected = q.startsWith('region') ? [{ value: 'checkout', count: 1 }] : [{ value: 'cart', count: 1 }, { value: 'checkout', count: 1 }]
    t.same(byService.body.groups, expected, `${q}: groups`)
    t.equal((byService.body.series as Array<{ count: number }>).reduce((n, p) => n + p.count, 0), q.startsWith('region') ? 1 : 2, `${q}: series`)
  }
  const fields = await s.api('GET', `/api/streams/app/fields?${range()}`)
  const names = new Map((fields.body.fields as Array<{ name: string, kind: string, count: number }>).map((f) => [f.name, f]))
  t.match(names.get('user_id'), { kind: 'attribute', count: 3 })
  t.match(names.get('order.total'), { kind: 'attribute', count: 2 })
  t.match(names.get('job'), { kind: 'attribute', count: 1 })
  t.match(names.get('trace_id'), { kind: 'column', count: 3 })
  t.match(names.get('service'), { kind: 'column', count: 5 })
})

t.test('the tail filters by the same q', async (t) => {
  const tail = await openSse(s.url, `/api/streams/app/tail?q=${encodeURIComponent('user_id:42 OR job:billing OR message:~"^cart (emp|fil)"')}`, s.adminToken)
  t.teardown(() => tail.close())
  t.equal(tail.status, 200)
  await sendOtel('payment declined again', { user_id: 42 }, SeverityNumber.ERROR)
  await postIngest(tgt, [JSON.stringify({ msg: 'cart filled', service: 'cart' }), JSON.stringify({ msg: 'cart viewed', service: 'cart' })].join('\n'))
  const first = JSON.parse((await tail.next((f) => f.event === 'event')).data) as Event
  t.equal(first.message, 'payment declined again')
  t.equal(first.service, 'checkout')
  t.equal(first.trace_id, traceId)
  t.match(first.id, /^\d+-\d+$/)
  const second = JSON.parse((await tail.next((f) => f.event === 'event' && !f.data.includes('payment'))).data) as Event
  t.equal(second.message, 'cart filled', 'the regex matched, the other cart event did not')
  // next() takes the frames it returns: any event frame left is one the filter should have kept out
  // (the cart viewed event came in the same request as cart filled, so its frame would be here).
  t.equal(tail.frames.filter((f) => f.event === 'event').length, 0, 'no other event reached the tail')
})

t.test('export finds them too', async (t) => {
  const r = await fetch(`${s.url}/api/streams/app/export?${range()}&q=${encodeURIComponent('user_id:42 OR service:billing-api')}`, { headers: { authorization: `Bearer ${s.adminToken}` } })
  t.equal(r.status, 200)
  const events = (await r.text()).trim().split('\n').map((l) => JSON.parse(l) as Event)
  t.same(events.map((e) => e.message).sort(), ['invoice 77 overdue', 'payment declined', 'payment declined again'])
})

t.test('an integer past 2^53 is kept as sent, and found by its digits', async (t) => {
  // Snowflake-style ids: JSON.parse would store 9007199254740993 as ...992 (docs/api.md 6.4).
  const ids = await createIngestTarget(s, 'ids')
  const big = '9007199254740993'
  const lines = [
    `{"msg":"scanned","order_id":${big},"parts":[${big}1,2]}`, // the line scanner's path
    `{"msg":"reference","order_id": ${big},"parts":[ ${big}1,2],"ts":${BigInt(Date.now()) * 1_000_000n}}`, // whitespace in a container: the reference path; a ts in ns
    `{"log":"x","order_id":-${big}}`,
    `{"msg":"not a status","status":${big}}`, // a field still reads the number: out of range
  ]
  const r = await postIngest(ids, lines.join('\n'))
  t.equal(r.status, 200)
  t.equal(r.body.ingested, 3)
  t.match(r.body.failures, [{ line: 4, code: 'invalid_field' }])
  const bulk = await fetch(`${s.url}/api/elastic/_bulk`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ids.token}`, 'content-type': 'application/x-ndjson' },
    body: `{"index":{"_id":${big}}}\n{"message":"bulk","order_id":${big}}\n`,
  })
  t.equal(bulk.status, 200)
  t.match(await bulk.json(), { errors: false, items: [{ index: { status: 201 } }] }, 'a bulk action with an integer _id stores its document')

  const page = await fetch(`${s.url}/api/streams/ids/events?${range()}&q=${encodeURIComponent(`order_id:${big}`)}`, { headers: { authorization: `Bearer ${s.adminToken}` } })
  const text = await page.text()
  const found = (JSON.parse(text).events as Event[]).map((e) => e.message).sort()
  t.same(found, ['bulk', 'reference', 'scanned'], 'found by its exact digits')
  t.equal(text.split(`"order_id":${big}`).length - 1, 3, 'the events API writes the digits as sent')
  t.equal(text.split(`"parts":[${big}1,2]`).length - 1, 2, 'in an array too')
  t.same(await findIn('ids', `order_id:${big.slice(0, -1)}2`), [], 'the neighbouring integer is another value')
  t.same(await findIn('ids', `order_id:-${big}`), ['x'], 'a negative one, in a format-2 line')
  const stats = await s.api('GET', `/api/streams/ids/stats?${range()}&by=order_id`)
  t.same(stats.body.groups, [{ value: big, count: 3 }, { value: `-${big}`, count: 1 }])
  const exported = await fetch(`${s.url}/api/streams/ids/export?${range()}&q=${encodeURIComponent(`order_id:${big}`)}`, { headers: { authorization: `Bearer ${s.adminToken}` } })
  t.equal((await exported.text()).split(`"order_id":${big}`).length - 1, 3, 'export writes them as sent')
})

async function findIn (stream: string, q: string): Promise<string[]> {
  const r = await s.api('GET', `/api/streams/${stream}/events?${range()}&q=${encodeURIComponent(q)}`)
  if (r.status !== 200) throw new Error(`${q}: ${r.status} ${JSON.stringify(r.body)}`)
  return (r.body.events as Event[]).map((e) => e.message).sort()
}
