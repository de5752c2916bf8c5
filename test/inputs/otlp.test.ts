// OTLP/HTTP logs through a real server and ClickHouse: the OpenTelemetry JS SDK with its real
// exporters (protobuf and JSON, gzip'd), then hand-built bodies for what the SDK does not send
// (partial success, undecodable bodies, hex/base64 ids, nested values). Each test reads back
// what was stored.
import t from 'tap'
import type { Test } from 'tap'
import { gzipSync } from 'node:zlib'
import { request } from 'undici'
import { ROOT_CONTEXT, trace, TraceFlags } from '@opentelemetry/api'
import { SeverityNumber } from '@opentelemetry/api-logs'
import { LoggerProvider, SimpleLogRecordProcessor } from '@opentelemetry/sdk-logs'
import type { LogRecordExporter, ReadableLogRecord } from '@opentelemetry/sdk-logs'
import { resourceFromAttributes } from '@opentelemetry/resources'
import { OTLPLogExporter as HttpJsonExporter } from '@opentelemetry/exporter-logs-otlp-http'
import { OTLPLogExporter as ProtoExporter } from '@opentelemetry/exporter-logs-otlp-proto'
import { startServer } from '../helpers/server.ts'
import type { TestServer } from '../helpers/server.ts'
import { createIngestTarget, storedEvents } from '../helpers/ingest.ts'
import type { StoredEvent } from '../helpers/ingest.ts'
import { ExportLogsServiceRequest, ExportLogsServiceResponse } from '../../lib/inputs/otlp/otlp-proto.ts'

let s: TestServer
t.before(async () => { s = await startServer(t) })

const traceId = '5b8efff798038103d269b633813fc60c'
const spanId = 'eee19b7ec3c1b174'

function attrsOf (e: StoredEvent): Record<string, unknown> {
  return JSON.parse(e.attrs)
}

/** Wraps an exporter to record the result code of each export (0 SUCCESS, 1 FAILED). */
function recording (exporter: LogRecordExporter): { exporter: LogRecordExporter, results: number[] } {
  const results: number[] = []
  return {
    results,
    exporter: {
      export (logs: ReadableLogRecord[], done) {
        exporter.export(logs, (r) => { results.push(r.code); done(r) })
      },
      shutdown: () => exporter.shutdown(),
      forceFlush: () => exporter.forceFlush?.() ?? Promise.resolve(),
    },
  }
}

async function sendWithSdk (exporter: LogRecordExporter): Promise<void> {
  const provider = new LoggerProvider({
    resource: resourceFromAttributes({ 'service.name': 'checkout', 'host.name': 'web-7', 'deployment.environment': 'prod' }),
    processors: [new SimpleLogRecordProcessor({ exporter })],
  })
  const logger = provider.getLogger('checkout-logger', '1.2.3')
  const context = trace.setSpanContext(ROOT_CONTEXT, { traceId, spanId, traceFlags: TraceFlags.SAMPLED })
  const now = Date.now()
  logger.emit({ body: 'payment accepted', severityNumber: SeverityNumber.INFO, severityText: 'INFO', timestamp: now - 2000, context, attributes: { 'order.id': 'o-17', 'http.response.status_code': 201, 'http.request.method': 'POST', 'url.path': '/pay' } })
  logger.emit({ body: 'card declined', severityNumber: SeverityNumber.WARN2, timestamp: now - 1000, attributes: { attempt: 2 } })
  logger.emit({ body: { code: 'E42', detail: ['a', 1] }, severityText: 'ERROR', timestamp: now })
  await provider.forceFlush()
  await provider.shutdown()
}

