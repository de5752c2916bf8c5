// Loki push through a real server and ClickHouse: the real clients pino-loki (JSON) and
// winston-loki (protobuf + snappy, and JSON), then hand-built bodies (labels, structured metadata,
// gzip, refusals). Each test reads back what was stored.
import t from 'tap'
import { gzipSync } from 'node:zlib'
import { request } from 'undici'
import pino from 'pino'
import pinoLoki from 'pino-loki'
import winston from 'winston'
import LokiTransport from 'winston-loki'
import snappy from 'snappy'
import { startServer } from '../helpers/server.ts'
import type { TestServer } from '../helpers/server.ts'
import { waitFor } from '../helpers/wait-for.ts'
import { createIngestTarget, storedEvents } from '../helpers/ingest.ts'
import type { IngestTarget, StoredEvent } from '../helpers/ingest.ts'
import { PushRequest } from '../../lib/inputs/loki/loki-proto.ts'
import { lineObject, parseLabels } from '../../lib/inputs/loki/loki-events.ts'
import { openSse } from '../helpers/sse.ts'

let s: TestServer
t.before(async () => { s = await startServer(t) })

function attrsOf (e: StoredEvent): Record<string, unknown> {
  return JSON.parse(e.attrs)
}

/** The stream's events once there are `n` of them (clients push in the background); at most 10 s. */
async function eventsWhenStored (tgt: IngestTarget, n: number): Promise<StoredEvent[]> {
  return await waitFor(() => storedEvents(tgt), { what: `${n} events stored`, until: (events) => events.length >= n, intervalMs: 50 })
}

async function push (path: string, body: Buffer | string, headers: Record<string, string>) {
  const res = await request(`${s.url}${path}`, { method: 'POST', headers, body })
  const text = await res.body.text()
  return { status: res.statusCode, headers: res.headers, body: text === '' ? null : JSON.parse(text) }
}

t.test('pino with pino-loki (JSON push, Bearer token)', async (t) => {
  const tgt = await createIngestTarget(s, 'pino-loki')
  const errors: unknown[] = []
  const transport = pinoLoki({
    host: s.url,
    batching: { interval: 60 },
    labels: { app: 'shop', service_name: 'shop-api' },
    headers: { authorization: `Bearer ${tgt.token}` },
    structuredMetaKey: 'meta',
  })
  transport.on('error', (err: unknown) => { errors.push(err) })
  const logger = pino({ base: { hostname: 'web-3' } }, transport)
  logger.info({ meta: { trace_id: 'abc123' } }, 'order placed')
  logger.warn('stock low')
  logger.error({ code: 'E9' }, 'payment failed')
  transport.end() // flushes the batch
  const events = await eventsWhenStored(tgt, 3)
  t.same(errors, [])
  t.equal(events.length, 3)
  const byMsg = new Map(events.map((e) => [JSON.parse(e.message!).msg as string, e]))
  t.same([...byMsg.keys()].sort(), ['order placed', 'payment failed', 'stock low'])
  const placed = byMsg.get('order placed')!
  t.equal(placed.host, 'web-3', 'the hostname label fills host')
  t.equal(JSON.parse(placed.message!).level, 30, 'the line is stored as sent: pino\'s JSON')
  const attrs = attrsOf(placed)
  t.equal(placed.level, 'info', 'the level label fills the level column')
  t.equal(attrs.level, undefined)
  t.equal(attrs.app, 'shop')
  t.equal(placed.service, 'shop-api', 'the service_name label fills service')
  t.equal(attrs.service_name, undefined)
  t.equal(placed.trace_id, 'abc123', 'structured metadata trace_id fills its column')
  t.equal(byMsg.get('stock low')!.level, 'warn', 'Loki\'s "warning" is normalised')
  t.equal(byMsg.get('payment failed')!.level, 'error')
  t.equal(placed.ts, JSON.parse(placed.message!).time, 'ts from the entry\'s ns timestamp, in ms')
  // The line is pino's JSON: its keys are attributes too (labels win; msg and the level a label
  // gave are the line's own).
  const failed = attrsOf(byMsg.get('payment failed')!)
  t.equal(failed.code, 'E9', 'a key of the JSON line is an attribute')
  t.equal(failed.msg, undefined, 'the message is not stored twice')
  t.equal(failed.level, undefined)
  const found = await s.api('GET', `/api/streams/${tgt.stream}/events?from=now-1h&q=${encodeURIComponent('code:E9')}`)
  t.same(found.body.events.map((e: { message: string }) => JSON.parse(e.message).msg), ['payment failed'], 'found by it')
})

