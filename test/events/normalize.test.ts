// The reference path (lib/events/normalize.ts, formerly lib/ingest/event-schema.ts): one parsed
// line into an event row, read back as an object by field name.
import t from 'tap'
import { parseEventJson } from '../../lib/events/json-integers.ts'
import { maxValueDepth, nestsDeeperThan } from '../../lib/events/normalize.ts'
import type { TimeBounds } from '../../lib/events/normalize.ts'
import { EventRejection } from '../../lib/events/rejection.ts'
import { epochMsFromNumber, epochMsFromRfc3339 } from '../../lib/events/time.ts'
import { normalizeToObject } from '../helpers/events.ts'
import type { EventObject as EventRow } from '../helpers/events.ts'
import type { Test } from 'tap'

const day = 86_400_000
const receivedAt = Date.UTC(2025, 10, 21, 12, 0, 0) // 2025-11-21T12:00:00Z
const bounds: TimeBounds = { receivedAt, minTs: receivedAt - 30 * day, maxTs: receivedAt + 2 * day }

function normalize (json: string): EventRow | EventRejection {
  return normalizeToObject(parseEventJson(json), bounds)
}

function row (t: Test, json: string): EventRow {
  const result = normalize(json)
  if (result instanceof EventRejection) {
    t.fail(`rejected ${json}: ${result.code} ${result.message}`)
    throw new Error('rejected')
  }
  return result
}

function rejection (t: Test, json: string): EventRejection {
  const result = normalize(json)
  if (!(result instanceof EventRejection)) {
    t.fail(`accepted ${json}`)
    throw new Error('accepted')
  }
  return result
}

const emptyRow: EventRow = {
  ts: receivedAt,
  host: null,
  path: null,
  method: null,
  status: null,
  rt: null,
  bytes: null,
  src: null,
  user_agent: null,
  message: null,
  filename: null,
  level: null,
  service: null,
  trace_id: null,
  span_id: null,
  attrs: '{}',
}

t.test('format 1: every field into its column, nothing else in attrs', async (t) => {
  const ts = receivedAt - 5000
  t.strictSame(row(t, JSON.stringify({
    ts, host: 'web-1', path: '/api', method: 'GET', status: 200, rt: 0.25, bytes: 512, src: '10.0.0.1', user_agent: 'curl/8',
  })), {
    ts, host: 'web-1', path: '/api', method: 'GET', status: 200, rt: 0.25, bytes: 512, src: '10.0.0.1', user_agent: 'curl/8', message: null, filename: null, level: null, service: null, trace_id: null, span_id: null, attrs: '{}',
  })
  t.strictSame(row(t, '{}'), emptyRow, 'an empty object is an event with the receive time')
  t.strictSame(row(t, '{"host":"","status":100,"rt":0,"bytes":0}'), { ...emptyRow, host: '', status: 100, rt: 0, bytes: 0 }, 'empty strings and lower bounds')
  t.strictSame(row(t, '{"status":599,"rt":1e21,"bytes":9007199254740991,"status2":1}'), { ...emptyRow, status: 599, rt: 1e21, bytes: 2 ** 53 - 1, attrs: '{"status2":1}' }, 'upper bounds')
  t.equal(row(t, '{"status":200.0}').status, 200, '200.0 is the integer 200 in JSON')
  // Issue 15: in format 1, message comes from its aliases and filename is tried like one.
  t.strictSame(row(t, '{"message":"hi","filename":"/a.log"}'), { ...emptyRow, message: 'hi', filename: '/a.log' }, 'message and filename are mapped in format 1')
  t.equal(row(t, '{"message":1,"filename":2}').attrs, '{"message":1,"filename":2}', 'mapped keys of the wrong type stay in attrs')
})