function checkSdkEvents (t: Test, events: StoredEvent[]): void {
  t.same(events.map((e) => e.message), ['payment accepted', 'card declined', '{"code":"E42","detail":["a",1]}'])
  t.same(events.map((e) => e.host), ['web-7', 'web-7', 'web-7'])
  const [first, second, third] = events.map(attrsOf)
  t.same(events.map((e) => e.level), ['info', 'warn', 'error'], 'severity in the level column')
  t.same([first.level, second.level, third.level], [undefined, undefined, undefined], 'and not in attrs')
  t.equal(events[0].trace_id, traceId, 'traceId in the trace_id column')
  t.equal(events[0].span_id, spanId)
  t.equal(events[1].trace_id, null)
  t.equal(first.trace_id, undefined, 'and not in attrs')
  t.same(events.map((e) => e.service), ['checkout', 'checkout', 'checkout'], 'resource service.name in the service column')
  t.equal(first['service.name'], undefined)
  t.equal(first['deployment.environment'], 'prod')
  t.equal(first['order.id'], 'o-17')
  t.equal(second.attempt, 2)
  t.equal(third.code, 'E42', 'a kvlist body\'s keys are attributes too')
  t.same(third.detail, ['a', 1])
  t.equal(first['scope.name'], 'checkout-logger')
  t.equal(events[0].status, 201)
  t.equal(events[0].method, 'POST')
  t.equal(events[0].path, '/pay')
  t.equal(first['http.response.status_code'], undefined, 'a mapped attribute fills its column instead of attrs')
  t.ok(events[1].ts - events[0].ts >= 900 && events[1].ts - events[0].ts <= 1100, 'ts from timeUnixNano, in ms')
}

t.test('the OpenTelemetry SDK with the protobuf exporter, gzip', async (t) => {
  const tgt = await createIngestTarget(s, 'otel-proto')
  const { exporter, results } = recording(new ProtoExporter({ url: `${s.url}/v1/logs`, headers: { authorization: `Bearer ${tgt.token}` }, compression: 'gzip' as never, timeoutMillis: 60_000 }))
  await sendWithSdk(exporter)
  t.ok(results.length > 0 && results.every((r) => r === 0), 'every export succeeded')
  const events = await storedEvents(tgt)
  t.equal(events.length, 3)
  checkSdkEvents(t, events)
})

t.test('the OpenTelemetry SDK with the JSON exporter, on /api/otlp/v1/logs', async (t) => {
  const tgt = await createIngestTarget(s, 'otel-json')
  const { exporter, results } = recording(new HttpJsonExporter({ url: `${s.url}/api/otlp/v1/logs`, headers: { authorization: `Bearer ${tgt.token}` }, timeoutMillis: 60_000 }))
  await sendWithSdk(exporter)
  t.ok(results.length > 0 && results.every((r) => r === 0), 'every export succeeded')
  const events = await storedEvents(tgt)
  t.equal(events.length, 3)
  checkSdkEvents(t, events)
})

async function post (path: string, body: Buffer | string, headers: Record<string, string>) {
  const res = await request(`${s.url}${path}`, { method: 'POST', headers, body })
  const bytes = Buffer.from(await res.body.arrayBuffer())
  return { status: res.statusCode, headers: res.headers, bytes }
}

function json (bytes: Buffer): any {
  return JSON.parse(bytes.toString('utf8'))
}

t.test('OTLP/JSON: partial success names the rejected records; the rest is stored', async (t) => {
  const tgt = await createIngestTarget(s, 'otel-partial')
  const ns = BigInt(Date.now()) * 1_000_000n
  const request = {
    resourceLogs: [{
      resource: { attributes: [{ key: 'service.name', value: { stringValue: 'api' } }] },
      scopeLogs: [{
        logRecords: [
          { timeUnixNano: String(ns), severityNumber: 17, body: { stringValue: 'ok one' }, traceId: traceId.toUpperCase() },
          { timeUnixNano: 'yesterday', body: { stringValue: 'bad time' } },
          { timeUnixNano: '1000000000000', body: { stringValue: 'from 1970' } },
          { observedTimeUnixNano: Number(ns / 1_000_000n) * 1e6, severityText: 'Fatal', body: { intValue: '42' } },
        ],
      }],
    }],
  }
  const r = await post('/v1/logs', JSON.stringify(request), { authorization: `Bearer ${tgt.token}`, 'content-type': 'application/json' })
  t.equal(r.status, 200)
  t.match(r.headers['content-type'], /application\/json/)
  const body = json(r.bytes)
  t.equal(body.partialSuccess.rejectedLogRecords, '2')
  t.match(body.partialSuccess.errorMessage, /log record 2: invalid_field/)
  t.match(body.partialSuccess.errorMessage, /log record 3: /)
  const events = await storedEvents(tgt)
  t.same(events.map((e) => e.message).sort(), ['42', 'ok one'])
  const ok = events.find((e) => e.message === 'ok one')!
  t.equal(ok.level, 'error')
  t.equal(ok.trace_id, traceId, 'hex ids are stored lowercase')
  t.equal(events.find((e) => e.message === '42')!.level, 'fatal')
})