for (const json of [false, true]) {
  t.test(`winston with winston-loki (${json ? 'JSON' : 'protobuf + snappy'}, Basic auth)`, async (t) => {
    const tgt = await createIngestTarget(s, json ? 'winston-json' : 'winston-proto')
    const errors: unknown[] = []
    const transport = new LokiTransport({
      host: s.url,
      basicAuth: `shipper:${tgt.token}`,
      labels: { job: 'billing', host: 'app-2', filename: '/var/log/billing.log' },
      json,
      batching: false,
      replaceTimestamp: false,
      onConnectionError: (err: unknown) => { errors.push(err) },
    })
    const logger = winston.createLogger({ level: 'debug', transports: [transport] })
    const at = Date.now() - 5000
    logger.info('invoice sent', { timestamp: new Date(at).toISOString() })
    logger.debug('cache miss', { timestamp: new Date(at + 1).toISOString() })
    logger.error('charge declined', { timestamp: new Date(at + 2).toISOString(), order_id: 'o-7', amount: 12.5, user: { id: 45 }, paid: false })
    const events = await eventsWhenStored(tgt, 3)
    t.same(errors, [])
    t.equal(events.length, 3)
    // winston-loki appends the meta it was given (here the timestamp) as JSON to the line.
    t.same(events.map((e) => e.message!.split(' ').slice(0, 2).join(' ')), ['invoice sent', 'cache miss', 'charge declined'])
    t.same(events.map((e) => e.ts), [at, at + 1, at + 2], 'ts from the entry timestamp')
    t.same(events.map((e) => e.host), ['app-2', 'app-2', 'app-2'])
    t.same(events.map((e) => e.filename), ['/var/log/billing.log', '/var/log/billing.log', '/var/log/billing.log'])
    t.same(events.map((e) => e.level), ['info', 'debug', 'error'])
    t.equal(attrsOf(events[0]).job, 'billing')
    // The meta: structured metadata in JSON mode; in protobuf mode only the line's JSON tail
    // (`charge declined {...}`), read as attributes too.
    t.equal(events[2].message!.split(' {')[0], 'charge declined')
    const found = await s.api('GET', `/api/streams/${tgt.stream}/events?from=now-1h&q=${encodeURIComponent('order_id:o-7 amount:>12')}`)
    t.equal(found.status, 200)
    t.same(found.body.events.map((e: { message: string }) => e.message.split(' {')[0]), ['charge declined'], 'winston\'s meta is findable as attributes')
    // JSON mode sends the meta as structured metadata too, in text (`user` as `{"id":45}`): the
    // line's typed values stand (explore32 F1), as in protobuf mode.
    const declined = attrsOf(events[2])
    t.same([declined.amount, declined.user, declined.paid, declined.order_id], [12.5, { id: 45 }, false, 'o-7'], 'the meta as sent')
    const nested = await s.api('GET', `/api/streams/${tgt.stream}/events?from=now-1h&q=${encodeURIComponent('user.id:45 paid:false')}`)
    t.equal(nested.body.events.length, 1, 'a nested key of the meta found by its dotted path')
  })
}