t.test('format 1: a wrong type or range fails the line naming the field', async (t) => {
  const cases: [string, string][] = [
    ['{"host":1}', 'host must be a string'],
    ['{"path":["/"]}', 'path must be a string'],
    ['{"method":true}', 'method must be a string'],
    ['{"src":[]}', 'src must be a string'],
    ['{"user_agent":5}', 'user_agent must be a string'],
    ['{"status":"abc"}', 'status must be an integer 100-599'],
    ['{"status":" 200"}', 'status must be an integer 100-599'],
    ['{"status":99}', 'status must be an integer 100-599'],
    ['{"status":600}', 'status must be an integer 100-599'],
    ['{"status":200.5}', 'status must be an integer 100-599'],
    ['{"rt":-0.001}', 'rt must be a finite number >= 0 (seconds)'],
    ['{"rt":"0.1s"}', 'rt must be a finite number >= 0 (seconds)'],
    ['{"rt":1e999}', 'rt must be a finite number >= 0 (seconds)'],
    ['{"bytes":-1}', 'bytes must be an integer from 0 to 2^53-1'],
    ['{"bytes":1.5}', 'bytes must be an integer from 0 to 2^53-1'],
    ['{"bytes":9007199254740992}', 'bytes must be an integer from 0 to 2^53-1'],
    ['{"bytes":"10.5"}', 'bytes must be an integer from 0 to 2^53-1'],
    ['{"ts":true}', 'ts must be an RFC 3339 string or a number of epoch seconds, milliseconds, microseconds or nanoseconds'],
    ['{"ts":"yesterday"}', 'ts must be an RFC 3339 string or a number of epoch seconds, milliseconds, microseconds or nanoseconds'],
    ['{"ts":"2025-02-30T00:00:00Z"}', 'ts must be an RFC 3339 string or a number of epoch seconds, milliseconds, microseconds or nanoseconds'],
    ['{"ts":1e999}', 'ts must be an RFC 3339 string or a number of epoch seconds, milliseconds, microseconds or nanoseconds'],
  ]
  for (const [json, message] of cases) {
    t.strictSame({ ...rejection(t, json) }, { code: 'invalid_field', message }, json)
  }
  // Issue 15: numeric strings are numbers for numeric fields; objects under a seed key are ECS.
  t.strictSame(row(t, '{"status":"200","rt":"0.1","bytes":"10","ts":"1763726395"}'), { ...emptyRow, status: 200, rt: 0.1, bytes: 10, ts: 1763726395000 }, 'numeric strings')
  t.equal(row(t, '{"src":{}}').attrs, '{"src":{}}', 'an object under a seed key is kept in attrs')
  t.equal(rejection(t, '{"host":"a","status":"x","path":"/"}').message, 'status must be an integer 100-599', 'valid fields around do not help')
})

t.test('null for a field means absent; under another key it is data', async (t) => {
  t.strictSame(row(t, '{"ts":null,"host":null,"path":null,"method":null,"status":null,"rt":null,"bytes":null,"src":null,"user_agent":null}'), emptyRow)
  t.equal(row(t, '{"extra":null}').attrs, '{"extra":null}')
  t.strictSame(row(t, '{"log":"x","filename":null,"status":null}'), { ...emptyRow, message: 'x' }, 'format 2 too')
  t.equal(rejection(t, '{"log":null,"status":"x"}').code, 'invalid_field', 'a null log makes a format-1 line, strictly checked')
  t.strictSame(row(t, '{"log":null,"host":"a"}'), { ...emptyRow, host: 'a' })
})

t.test('not an object', async (t) => {
  for (const [json, message] of [
    ['[1,2]', 'a line must be a JSON object, not an array'],
    ['"text"', 'a line must be a JSON object, not a string'],
    ['42', 'a line must be a JSON object, not a number'],
    ['true', 'a line must be a JSON object, not a boolean'],
    ['null', 'a line must be a JSON object, not null'],
  ]) {
    t.strictSame({ ...rejection(t, json) }, { code: 'not_an_object', message }, json)
  }
})