t.test('OTLP/JSON: an int64 past 2^53 written as a JSON number keeps its digits, as one written as a string', async (t) => {
  const tgt = await createIngestTarget(s, 'otel-int64')
  const ns = String(BigInt(Date.now()) * 1_000_000n)
  // JSON.stringify cannot write such a number from JS: the digits go in as text.
  const text = JSON.stringify({
    resourceLogs: [{
      scopeLogs: [{
        logRecords: [{
          timeUnixNano: 'NS', body: { stringValue: 'numbers' },
          attributes: [
            { key: 'big', value: { intValue: 'BIG' } }, { key: 'text', value: { intValue: '9007199254740995' } },
            { key: 'negative', value: { intValue: 'NEG' } }, { key: 'double', value: { doubleValue: 'DOUBLE' } },
          ],
        }],
      }],
    }],
  }).replace('"NS"', ns).replace('"BIG"', '9007199254740993').replace('"NEG"', '-9007199254740993').replace('"DOUBLE"', '12345678901234567')
  const r = await post('/v1/logs', text, { authorization: `Bearer ${tgt.token}`, 'content-type': 'application/json' })
  t.equal(r.status, 200)
  const [e] = await storedEvents(tgt)
  t.equal(e.ts, Number((BigInt(ns) + 500_000n) / 1_000_000n), 'timeUnixNano as a 19-digit JSON number')
  t.match(e.attrs, /"big":9007199254740993[,}]/, 'a number past 2^53: its digits')
  t.match(e.attrs, /"text":9007199254740995[,}]/, 'a string: its digits')
  t.match(e.attrs, /"negative":-9007199254740993[,}]/)
  t.equal(attrsOf(e).double, 12345678901234568, 'a doubleValue is a double')
  const found = await s.api('GET', `/api/streams/otel-int64/events?from=now-1h&q=${encodeURIComponent('big:9007199254740993')}`)
  t.equal(found.body.events.length, 1, 'q finds it by its digits')
})