t.test('winston-loki with useWinstonMetaAsLabels: a meta value 0 or false is a label as its text, every entry stored once (explore32 F3)', async (t) => {
  const tgt = await createIngestTarget(s, 'winston-labels')
  const errors: unknown[] = []
  const transport = new LokiTransport({
    host: s.url,
    basicAuth: `shipper:${tgt.token}`,
    labels: { job: 'billing' },
    json: true,
    useWinstonMetaAsLabels: true,
    batching: false,
    onConnectionError: (err: unknown) => { errors.push(err) },
  })
  const logger = winston.createLogger({ level: 'info', transports: [transport] })
  logger.info('entry a', { n: 1, flag: true })
  logger.info('entry b', { n: 0, flag: false })
  logger.info('entry c', { n: 2 })
  const events = await eventsWhenStored(tgt, 3)
  t.same(errors, [], 'no entry refused')
  t.same(events.map((e) => e.message!.split(' ').slice(0, 2).join(' ')).sort(), ['entry a', 'entry b', 'entry c'])
  const found = await s.api('GET', `/api/streams/${tgt.stream}/events?from=now-1h&q=${encodeURIComponent('n:0 flag:false')}`)
  t.same(found.body.events.map((e: StoredEvent) => e.message!.split(' ').slice(0, 2).join(' ')), ['entry b'], 'found by its labels')
})

t.test('Loki JSON: label and metadata values that are numbers or booleans are their text; an object is refused', async (t) => {
  const tgt = await createIngestTarget(s, 'loki-typed-labels')
  const ns = `${Date.now() - 1000}000000`
  const body = {
    streams: [
      { stream: { job: 'x', n: 0, ok: false, gone: null }, values: [[ns, 'typed labels', { attempt: 3, retried: true }]] },
      { stream: { job: 'x', nested: { a: 1 } }, values: [[ns, 'object label']] },
      { stream: { job: 'x' }, values: [[ns, 'object metadata', { m: [1] }]] },
    ],
  }
  const r = await push('/loki/api/v1/push', Buffer.from(JSON.stringify(body)), { authorization: `Bearer ${tgt.token}`, 'content-type': 'application/json' })
  t.equal(r.status, 400, 'the entries with an object refused, the other stored')
  t.equal(r.body.error, 'entries_rejected')
  t.equal(r.body.ingested, 1)
  const [stored] = await eventsWhenStored(tgt, 1)
  t.same(attrsOf(stored), { job: 'x', n: '0', ok: 'false', attempt: '3', retried: 'true' }, 'as text; a null label is none')
})

t.test('Loki JSON: of two names of one column the first named wins in any order; a line\'s nested service.name fills service (explore34 F3, F4)', async (t) => {
  const tgt = await createIngestTarget(s, 'loki-column-names')
  const ns = `${Date.now() - 1000}000000`
  const body = {
    streams: [
      { stream: { level: 'error', detected_level: 'unknown', case: 'c1' }, values: [[ns, 'c1 line']] },
      { stream: { detected_level: 'warn', level: 'error', case: 'c2' }, values: [[ns, 'c2 line']] },
      { stream: { level: 'error', case: 'c3' }, values: [[ns, 'c3 line', { detected_level: 'info' }]] },
      { stream: { service_name: 'svc-a', service: 'svc-b', case: 'c4' }, values: [[ns, 'c4 line']] },
      { stream: { detected_level: 'unknown', case: 'c5' }, values: [[ns, 'c5 line']] },
      { stream: { case: 'c6' }, values: [[ns, JSON.stringify({ msg: 'c6 line', service: { name: 'svc-nested', version: '2' }, host: { name: 'h-6' } })]] },
      { stream: { case: 'c7' }, values: [[ns, JSON.stringify({ msg: 'c7 line', service: { name: 'svc-obj' }, service_name: 'svc-str' })]] },
    ],
  }
  const r = await push('/loki/api/v1/push', Buffer.from(JSON.stringify(body)), { authorization: `Bearer ${tgt.token}`, 'content-type': 'application/json' })
  t.equal(r.status, 204)
  const events = await eventsWhenStored(tgt, 7)
  const byCase = new Map(events.map((e) => [String(attrsOf(e).case), e]))
  const c = (name: string): StoredEvent => byCase.get(name)!
  t.equal(c('c1').level, 'error', 'detected_level unknown is no level')
  t.match(attrsOf(c('c1')), { detected_level: 'unknown' })
  t.equal(c('c2').level, 'error', 'level wins over detected_level sent before it')
  t.match(attrsOf(c('c2')), { detected_level: 'warn' })
  t.equal(c('c3').level, 'error', 'a level label wins over detected_level metadata')
  t.match(attrsOf(c('c3')), { detected_level: 'info' })
  t.equal(c('c4').service, 'svc-a', 'service_name wins over service')
  t.match(attrsOf(c('c4')), { service: 'svc-b' })
  t.equal(c('c5').level, null)
  t.equal(c('c6').service, 'svc-nested', 'the line\'s {"service":{"name":..}} as NDJSON reads it')
  t.equal(c('c6').host, 'h-6')
  t.match(attrsOf(c('c6')), { service: { version: '2' } })
  t.equal(c('c7').service, 'svc-str')
  t.match(attrsOf(c('c7')), { service: { name: 'svc-obj' } }, 'the object that gave way stays in attrs')
  const found = await s.api('GET', `/api/streams/loki-column-names/events?from=now-1h&q=${encodeURIComponent('level:error')}`)
  t.same(found.body.events.map((e: { attrs: { case: string } }) => e.attrs.case).sort(), ['c1', 'c2', 'c3'])
  const nested = await s.api('GET', `/api/streams/loki-column-names/events?from=now-1h&q=${encodeURIComponent('service:svc-nested')}`)
  t.equal(nested.body.events.length, 1)
})