t.test('ts: receive time, RFC 3339, and numbers by magnitude', async (t) => {
  const at = Date.UTC(2025, 10, 20, 8, 30, 15, 123) // a day before receivedAt
  const seconds = at / 1000
  const cases: [unknown, number, string][] = [
    ['2025-11-20T08:30:15.123Z', at, 'RFC 3339 UTC'],
    ['2025-11-20t08:30:15.123z', at, 'lower-case t and z'],
    ['2025-11-20 08:30:15.123Z', at, 'space separator'],
    ['2025-11-20T10:30:15.123+02:00', at, 'positive offset'],
    ['2025-11-20T03:00:15.123-05:30', at, 'negative offset'],
    ['2025-11-20T08:30:15.123456789Z', at, 'nanosecond fraction rounds to ms (down)'],
    ['2025-11-20T08:30:15.1225Z', at, 'fraction rounds half up'],
    ['2025-11-20T08:30:15Z', at - 123, 'no fraction'],
    [seconds, at, 'fractional seconds'],
    [Math.floor(seconds), at - 123, 'integer seconds'],
    [at, at, 'milliseconds'],
    [at * 1000 + 456, at, 'microseconds, rounded down'],
    [at * 1000 + 500, at + 1, 'microseconds, rounded half up'],
    [at * 1e6 + 999_999, at + 1, 'nanoseconds (beyond 2^53, to the nearest ms)'],
  ]
  for (const [ts, expected, name] of cases) t.equal(row(t, JSON.stringify({ ts })).ts, expected, name)
  t.equal(row(t, '{"host":"a"}').ts, receivedAt, 'absent: the receive time')
  t.equal(row(t, JSON.stringify({ ts: bounds.minTs })).ts, bounds.minTs, 'the oldest accepted ms is accepted')
  t.equal(row(t, JSON.stringify({ ts: bounds.maxTs })).ts, bounds.maxTs, 'the newest accepted ms is accepted')
})

t.test('ts out of range fails the line on both sides', async (t) => {
  const old = rejection(t, JSON.stringify({ ts: bounds.minTs - 1 }))
  t.strictSame({ ...old }, {
    code: 'ts_out_of_range',
    message: "ts 2025-10-22T11:59:59.999Z is older than the stream's retention (2025-10-22T12:00:00.000Z)",
  })
  const future = rejection(t, JSON.stringify({ ts: '2025-11-23T12:00:00.001Z' }))
  t.strictSame({ ...future }, {
    code: 'ts_out_of_range',
    message: 'ts 2025-11-23T12:00:00.001Z is after the newest accepted time (2025-11-23T12:00:00.000Z)',
  })
  t.equal(rejection(t, '{"ts":0}').code, 'ts_out_of_range', 'the epoch')
  t.equal(rejection(t, '{"ts":-1763700000000}').code, 'ts_out_of_range', 'negative')
  t.match(rejection(t, '{"ts":1e300}').message, /^ts 1e\+294 is after/, 'a ts Date cannot show is written as a number')
  t.equal(rejection(t, '{"ts":"1970-01-01T00:00:00Z"}').code, 'ts_out_of_range')
})

t.test('epochMsFromRfc3339 accepts real dates only', async (t) => {
  t.equal(epochMsFromRfc3339('2024-02-29T00:00:00Z'), Date.UTC(2024, 1, 29), 'leap day')
  t.equal(epochMsFromRfc3339('2000-02-29T00:00:00Z'), Date.UTC(2000, 1, 29), 'leap day of a 400-year')
  t.equal(epochMsFromRfc3339('2016-12-31T23:59:60Z'), Date.UTC(2017, 0, 1), 'a leap second lands on the next second')
  t.equal(epochMsFromRfc3339('0050-06-01T00:00:00Z'), new Date('0050-06-01T00:00:00Z').getTime(), 'years below 100 are not 19xx')
  t.equal(epochMsFromRfc3339('1969-12-31T23:59:59.999Z'), -1)
  t.equal(epochMsFromRfc3339('2025-11-20T08:30:15.9996Z'), Date.UTC(2025, 10, 20, 8, 30, 16), 'rounding carries into the second')
  for (const bad of [
    '2023-02-29T00:00:00Z', '1900-02-29T00:00:00Z', '2025-04-31T00:00:00Z', '2025-00-10T00:00:00Z', '2025-13-10T00:00:00Z',
    '2025-01-00T00:00:00Z', '2025-01-01T24:00:00Z', '2025-01-01T00:60:00Z', '2025-01-01T00:00:61Z', '2025-01-01T00:00:00+24:00',
    '2025-01-01T00:00:00+01:60', '2025-01-01T00:00:00', '2025-01-01T00:00:00.Z', '2025-01-01', '2025-1-01T00:00:00Z',
    '2025-01-01T00:00:00+0100', ' 2025-01-01T00:00:00Z', '2025-01-01T00:00:00Z ', '２025-01-01T00:00:00Z', '',
  ]) t.ok(Number.isNaN(epochMsFromRfc3339(bad)), JSON.stringify(bad))
})