t.test('protobuf: a full success is an empty ExportLogsServiceResponse; a partial one counts the rejected', async (t) => {
  const tgt = await createIngestTarget(s, 'otel-pb')
  const ns = String(BigInt(Date.now()) * 1_000_000n)
  const message = ExportLogsServiceRequest.fromObject({
    resourceLogs: [{
      resource: { attributes: [{ key: 'host.name', value: { stringValue: 'db-1' } }, { key: 'message', value: { stringValue: 'clash' } }] },
      scopeLogs: [{
        scope: { name: 'hand' },
        logRecords: [{
          timeUnixNano: ns, severityNumber: 5, body: { kvlistValue: { values: [{ key: 'k', value: { arrayValue: { values: [{ boolValue: true }, { doubleValue: 1.5 }] } } }] } },
          traceId: Buffer.from(traceId, 'hex'), spanId: Buffer.from(spanId, 'hex'),
          attributes: [{ key: '__proto__', value: { stringValue: 'plain key' } }, { key: 'big', value: { intValue: '9007199254740993' } }],
        }],
      }],
    }],
  })
  const bytes = Buffer.from(ExportLogsServiceRequest.encode(message).finish())
  const r = await post('/v1/logs', bytes, { authorization: `Bearer ${tgt.token}`, 'content-type': 'application/x-protobuf' })
  t.equal(r.status, 200)
  t.equal(r.headers['content-type'], 'application/x-protobuf')
  t.equal(r.bytes.length, 0, 'full success: an empty response message')
  const [e] = await storedEvents(tgt)
  t.equal(e.host, 'db-1')
  t.equal(e.message, '{"k":[true,1.5]}')
  const attrs = attrsOf(e)
  t.equal(e.level, 'debug')
  t.equal(e.trace_id, traceId)
  t.equal(e.span_id, spanId)
  t.equal(attrs.message, 'clash', 'an attribute named like an event field is kept in attrs under its key (attrs.message in reads)')
  t.same(attrs.k, [true, 1.5], 'the kvlist body\'s key')
  t.match(e.attrs, /"big":9007199254740993[,}]/, 'an int64 beyond 2^53 keeps its digits, a number as in an NDJSON line')
  t.ok(Object.hasOwn(attrs, '__proto__'))

  const bad = ExportLogsServiceRequest.encode(ExportLogsServiceRequest.fromObject({
    resourceLogs: [{ scopeLogs: [{ logRecords: [{ timeUnixNano: '1000000000', body: { stringValue: 'old' } }, { body: { stringValue: 'now' } }] }] }],
  })).finish()
  const p = await post('/v1/logs', gzipSync(bad), { authorization: `Bearer ${tgt.token}`, 'content-type': 'application/x-protobuf', 'content-encoding': 'gzip' })
  t.equal(p.status, 200)
  const answer = ExportLogsServiceResponse.toObject(ExportLogsServiceResponse.decode(p.bytes), { longs: Number }) as any
  t.equal(answer.partialSuccess.rejectedLogRecords, 1)
  t.match(answer.partialSuccess.errorMessage, /log record 1: ts_out_of_range/)
  const now = (await storedEvents(tgt)).find((e) => e.message === 'now')!
  t.ok(Math.abs(now.ts - Date.now()) < 60_000, 'no timestamp at all: the receive time')
})

t.test('an attribute `host` (Fluent Bit\'s record key) fills host; host.name wins over it; a non-string stays in attrs', async (t) => {
  const tgt = await createIngestTarget(s, 'otel-host')
  const ns = String(BigInt(Date.now()) * 1_000_000n)
  const record = (body: string, attributes: Array<{ key: string, value: unknown }>) => ({ timeUnixNano: ns, body: { stringValue: body }, attributes })
  const body = {
    resourceLogs: [{
      resource: { attributes: [{ key: 'host', value: { stringValue: 'from-resource' } }] },
      scopeLogs: [{
        logRecords: [
          record('plain', [{ key: 'host', value: { stringValue: 'web-3' } }]),
          record('both', [{ key: 'host', value: { stringValue: 'web-3' } }, { key: 'host.name', value: { stringValue: 'named' } }]),
          record('resource', []),
          record('number', [{ key: 'host', value: { intValue: '7' } }]),
        ],
      }],
    }, {
      resource: { attributes: [{ key: 'host.name', value: { stringValue: 'res-named' } }] },
      scopeLogs: [{ logRecords: [{ ...record('resource named', [{ key: 'host', value: { stringValue: 'rec-host' } }]), severityNumber: 25 }] }],
    }],
  }
  const r = await post('/v1/logs', JSON.stringify(body), { authorization: `Bearer ${tgt.token}`, 'content-type': 'application/json' })
  t.equal(r.status, 200)
  const events = await storedEvents(tgt)
  const by = (m: string) => events.find((e) => e.message === m)!
  t.equal(by('plain').host, 'web-3')
  t.equal(attrsOf(by('plain')).host, 'from-resource', 'the record\'s used; the resource\'s unused one kept')
  t.equal(by('both').host, 'named', 'host.name first')
  t.equal(attrsOf(by('both')).host, 'web-3')
  t.equal(by('resource').host, 'from-resource', 'a resource attribute host, when the record has none')
  t.equal(by('number').host, 'from-resource')
  t.equal(attrsOf(by('number')).host, 7, 'a record host that is no string stays in attrs')
  t.equal(by('resource named').host, 'res-named', 'a resource host.name wins over a record host (docs/api.md 9.1)')
  t.equal(attrsOf(by('resource named')).host, 'rec-host')
  t.equal(by('resource named').level, null, 'a severity number past 24 is no level...')
  t.equal(attrsOf(by('resource named')).severityNumber, 25, '...and is kept, as in an NDJSON line')
})