t.test('hand-built protobuf + snappy: labels, escapes, structured metadata, ns timestamps', async (t) => {
  const tgt = await createIngestTarget(s, 'loki-pb')
  const seconds = Math.floor(Date.now() / 1000) - 60
  const message = PushRequest.fromObject({
    streams: [{
      labels: '{job="nginx", detected_level="ERROR", path="/var/x", quote="a\\"b"}',
      entries: [
        { timestamp: { seconds, nanos: 123_456_789 }, line: '{"status":502,"path":"/api"}', structuredMetadata: [{ name: 'trace_id', value: 't-1' }, { name: 'job', value: 'override' }] },
        { timestamp: { seconds: seconds + 1, nanos: 0 }, line: 'plain text' },
      ],
    }, {
      labels: 'not labels',
      entries: [{ timestamp: { seconds, nanos: 0 }, line: 'lost' }],
    }],
  })
  const body = snappy.compressSync(Buffer.from(PushRequest.encode(message).finish()))
  const r = await push('/loki/api/v1/push', body, { authorization: `Bearer ${tgt.token}`, 'content-type': 'application/x-protobuf' })
  t.equal(r.status, 400, 'an entry failed: 400 as Loki answers, the others stored')
  t.equal(r.body.error, 'entries_rejected')
  t.match(r.body.message, /^1 entry rejected \(entry 3: invalid_field: /)
  t.equal(r.body.ingested, 2)
  t.same(r.body.failures.map((f: { line: number, code: string }) => [f.line, f.code]), [[3, 'invalid_field']])
  const events = await storedEvents(tgt)
  t.equal(events.length, 2)
  const [first, second] = events
  t.equal(first.message, '{"status":502,"path":"/api"}', 'a JSON line is the message as sent')
  t.equal(first.ts, seconds * 1000 + 123, 'ns timestamp rounded to ms')
  // The line is kept as sent; its JSON keys are attributes too, never the columns they are named
  // like (reads name them `attrs.status`), and the labels win.
  t.equal(first.status, null)
  t.equal(first.path, null)
  const attrs = attrsOf(first)
  t.equal(attrs.status, 502, 'the JSON line\'s key in attrs')
  t.equal(first.level, 'error')
  t.equal(attrs.job, 'override', 'structured metadata wins over a label')
  t.equal(first.trace_id, 't-1')
  t.equal(attrs.path, '/var/x', 'a label named like an event field is kept in attrs under its name (attrs.path in reads)')
  const found = await s.api('GET', `/api/streams/${tgt.stream}/events?from=now-1h&q=${encodeURIComponent('attrs.path:"/var/x"')}`)
  t.equal(found.status, 200)
  t.same(found.body.events.map((e: { message: string }) => e.message), ['plain text', '{"status":502,"path":"/api"}'], 'attrs.path finds both entries, newest first')
  const column = await s.api('GET', `/api/streams/${tgt.stream}/events?from=now-1h&q=${encodeURIComponent('path:"/var/x"')}`)
  t.same(column.body.events, [], 'the path column holds no label')
  t.equal(attrs.quote, 'a"b')
  t.equal(second.message, 'plain text')
  t.equal(attrsOf(second).job, 'nginx')
})

t.test('gzip\'d JSON on /api/loki/api/v1/push: 204, nothing in the body', async (t) => {
  const tgt = await createIngestTarget(s, 'loki-gzip')
  const ns = `${Date.now() - 1000}000000`
  const body = gzipSync(JSON.stringify({ streams: [{ stream: { hostname: 'h1', level: 'warn' }, values: [[ns, 'disk 91% full', { mount: '/data' }]] }] }))
  const r = await push('/api/loki/api/v1/push', body, { authorization: `Bearer ${tgt.token}`, 'content-type': 'application/json', 'content-encoding': 'gzip' })
  t.equal(r.status, 204)
  t.equal(r.body, null)
  const [e] = await storedEvents(tgt)
  t.equal(e.message, 'disk 91% full')
  t.equal(e.host, 'h1')
  t.equal(e.ts, Number(ns.slice(0, -6)))
  t.equal(e.level, 'warn')
  t.same(attrsOf(e), { mount: '/data' })
})

t.test('refusals: bad bodies, bad entries, content type, token', async (t) => {
  const tgt = await createIngestTarget(s, 'loki-refusals')
  const auth = { authorization: `Bearer ${tgt.token}` }
  const json = { ...auth, 'content-type': 'application/json' }
  t.equal((await push('/loki/api/v1/push', '{"streams":', json)).body.error, 'undecodable_body')
  t.equal((await push('/loki/api/v1/push', '{"stream":[]}', json)).body.error, 'undecodable_body')
  t.equal((await push('/loki/api/v1/push', '', json)).body.error, 'undecodable_body')
  const notSnappy = await push('/loki/api/v1/push', Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff]), { ...auth, 'content-type': 'application/x-protobuf' })
  t.equal(notSnappy.status, 400)
  t.equal(notSnappy.body.error, 'undecodable_body')
  // A snappy block declaring more than ingest.maxDecodedBytes is refused before it is expanded.
  const huge = Buffer.from([0x80, 0x80, 0x80, 0x80, 0x08, 0x00]) // declares 2^31 bytes
  const tooBig = await push('/loki/api/v1/push', huge, { ...auth, 'content-type': 'application/x-protobuf' })
  t.equal(tooBig.status, 413)
  t.equal(tooBig.body.error, 'payload_too_large')
  const ns = `${Date.now()}000000`
  const all = await push('/loki/api/v1/push', JSON.stringify({ streams: [{ stream: { a: 'b' }, values: [[ns, 7], ['yesterday', 'x'], [ns]] }] }), json)
  t.equal(all.status, 400)
  t.equal(all.body.error, 'entries_rejected')
  t.equal(all.body.ingested, 0)
  t.equal(all.body.failed, 3)
  const text = await push('/loki/api/v1/push', 'x', { ...auth, 'content-type': 'text/plain' })
  t.equal(text.body.error, 'unsupported_content_type')
  t.equal((await push('/loki/api/v1/push', '{}', { 'content-type': 'application/json' })).status, 401)
  t.same(await storedEvents(tgt), [], 'nothing of the refused pushes is stored')
})