t.test('epochMsFromNumber tells units apart by magnitude', async (t) => {
  t.equal(epochMsFromNumber(99_999_999_999), 99_999_999_999_000, 'below 1e11: seconds')
  t.equal(epochMsFromNumber(1e11), 1e11, 'from 1e11: milliseconds')
  t.equal(epochMsFromNumber(99_999_999_999_999), 99_999_999_999_999, 'below 1e14: milliseconds')
  t.equal(epochMsFromNumber(1e14), 1e11, 'from 1e14: microseconds')
  t.equal(epochMsFromNumber(1e17), 1e11, 'from 1e17: nanoseconds')
  t.equal(epochMsFromNumber(1763700000.0005), 1763700000001, 'half a ms rounds up')
  t.ok(Number.isNaN(epochMsFromNumber(Infinity)))
})

t.test('attrs keep every other key as JSON text', async (t) => {
  const extra = {
    tier: 'info',
    n: 3,
    // eslint-disable-next-line @typescript-eslint/no-loss-of-precision -- a number JSON cannot hold exactly, on purpose
    big: 12345678901234567890,
    ok: true,
    none: null,
    list: [1, 'two', { three: 3 }],
    obj: { a: { b: [] } },
    quote: 'say "hi"\\ \n\t\u0001',
    unicode: 'héllo 日本 😀',
    '': 'empty key',
    'odd "key"\n': 1,
  }
  const attrs = row(t, JSON.stringify({ host: 'h', ...extra })).attrs
  t.strictSame(JSON.parse(attrs as string), extra, 'round-trips through JSON.parse')
  t.equal(row(t, '{"a":1,"host":"h","b":"x"}').attrs, '{"a":1,"b":"x"}', 'compact, in line order')
  t.equal(row(t, '{"b":1,"2":2,"a":3,"1":4}').attrs, '{"1":4,"2":2,"b":1,"a":3}', 'integer-like keys first, as JSON.parse orders them')
  t.equal(row(t, '{"big":1e999}').attrs, '{"big":null}', 'Infinity is written as JSON writes it')
  t.equal(row(t, '{"s":"\\ud800"}').attrs, '{"s":"\\ud800"}', 'a lone surrogate stays an escape')
})

t.test('__proto__ and constructor keys are plain data', async (t) => {
  const keys = '"__proto__":{"polluted":1},"constructor":{"prototype":{"polluted":2}},"prototype":{"polluted":3}'
  for (const line of [`{${keys},"host":"h"}`, `{"log":"x",${keys},"host":"h"}`]) {
    const result = row(t, line)
    t.equal(result.host, 'h')
    t.equal(result.attrs, `{${keys}}`, line)
    t.ok(Object.hasOwn(JSON.parse(result.attrs as string), '__proto__'), '__proto__ is a key of attrs')
    t.equal(Object.getPrototypeOf(result), Object.prototype, 'the row keeps its prototype')
  }
  const nested = row(t, JSON.stringify({ log: `{${keys},"host":"h"}` }))
  t.equal(nested.host, 'h', 'a nested object with those keys is read like any other')
  t.equal(nested.attrs, `{${keys}}`, 'and its other keys kept in attrs as plain data (issue 15)')
  const plain: Record<string, unknown> = {}
  t.equal(plain.polluted, undefined, 'Object.prototype is untouched')
  t.notOk(Object.hasOwn(Object.prototype, 'polluted'))
  t.equal(plain.constructor, Object)
})

