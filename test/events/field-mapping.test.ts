// Field mapping and levels (issue 15): every alias of the field table lands in its column, the
// seed's names win, a mapped value of the wrong type stays in attrs, numeric strings are
// numbers; level names and numbers are normalised. Unit tests on the reference path
// (lib/events/normalize.ts, which the line scanner must agree with: test/ingest/line-scanner.test.ts).
import t from 'tap'
import { eventFields } from '../../lib/events/fields.ts'
import { levelOf, levelNames, levelOfSeverityNumber } from '../../lib/events/level.ts'
import type { TimeBounds } from '../../lib/events/normalize.ts'
import { EventRejection } from '../../lib/events/rejection.ts'
import { normalizeToObject } from '../helpers/events.ts'
import type { EventObject } from '../helpers/events.ts'

const day = 86_400_000
const receivedAt = Date.UTC(2025, 10, 21, 12, 0, 0)
const bounds: TimeBounds = { receivedAt, minTs: receivedAt - 30 * day, maxTs: receivedAt + 2 * day }

function stored (line: unknown): EventObject {
  const result = normalizeToObject(line, bounds)
  if (result instanceof EventRejection) throw new Error(`rejected ${JSON.stringify(line)}: ${result.message}`)
  return result
}

/** A valid value for each field, as a shipper sends it, and as the column holds it. */
const samples: Record<string, [unknown, string | number]> = {
  ts: ['2025-11-21T11:00:00Z', Date.UTC(2025, 10, 21, 11)],
  host: ['web-1', 'web-1'],
  path: ['/x', '/x'],
  status: [503, 503],
  rt: [0.25, 0.25],
  bytes: [512, 512],
  method: ['POST', 'POST'],
  src: ['10.0.0.1', '10.0.0.1'],
  user_agent: ['curl/8', 'curl/8'],
  message: ['hello', 'hello'],
  filename: ['/var/log/a.log', '/var/log/a.log'],
  level: ['WARNING', 'warn'],
  service: ['checkout', 'checkout'],
  trace_id: ['5b8efff798038103d269b633813fc60c', '5b8efff798038103d269b633813fc60c'],
  span_id: ['eee19b7ec3c1b174', 'eee19b7ec3c1b174'],
}

/** `{"a.b.c": v}` as nested objects `{"a":{"b":{"c":v}}}`. */
function nestedAt (path: string, value: unknown): Record<string, unknown> {
  return path.split('.').reduceRight<Record<string, unknown>>((inner, segment, i, all) => i === all.length - 1 ? { [segment]: value } : { [segment]: inner }, {})
}

t.test('every alias fills its column, spelt as a key and (dotted) as nested objects', async (t) => {
  for (const field of eventFields) {
    const [value, column] = samples[field.name]
    for (const alias of field.aliases) {
      const sent = alias === 'severityNumber' || alias === 'severity_number' ? 13 : alias === 'priority' ? 'warning' : value
      const flat = stored({ [alias]: sent })
      t.equal(flat[field.name], column, `${alias} -> ${field.name}`)
      t.equal(flat.attrs, '{}', `${alias}: used, so not in attrs`)
      if (alias.includes('.')) {
        const nested = nestedAt(alias, sent)
        const row = stored(nested)
        t.equal(row[field.name], column, `${alias} as nested objects -> ${field.name}`)
        t.strictSame(JSON.parse(row.attrs as string), nested, 'the objects stay in attrs as sent')
      }
    }
  }
})

t.test('the seed wins; aliases in order; a mapped value of the wrong type stays in attrs', async (t) => {
  const row = stored({ host: 'seed', hostname: 'alias', msg: 'pino', message: 'first', time: 'not a time', timestamp: 1763722800 })
  t.equal(row.host, 'seed')
  t.equal(row.message, 'first', 'message before msg')
  t.equal(row.ts, 1763722800000, 'time does not fit: timestamp is next')
  t.strictSame(JSON.parse(row.attrs as string), { hostname: 'alias', msg: 'pino', time: 'not a time' }, 'unused and unfit aliases are kept')
  t.strictSame(stored({ log: 'from log', message: 'm' }), { ...stored({ log: 'from log' }), attrs: '{"message":"m"}' }, 'log first')
  const strict = normalizeToObject({ status: 'abc' }, bounds)
  t.ok(strict instanceof EventRejection && strict.code === 'invalid_field', 'a seed field of the wrong type still fails the line')
  t.equal(stored({ 'http.response.status_code': 'abc' }).attrs, '{"http.response.status_code":"abc"}', 'a mapped one goes to attrs')
  t.equal(stored({ 'http.response.status_code': true }).status, null)
})