t.test('service.name, the record\'s else the resource\'s, fills service before a record attribute named service (explore34 F5)', async (t) => {
  const tgt = await createIngestTarget(s, 'otel-service')
  const ns = String(BigInt(Date.now()) * 1_000_000n)
  const record = (body: string, attributes: Array<{ key: string, value: unknown }>) => ({ timeUnixNano: ns, body: { stringValue: body }, attributes })
  const body = {
    resourceLogs: [{
      resource: { attributes: [{ key: 'service.name', value: { stringValue: 'res-svc' } }] },
      scopeLogs: [{
        logRecords: [
          record('called', [{ key: 'service', value: { stringValue: 'payments-api' } }]),
          record('own name', [{ key: 'service.name', value: { stringValue: 'rec-svc' } }, { key: 'service', value: { stringValue: 'payments-api' } }]),
          record('plain', []),
        ],
      }],
    }, {
      resource: { attributes: [] },
      scopeLogs: [{ logRecords: [record('no resource name', [{ key: 'service', value: { stringValue: 'payments-api' } }])] }],
    }, {
      // An SDK without a configured service.name sends its placeholder (explore34 F16).
      resource: { attributes: [{ key: 'service.name', value: { stringValue: 'unknown_service:node' } }] },
      scopeLogs: [{ logRecords: [record('placeholder', [{ key: 'service', value: { stringValue: 'checkout' } }]), record('placeholder alone', [])] }],
    }],
  }
  const r = await post('/v1/logs', JSON.stringify(body), { authorization: `Bearer ${tgt.token}`, 'content-type': 'application/json' })
  t.equal(r.status, 200)
  const events = await storedEvents(tgt)
  const by = (m: string) => events.find((e) => e.message === m)!
  t.equal(by('called').service, 'res-svc', 'the resource\'s service.name')
  t.equal(attrsOf(by('called')).service, 'payments-api', 'the attribute service kept')
  t.equal(by('own name').service, 'rec-svc', 'the record\'s service.name first')
  t.same(attrsOf(by('own name')), { service: 'payments-api', 'service.name': 'res-svc' })
  t.equal(by('plain').service, 'res-svc')
  t.equal(by('no resource name').service, 'payments-api', 'no service.name: the attribute service fills it')
  t.equal(by('placeholder').service, 'checkout', 'the SDK\'s unknown_service placeholder names no service')
  t.equal(by('placeholder alone').service, 'unknown_service:node', 'but it is the service when nothing else names one')
  const found = await s.api('GET', `/api/streams/otel-service/events?from=now-1h&q=${encodeURIComponent('service:res-svc')}`)
  t.same(found.body.events.map((e: { message: string }) => e.message).sort(), ['called', 'plain'])
})