t.test('a value nested more than maxValueDepth levels fails the line with too_deep', async (t) => {
  const nest = (levels: number): string => '['.repeat(levels) + ']'.repeat(levels)
  const objects = (levels: number): string => '{"a":'.repeat(levels - 1) + '{}' + '}'.repeat(levels - 1)
  t.equal(maxValueDepth, 64)
  t.equal(row(t, `{"x":${nest(64)}}`).attrs, `{"x":${nest(64)}}`, '64 levels are kept')
  t.equal(row(t, `{"x":${objects(64)}}`).attrs, `{"x":${objects(64)}}`)
  const message = 'x nests objects and arrays more than 64 levels deep'
  t.strictSame({ ...rejection(t, `{"x":${nest(65)}}`) }, { code: 'too_deep', message })
  t.strictSame({ ...rejection(t, `{"x":${objects(65)}}`) }, { code: 'too_deep', message })
  t.strictSame({ ...rejection(t, `{"x":[1,{"b":2},${nest(64)}]}`) }, { code: 'too_deep', message }, 'depth counts inside any element')
  for (const levels of [5_000, 100_000]) {
    t.equal(rejection(t, `{"x":${nest(levels)}}`).code, 'too_deep', `${levels} levels`)
    t.equal(rejection(t, `{"log":"x","y":${nest(levels)}}`).message, 'y nests objects and arrays more than 64 levels deep')
  }
  const inLog = rejection(t, JSON.stringify({ log: `{"host":${nest(65)}}` }))
  t.equal(inLog.code, 'too_deep', 'a nested log field kept in attrs is held to the limit too')
  t.equal(row(t, JSON.stringify({ log: `{"other":${nest(100)}}` })).attrs, '{}', 'a nested key that is no field stays in the message only')
  t.equal(nestsDeeperThan(JSON.parse(nest(10_000)), 64), true)
  t.equal(nestsDeeperThan(JSON.parse(nest(64)), 64), false)
  t.equal(nestsDeeperThan('[[[', 0), false, 'a string is no container')
  const deepInteger = '['.repeat(64) + '12345678901234567890' + ']'.repeat(64)
  t.equal(row(t, `{"x":${deepInteger}}`).attrs, `{"x":${deepInteger}}`, 'a long integer is no level')
})

t.test('an integer keeps its digits in attrs; a field reads it as a number', async (t) => {
  const big = '9007199254740993'
  t.equal(row(t, `{"id":${big},"n":-${big}0,"a":[${big},{"b":${big}}],"f":1.5,"e":1e3,"small":42}`).attrs,
    `{"id":${big},"n":-${big}0,"a":[${big},{"b":${big}}],"f":1.5,"e":1000,"small":42}`)
  t.equal(row(t, `{"log":${JSON.stringify(`{"id":${big},"status":404}`)}}`).attrs, `{"id":${big}}`, 'in a log object too')
  t.equal(row(t, `{"ts":${BigInt(receivedAt) * 1_000_000n + 123_456n}}`).ts, receivedAt, 'a ts of 19 digits is nanoseconds')
  t.equal(row(t, '{"bytes":1234567890123456}').bytes, 1234567890123456, '16 digits below 2^53 are a count')
  t.equal(rejection(t, `{"bytes":${big}}`).code, 'invalid_field', 'a count past 2^53 is out of range')
  t.equal(rejection(t, `{"status":${big}}`).code, 'invalid_field')
  t.equal(row(t, `{"log":"x","status":${big}}`).attrs, `{"status":${big}}`, 'format 2 keeps the invalid field as sent')
  t.equal(row(t, `{"level":${big}}`).level, row(t, '{"level":100}').level, 'a level number as any other')
  t.strictSame({ ...rejection(t, big) }, { code: 'not_an_object', message: 'a line must be a JSON object, not a number' })
  t.equal(rejection(t, `{"log":${big}}`).code, 'invalid_field', 'a log that is a long integer fails as any number does')
})

t.test('format 2: log is the message, filename is kept, the rest is lenient', async (t) => {
  t.strictSame(row(t, '{"log":"GET / 200","filename":"/var/log/a.log","stream":"stdout"}'), {
    ...emptyRow, message: 'GET / 200', filename: '/var/log/a.log', attrs: '{"stream":"stdout"}',
  })
  t.strictSame(row(t, '{"log":""}'), { ...emptyRow, message: '' }, 'an empty log is a message')
  t.strictSame({ ...rejection(t, '{"log":42}') }, { code: 'invalid_field', message: 'log must be a string' })
  t.strictSame({ ...rejection(t, '{"log":1}') }, { code: 'invalid_field', message: 'log must be a string' })
  t.strictSame({ ...rejection(t, '{"log":["a"]}') }, { code: 'invalid_field', message: 'log must be a string' })
  t.equal(row(t, '{"log":{"a":1}}').attrs, '{"log":{"a":1}}', 'an object log is ECS: format 1, kept in attrs (issue 15)')
  t.strictSame({ ...rejection(t, '{"log":"x","filename":7}') }, { code: 'invalid_field', message: 'filename must be a string' })
  t.strictSame(row(t, '{"log":"x","host":"h","status":"oops","ts":1,"rt":0.5}'), {
    ...emptyRow, message: 'x', host: 'h', rt: 0.5, attrs: '{"status":"oops","ts":1}',
  }, 'top-level fields: valid ones fill columns, invalid and out-of-range ones go to attrs')
})