t.test('parseLabels reads Prometheus label text', async (t) => {
  t.same(parseLabels('{}'), [])
  t.same(parseLabels('{a="1",b="x\\\\y\\n"}'), [['a', '1'], ['b', 'x\\y\n']])
  t.same(parseLabels(' { a = "1" , } '), [['a', '1']])
  t.equal(parseLabels('{a=1}'), null)
  t.equal(parseLabels('{a="1" b="2"}'), null)
  t.equal(parseLabels('a="1"'), null)
})

t.test('pushed entries reach the live tail, filtered like any event', async (t) => {
  const tgt = await createIngestTarget(s, 'loki-live')
  const tail = await openSse(s.url, '/api/streams/loki-live/tail?q=' + encodeURIComponent('host:edge-1'), s.adminToken)
  t.teardown(() => tail.close())
  t.equal(tail.status, 200)
  const ns = `${Date.now()}000000`
  const r = await push('/loki/api/v1/push', JSON.stringify({
    streams: [
      { stream: { host: 'edge-1' }, values: [[ns, 'for the tail']] },
      { stream: { host: 'edge-2' }, values: [[ns, 'filtered out']] },
    ]
  }), { authorization: `Bearer ${tgt.token}`, 'content-type': 'application/json' })
  t.equal(r.status, 204)
  const frame = await tail.next((f) => f.event === 'event')
  const event = JSON.parse(frame.data)
  t.equal(event.message, 'for the tail')
  t.equal(event.host, 'edge-1')
  t.notOk(tail.frames.some((f) => f.event === 'event' && f.data.includes('filtered out')))
})