t.test('an attribute named like an event field fills it when the record left it empty, as its aliases do (explore32 F2)', async (t) => {
  const tgt = await createIngestTarget(s, 'otel-fields')
  const ns = String(BigInt(Date.now()) * 1_000_000n)
  const text = (key: string, value: string) => ({ key, value: { stringValue: value } })
  const body = {
    resourceLogs: [{
      resource: { attributes: [text('service.name', 'billing'), text('trace_id', 'fromresource')] },
      scopeLogs: [{
        logRecords: [
          // No traceId, no severity, no body: the attributes fill them, as traceId, severity and msg would.
          { timeUnixNano: ns, attributes: [text('trace_id', 'ABCDEF0123456789ABCDEF0123456789'), text('span_id', '0123456789abcdef'), text('level', 'warning'), text('message', 'from attributes'), { key: 'status', value: { intValue: '502' } }] },
          { timeUnixNano: ns, attributes: [text('traceId', 'abcdef0123456789abcdef0123456789'), text('severity', 'warning'), text('msg', 'from aliases')] },
          // The record's own fields win; the attributes stay in attrs under their keys.
          { timeUnixNano: ns, traceId: 'feedfacefeedfacefeedfacefeedface', severityNumber: 17, body: { stringValue: 'own fields' }, attributes: [text('trace_id', 'other'), text('level', 'info'), text('message', 'not the body')] },
          // All-zero ids are the specification's invalid ones: no ids (explore32 F7).
          { timeUnixNano: ns, traceId: '0'.repeat(32), spanId: '0'.repeat(16), body: { stringValue: 'zero ids' } },
          // A value that does not fit its field stays in attrs, and the record is stored.
          { timeUnixNano: ns, body: { stringValue: 'bad values' }, attributes: [text('status', 'n/a'), { key: 'rt', value: { stringValue: 'slow' } }, { key: 'path', value: { intValue: '3' } }] },
        ],
      }],
    }],
  }
  const r = await post('/v1/logs', JSON.stringify(body), { authorization: `Bearer ${tgt.token}`, 'content-type': 'application/json' })
  t.equal(r.status, 200)
  t.same(json(r.bytes), {}, 'every record stored')
  const events = await storedEvents(tgt)
  const by = (m: string) => events.find((e) => e.message === m)!
  const filled = by('from attributes')
  t.same([filled.trace_id, filled.span_id, filled.level, filled.status], ['abcdef0123456789abcdef0123456789', '0123456789abcdef', 'warn', 502], 'the fields filled, ids in lowercase')
  t.same(attrsOf(filled), {}, 'nothing left over: the resource\'s trace_id gives way to the record\'s')
  const aliased = by('from aliases')
  t.same([aliased.trace_id, aliased.level], [filled.trace_id, 'warn'], 'the same as the aliases give')
  const own = by('own fields')
  t.same([own.trace_id, own.level], ['feedfacefeedfacefeedfacefeedface', 'error'])
  t.same(attrsOf(own), { trace_id: 'other', level: 'info', message: 'not the body' }, 'the record\'s fields win; the attributes kept')
  t.same([by('zero ids').trace_id, by('zero ids').span_id], ['fromresource', null], 'zero ids are none (the resource\'s trace_id then fills it)')
  const bad = by('bad values')
  t.same([bad.status, bad.rt, bad.path, bad.trace_id], [null, null, null, 'fromresource'])
  t.same(attrsOf(bad), { status: 'n/a', rt: 'slow', path: 3 }, 'kept in attrs under their keys')
  const found = await s.api('GET', `/api/streams/${tgt.stream}/events?from=now-1h&q=${encodeURIComponent('trace_id:ABCDEF0123456789ABCDEF0123456789')}`)
  t.same(found.body.events.map((e: StoredEvent) => e.message).sort(), ['from aliases', 'from attributes'], 'trace_id: finds both')
})

t.test('refusals: undecodable bodies, content types, tokens', async (t) => {
  const tgt = await createIngestTarget(s, 'otel-refusals')
  const auth = { authorization: `Bearer ${tgt.token}` }
  const garbage = await post('/v1/logs', Buffer.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x01]), { ...auth, 'content-type': 'application/x-protobuf' })
  t.equal(garbage.status, 400)
  t.equal(json(garbage.bytes).error, 'undecodable_body')
  const notJson = await post('/v1/logs', '{"resourceLogs": [', { ...auth, 'content-type': 'application/json' })
  t.equal(notJson.status, 400)
  t.equal(json(notJson.bytes).error, 'undecodable_body')
  const wrongShape = await post('/v1/logs', '{"resourceLogs": 7}', { ...auth, 'content-type': 'application/json' })
  t.equal(json(wrongShape.bytes).error, 'undecodable_body')
  const ndjson = await post('/v1/logs', '{}', { ...auth, 'content-type': 'application/x-ndjson' })
  t.equal(ndjson.status, 400)
  t.equal(json(ndjson.bytes).error, 'unsupported_content_type')
  const none = await post('/v1/logs', '{}', { 'content-type': 'application/json' })
  t.equal(none.status, 401)
  const pat = await post('/v1/logs', '{}', { authorization: `Bearer ${s.adminToken}`, 'content-type': 'application/json' })
  t.equal(json(pat.bytes).error, 'wrong_token_kind')
  // Basic with the token as the password (the Collector's basicauth extension).
  const basic = await post('/v1/logs', JSON.stringify({ resourceLogs: [{ scopeLogs: [{ logRecords: [{ body: { stringValue: 'via basic' } }] }] }] }),
    { authorization: 'Basic ' + Buffer.from(`otel:${tgt.token}`).toString('base64'), 'content-type': 'application/json; charset=utf-8' })
  t.equal(basic.status, 200)
  t.same(json(basic.bytes), {})
  t.same((await storedEvents(tgt)).map((e) => e.message), ['via basic'], 'nothing of the refused requests is stored')
})