t.test('format 2 with a JSON object in log: its fields are extracted', async (t) => {
  const nested = { ts: '2025-11-21T11:00:00Z', host: 'api', path: '/x', method: 'POST', status: 201, rt: 0.002, bytes: 10, src: '1.2.3.4', user_agent: 'ua', level: 'warn' }
  const log = JSON.stringify(nested)
  t.strictSame(row(t, JSON.stringify({ log, stream: 'stderr' })), {
    ts: Date.UTC(2025, 10, 21, 11), host: 'api', path: '/x', method: 'POST', status: 201, rt: 0.002, bytes: 10, src: '1.2.3.4', user_agent: 'ua',
    message: log, filename: null, level: 'warn', service: null, trace_id: null, span_id: null, attrs: '{"stream":"stderr"}',
  }, 'level is a field too (issue 15)')
  t.equal(row(t, JSON.stringify({ log: JSON.stringify({ host: 'api', pod: 'a', stream: 'x' }), stream: 'stderr', zone: 'z' })).attrs,
    '{"pod":"a","stream":"x","zone":"z"}', 'other nested keys are kept in attrs, before the line\'s, each key once (issue 15)')
  t.equal(row(t, JSON.stringify({ log: ' \t\r\n' + log })).host, 'api', 'leading whitespace before {')
  t.strictSame(row(t, JSON.stringify({ log: '{"host": "api", "status": "oops", "ts": 5, "bytes": null}' })), {
    ...emptyRow, message: '{"host": "api", "status": "oops", "ts": 5, "bytes": null}', host: 'api', attrs: '{"status":"oops","ts":5}',
  }, 'a nested field of the wrong type or out of range is kept in attrs')
  t.strictSame(row(t, JSON.stringify({ log: '{"host": "api", oops' })), { ...emptyRow, message: '{"host": "api", oops' }, 'text that does not parse is just text')
  t.strictSame(row(t, JSON.stringify({ log: '[{"host": "api"}]' })), { ...emptyRow, message: '[{"host": "api"}]' }, 'an array is not extracted')
  t.strictSame(row(t, JSON.stringify({ log: 'x {"host": "api"}' })), { ...emptyRow, message: 'x {"host": "api"}' }, 'only a log that starts with {')
})

t.test('format 2: nested values win over top-level ones', async (t) => {
  const line = (nested: object, top: object): string => JSON.stringify({ log: JSON.stringify(nested), ...top })
  const both = row(t, line({ host: 'inner', status: 200 }, { host: 'outer', status: 500 }))
  t.equal(both.host, 'inner')
  t.equal(both.status, 200)
  t.equal(both.attrs, '{"host":"outer","status":500}', 'a shadowed top-level value is kept in attrs')
  const nestedBad = row(t, line({ status: 'x' }, { status: 404 }))
  t.equal(nestedBad.status, 404, 'an invalid nested value leaves the column to a valid top-level one')
  t.equal(nestedBad.attrs, '{"status":"x"}')
  const bothBad = row(t, line({ status: 'x' }, { status: 'y' }))
  t.equal(bothBad.status, null)
  t.equal(bothBad.attrs, '{"status":"x"}', 'both invalid: attrs holds the nested one, once')
  const nestedNull = row(t, line({ host: null }, { host: 'outer' }))
  t.equal(nestedNull.host, 'outer', 'a nested null is absent')
  t.equal(nestedNull.attrs, '{}')
  const ts = row(t, line({ ts: 1 }, { ts: receivedAt - 1000 }))
  t.equal(ts.ts, receivedAt - 1000, 'a nested ts out of range gives way to the top-level ts')
  t.equal(ts.attrs, '{"ts":1}')
})