t.test('lineObject: the JSON object a line holds, whole or as its tail', async (t) => {
  t.same(lineObject('{"a":1,"b":{"c":"x"}}'), { a: 1, b: { c: 'x' } }, 'a JSON line')
  t.same(lineObject('  {"a":1}  \n'), { a: 1 }, 'blanks around it')
  t.same(lineObject('charge declined {"order":{"id":"o-7"}}'), { order: { id: 'o-7' } }, 'winston-loki: message, space, meta')
  t.same(lineObject('saw {x} then {"a":"b {c}"}'), { a: 'b {c}' }, 'a brace in the message and in a value')
  t.equal(JSON.stringify(lineObject('big {"n":12345678901234567890}')!.n), '12345678901234567890', 'a long integer keeps its digits')
  t.equal(lineObject('plain text'), null)
  t.equal(lineObject('[1,2]'), null, 'an array is no object')
  t.equal(lineObject('text {not json}'), null)
  t.equal(lineObject('ends with a brace }'), null)
  t.equal(lineObject(''), null)
  t.equal(lineObject('x {"a":' + '['.repeat(70) + ']'.repeat(70) + '}'), null, 'deeper than attrs may hold: text only')
  t.same(lineObject('a {"s":"{x {x {x {x"}'), { s: '{x {x {x {x' }, 'the 4th tail')
  t.equal(lineObject('a {"s":"{x {x {x {x {x"}'), null, 'at most 4 tails are tried')
})

t.test('a JSON line that cannot be attributes is stored as text, never refused', async (t) => {
  const tgt = await createIngestTarget(s, 'loki-json-lines')
  const ns = String(BigInt(Date.now() - 1000) * 1_000_000n)
  const deep = '{"a":' + '['.repeat(80) + ']'.repeat(80) + '}'
  const lines = [deep, '{"status":"not a status","ts":"yesterday","log":{"x":1},"message":{"m":1},"trace_id":"ABCDEF0123456789abcdef0123456789"}', 'ok {"__proto__":{"p":1},"constructor":2}']
  const body = JSON.stringify({ streams: [{ stream: { job: 'j' }, values: lines.map((line, i) => [String(BigInt(ns) + BigInt(i) * 1_000_000n), line]) }] })
  const r = await push('/loki/api/v1/push', body, { authorization: `Bearer ${tgt.token}`, 'content-type': 'application/json' })
  t.equal(r.status, 204)
  const events = await storedEvents(tgt)
  t.same(events.map((e) => e.message), lines, 'every line stored as sent')
  t.same(attrsOf(events[0]), { job: 'j' }, 'too deep: text only')
  const second = attrsOf(events[1])
  t.equal(second.status, 'not a status', 'a field-named key in attrs, never failing the entry')
  t.equal(second.ts, 'yesterday')
  t.same(second.log, { x: 1 })
  t.same(second.message, { m: 1 })
  t.equal(events[1].trace_id, 'abcdef0123456789abcdef0123456789', 'trace_id fills its column')
  t.equal(events[1].ts, Number(BigInt(ns) / 1_000_000n) + 1, 'ts from the entry')
  const third = attrsOf(events[2])
  t.same(Object.getOwnPropertyDescriptor(third, '__proto__')?.value, { p: 1 }, 'a __proto__ key is data')
  t.equal(third.constructor, 2)
})