t.test('a body over the decoded limit is 413 and stores nothing', async (t) => {
  const tgt = await createIngestTarget(s, 'otel-limit')
  const big = JSON.stringify({ resourceLogs: [{ scopeLogs: [{ logRecords: [{ body: { stringValue: 'x'.repeat(s.config.ingest.maxDecodedBytes) } }] }] }] })
  const r = await post('/v1/logs', gzipSync(big), { authorization: `Bearer ${tgt.token}`, 'content-type': 'application/json', 'content-encoding': 'gzip' })
  t.equal(r.status, 413)
  t.equal(json(r.bytes).error, 'payload_too_large')
  t.same(await storedEvents(tgt), [])
})

// explore27d M3, L1, L3: OTLP held values to 63 levels in JSON where NDJSON takes 64, protobuf
// refused the whole body at about 32 kvlist levels, and dropped an attribute with an empty key.
t.test('depth: 64 levels stored and 65 fail their record alone, in OTLP/JSON and protobuf, attributes and body', async (t) => {
  const kvlist = (levels: number): unknown => {
    let value: unknown = { stringValue: 'bottom' }
    for (let i = 0; i < levels; i++) value = { kvlistValue: { values: [{ key: 'x', value }] } }
    return value
  }
  const array = (levels: number): unknown => {
    let value: unknown = { intValue: '7' }
    for (let i = 0; i < levels; i++) value = { arrayValue: { values: [value] } }
    return value
  }
  const record = (name: string, extra: Record<string, unknown>): unknown => ({
    ...extra, attributes: [{ key: 'case', value: { stringValue: name } }, ...(extra.attributes as unknown[] ?? [])],
  })
  const records = [
    record('attr64', { attributes: [{ key: 'deep', value: kvlist(64) }] }),
    record('attr65', { attributes: [{ key: 'deep', value: kvlist(65) }] }),
    record('array64', { attributes: [{ key: 'deep', value: array(64) }] }),
    record('array100', { attributes: [{ key: 'deep', value: array(100) }] }),
    record('body64', { body: { kvlistValue: { values: [{ key: 'deep', value: kvlist(64) }] } } }),
    record('body65', { body: { kvlistValue: { values: [{ key: 'deep', value: kvlist(65) }] } } }),
    record('empty-key', { attributes: [{ key: '', value: { stringValue: 'unnamed' } }] }),
  ]
  const request = { resourceLogs: [{ scopeLogs: [{ logRecords: records }] }] }
  // The same nesting as NDJSON keeps it: {"deep": 64 objects deep}.
  let ndjson: unknown = 'bottom'
  for (let i = 0; i < 64; i++) ndjson = { x: ndjson }
  for (const [encoding, body, type] of [
    ['json', JSON.stringify(request), 'application/json'],
    ['protobuf', Buffer.from(ExportLogsServiceRequest.encode(ExportLogsServiceRequest.fromObject(request)).finish()), 'application/x-protobuf'],
  ] as const) {
    const tgt = await createIngestTarget(s, `otel-depth-${encoding}`)
    const r = await post('/v1/logs', body, { authorization: `Bearer ${tgt.token}`, 'content-type': type })
    t.equal(r.status, 200, encoding)
    const answer = type === 'application/json' ? json(r.bytes) : ExportLogsServiceResponse.toObject(ExportLogsServiceResponse.decode(r.bytes), { longs: Number })
    t.equal(Number(answer.partialSuccess.rejectedLogRecords), 3, `${encoding}: the three records past 64 levels`)
    t.match(answer.partialSuccess.errorMessage, /log record 2: too_deep/)
    const stored = new Map((await storedEvents(tgt)).map((e) => [attrsOf(e).case, attrsOf(e)]))
    t.same([...stored.keys()].sort(), ['array64', 'attr64', 'body64', 'empty-key'], `${encoding}: the others are stored`)
    t.same(stored.get('attr64')!.deep, ndjson, `${encoding}: an attribute 64 levels deep, as NDJSON keeps it`)
    t.same(stored.get('body64')!.deep, ndjson, `${encoding}: a structured body's key, 64 levels deep`)
    t.equal(stored.get('empty-key')![''], 'unnamed', `${encoding}: an attribute with an empty key is kept`)
  }
})