t.test('service, trace_id and span_id never fail a line: a value that is no string stays in attrs', async (t) => {
  const row = stored({ service: 5, trace_id: { x: 1 }, span_id: true, message: 'm' })
  t.equal(row.service, null)
  t.equal(row.trace_id, null)
  t.strictSame(JSON.parse(row.attrs as string), { service: 5, trace_id: { x: 1 }, span_id: true })
  t.equal(stored({ service: { name: 'checkout' } }).service, 'checkout', 'ECS service.name nested under service')
  t.match(stored({ 'service.name': 'api', traceId: 'abc', spanId: 'def' }), { service: 'api', trace_id: 'abc', span_id: 'def', attrs: '{}' })
})

t.test('numeric strings are numbers for numeric fields', async (t) => {
  t.match(stored({ status: '200', rt: '0.012', bytes: '512', ts: '1763722800.5' }), { status: 200, rt: 0.012, bytes: 512, ts: 1763722800500, attrs: '{}' })
  t.match(stored({ status: '404', body_bytes_sent: '0', request_time: '1e-3' }), { status: 404, bytes: 0, rt: 0.001 })
  for (const bad of ['', ' 200', '200 ', '0x10', '2OO', '+200', '200.', '.5']) {
    const result = normalizeToObject({ status: bad }, bounds)
    t.ok(result instanceof EventRejection, `${JSON.stringify(bad)} is no number`)
  }
})

t.test('ECS: an object host or log is read, not failed; a string log is format 2', async (t) => {
  const ecs = stored({
    '@timestamp': '2025-11-21T11:00:00.123Z', message: 'GET /x', host: { name: 'web-9', ip: ['10.0.0.9'] },
    log: { level: 'error', file: { path: '/var/log/app.log' }, logger: 'app' },
    http: { request: { method: 'GET' }, response: { status_code: 500, body: { bytes: 42 } } },
    url: { path: '/x' }, source: { address: '10.1.2.3' }, user_agent: { original: 'curl/8' },
  })
  t.match(ecs, { ts: Date.UTC(2025, 10, 21, 11, 0, 0, 123), message: 'GET /x', host: 'web-9', level: 'error', filename: '/var/log/app.log', method: 'GET', status: 500, bytes: 42, path: '/x', src: '10.1.2.3', user_agent: 'curl/8' })
  t.strictSame(Object.keys(JSON.parse(ecs.attrs as string)), ['host', 'log', 'http', 'url', 'source', 'user_agent'], 'the objects are kept as sent')
  const docker = stored({ log: 'plain', time: '2025-11-21T11:00:00Z', stream: 'stdout' })
  t.match(docker, { message: 'plain', ts: Date.UTC(2025, 10, 21, 11), attrs: '{"stream":"stdout"}' }, 'Docker json-file: time is ts')
})

t.test('level: names, syslog and pino numbers, OpenTelemetry severity numbers', async (t) => {
  const cases: Array<[unknown, string | null]> = [
    ['trace', 'trace'], ['DEBUG', 'debug'], ['Info', 'info'], ['warn', 'warn'], ['warning', 'warn'], ['WARNING', 'warn'],
    ['error', 'error'], ['err', 'error'], ['fatal', 'fatal'], ['crit', 'fatal'], ['critical', 'fatal'], ['alert', 'fatal'],
    ['emerg', 'fatal'], ['panic', 'fatal'], ['notice', 'info'], ['informational', 'info'], ['verbose', 'debug'], ['silly', 'trace'],
    [' info', 'info'], ['info ', 'info'], [' Warning\n', 'warn'], [' ', null], // blanks around a name, as OTLP's severityText (explore32 F5)
    [10, 'trace'], [20, 'debug'], [30, 'info'], [35, 'info'], [40, 'warn'], [50, 'error'], [60, 'fatal'], [100, 'fatal'],
    [0, 'fatal'], [1, 'fatal'], [2, 'fatal'], [3, 'error'], [4, 'warn'], [5, 'info'], [6, 'info'], [7, 'debug'], ['30', 'info'], ['3', 'error'],
    [8, null], [9, null], [-1, null], [1.5, null], ['loud', null], ['', null], [true, null], [null, null],
  ]
  for (const [value, want] of cases) {
    const level = levelOf(value)
    t.equal(level < 0 ? null : levelNames[level], want, `${JSON.stringify(value)} -> ${want}`)
    if (value !== null) t.equal(stored({ level: value }).level, want, `stored: ${JSON.stringify(value)}`)
  }
  const otel: Array<[number, string]> = [[1, 'trace'], [4, 'trace'], [5, 'debug'], [9, 'info'], [12, 'info'], [13, 'warn'], [17, 'error'], [21, 'fatal'], [24, 'fatal']]
  for (const [n, want] of otel) {
    t.equal(levelNames[levelOfSeverityNumber(n)], want, `severityNumber ${n}`)
    t.equal(stored({ severityNumber: n }).level, want)
  }
  t.equal(levelOfSeverityNumber(0), -1)
  t.equal(levelOfSeverityNumber(25), -1)
  t.match(stored({ level: 'loud' }), { level: null, attrs: '{"level":"loud"}' }, 'no level: kept in attrs, the line stored')
  t.match(stored({ level: 'loud', severity: 'err' }), { level: 'error', attrs: '{"level":"loud"}' }, 'then the aliases')
  t.equal(stored({ levelname: 'WARNING' }).level, 'warn', 'Python logging')
  t.equal(stored({ log: JSON.stringify({ level: 50, msg: 'x' }) }).level, 'error', 'in a JSON log')
})