t.test('hostile nesting: a deep AnyValue fails its record, a protobuf deeper than the decoder\'s limit is a 400', async (t) => {
  const tgt = await createIngestTarget(s, 'otel-deep')
  let deep: unknown = { stringValue: 'bottom' }
  for (let i = 0; i < 100; i++) deep = { arrayValue: { values: [deep] } }
  const body = JSON.stringify({ resourceLogs: [{ scopeLogs: [{ logRecords: [{ body: deep }, { body: { stringValue: 'shallow' } }] }] }] })
  const r = await post('/v1/logs', body, { authorization: `Bearer ${tgt.token}`, 'content-type': 'application/json' })
  t.equal(r.status, 200)
  t.match(json(r.bytes).partialSuccess.errorMessage, /log record 1: too_deep/)
  t.same((await storedEvents(tgt)).map((e) => e.message), ['shallow'])

  // A body 300 000 AnyValue levels deep (AnyValue.arrayValue -> ArrayValue.values -> AnyValue ...),
  // written back to front so that each level's length prefix is known. protobufjs decodes
  // recursively and stops at its nesting limit: the body is refused, the workers live on.
  const levels = 300_000
  const out = Buffer.alloc(levels * 10 + 64)
  let at = out.length
  const prefix = (field: number, length: number): void => {
    const bytes: number[] = [(field << 3) | 2]
    let n = length
    while (n > 127) { bytes.push((n & 127) | 128); n = Math.floor(n / 128) }
    bytes.push(n)
    at -= bytes.length
    Buffer.from(bytes).copy(out, at)
  }
  out[--at] = 0x00; out[--at] = 0x0a // the innermost AnyValue: stringValue ''
  for (let i = 0; i < levels; i++) {
    prefix(1, out.length - at) // ArrayValue.values
    prefix(5, out.length - at) // AnyValue.arrayValue
  }
  prefix(5, out.length - at) // LogRecord.body
  prefix(2, out.length - at) // ScopeLogs.logRecords
  prefix(2, out.length - at) // ResourceLogs.scopeLogs
  prefix(1, out.length - at) // ExportLogsServiceRequest.resourceLogs
  const deepProto = await post('/v1/logs', out.subarray(at), { authorization: `Bearer ${tgt.token}`, 'content-type': 'application/x-protobuf' })
  t.equal(deepProto.status, 400)
  t.equal(json(deepProto.bytes).error, 'undecodable_body')
  t.match(json(deepProto.bytes).message, /depth/, 'refused for its depth, not its shape')
  const after = await post('/v1/logs', JSON.stringify({ resourceLogs: [{ scopeLogs: [{ logRecords: [{ body: { stringValue: 'after' } }] }] }] }),
    { authorization: `Bearer ${tgt.token}`, 'content-type': 'application/json' })
  t.equal(after.status, 200, 'the workers still parse')
  t.same((await storedEvents(tgt)).map((e) => e.message).sort(), ['after', 'shallow'])
})