t.test('journald\'s fields (Fluent Bit\'s systemd input passes them on as they are): MESSAGE, PRIORITY, _HOSTNAME, __REALTIME_TIMESTAMP', async (t) => {
  const line = { MESSAGE: 'Started Session 7 of user root.', PRIORITY: '6', _HOSTNAME: 'node-3', __REALTIME_TIMESTAMP: '1763722800123456', SYSLOG_IDENTIFIER: 'systemd', _PID: '1' }
  t.match(stored(line), { message: 'Started Session 7 of user root.', level: 'info', host: 'node-3', ts: 1763722800123, attrs: '{"SYSLOG_IDENTIFIER":"systemd","_PID":"1"}' })
  t.match(stored({ ...line, PRIORITY: '3' }), { level: 'error' })
  t.match(stored({ ...line, PRIORITY: '30' }), { level: null }, 'a syslog severity only')
})

t.test('ECS host.hostname (what @elastic/ecs-pino-format writes for pino\'s hostname) fills host; host.name wins over it', async (t) => {
  t.match(stored({ message: 'a', host: { hostname: 'es-host' } }), { host: 'es-host', attrs: '{"host":{"hostname":"es-host"}}' })
  t.match(stored({ message: 'a', 'host.hostname': 'flat' }), { host: 'flat' })
  t.match(stored({ message: 'a', host: { name: 'named', hostname: 'es-host' } }), { host: 'named' })
})

t.test('rsyslog\'s default JSON (StdJSONFmt): fromhost, priority and timereported fill host, level and ts', async (t) => {
  // rsyslog 8.2302's template, verbatim in shape: priority is %syslogpriority-text%, a severity name.
  const line = { message: ' disk full', fromhost: 'web-7', facility: 'daemon', priority: 'crit', timereported: '2025-11-21T11:00:00.123456+01:00', timegenerated: '2025-11-21T10:00:01.5+00:00' }
  t.match(stored(line), { message: ' disk full', host: 'web-7', level: 'fatal', ts: Date.UTC(2025, 10, 21, 10, 0, 0, 123) })
  t.strictSame(JSON.parse(stored(line).attrs as string), { facility: 'daemon', timegenerated: '2025-11-21T10:00:01.5+00:00' })
  const names: Array<[string, string]> = [['emerg', 'fatal'], ['alert', 'fatal'], ['crit', 'fatal'], ['err', 'error'], ['warning', 'warn'], ['notice', 'info'], ['info', 'info'], ['debug', 'debug']]
  for (const [name, want] of names) t.equal(stored({ priority: name }).level, want, `priority ${name}`)
  // %syslogpriority% is the severity 0-7 (not the PRI): beyond 7 a priority is no level.
  const numbers: Array<[unknown, string | null]> = [[0, 'fatal'], [3, 'error'], [4, 'warn'], ['6', 'info'], [7, 'debug'], [8, null], [14, null], [30, null]]
  for (const [n, want] of numbers) t.equal(stored({ priority: n }).level, want, `priority ${JSON.stringify(n)}`)
  t.match(stored({ priority: 14 }), { level: null, attrs: '{"priority":14}' }, 'kept in attrs')
  t.match(stored({ severity: 'info', priority: 'crit' }), { level: 'info' }, 'severity before priority')
})
