// The line scanner against the reference path (JSON.parse, normalizeEvent): every line it takes
// must come out as the same event row (lib/events/event-row.ts), field for field; the same
// RowBinary row through EventRowWriter#write, read back column by column (every stored column);
// and the same tail frame bytes through TailFrameWriter#add, which must also be the events API's
// JSON as JSON.stringify writes it from the reference row's values (an independent check of the
// one JSON writer, lib/events/event-json.ts). Lines come from a seeded generator of the shapes
// shippers send and of the corner cases of docs/api.md section 6.4, plus hand-picked ones;
// declining is always allowed, except for the common shapes listed at the end, which the fast
// path exists for.
import t from 'tap'
import type { Test } from 'tap'
import { LineScanner, blankLine, declined, scannedRow } from '../../lib/ingest/line-scanner.ts'
import { EventRow } from '../../lib/events/event-row.ts'
import { eventFields } from '../../lib/events/fields.ts'
import type { EventObject } from '../../lib/events/event-row.ts'
import { parseEventJson } from '../../lib/events/json-integers.ts'
import { normalizeEvent } from '../../lib/events/normalize.ts'
import type { TimeBounds } from '../../lib/events/normalize.ts'
import { EventRowWriter, readEventRows } from '../../lib/ingest/row-serializer.ts'
import { createRandom, generateLines } from '../../bench/payload.ts'
import { TailFrameWriter } from '../../lib/live/tail-frames.ts'
import { wrappedBodyMessage, wrapperKeys } from '../../lib/ingest/wrapped-body.ts'

const day = 86_400_000
const receivedAt = Date.UTC(2025, 10, 21, 12, 0, 0)
const bounds: TimeBounds = { receivedAt, minTs: receivedAt - 30 * day, maxTs: receivedAt + 2 * day }
const seq = 42
const referenceRowBuffer = new EventRow()

/** The reference row of a line, or null when the line fails (the worker's wrapped_body check included). */
function referenceRow (line: string): EventRow | null {
  let value: unknown
  try {
    value = parseEventJson(line)
  } catch {
    return null
  }
  if (wrappedBodyMessage(value) !== null) return null
  return normalizeEvent(value, bounds, referenceRowBuffer) === null ? referenceRowBuffer : null
}

function rowBytes (row: EventRow, size: number): Buffer {
  const writer = new EventRowWriter('org_1', 'web', receivedAt, 64)
  writer.write(row, seq, size)
  return Buffer.from(writer.finish())
}

/** The events API's JSON of a row's values, by JSON.stringify: attrs spliced in before received_at. */
function referenceJson (values: EventObject): string {
  const { attrs, ...fields } = values
  const fixed = JSON.stringify({ id: `${String(fields.ts)}-0`, ...fields, received_at: receivedAt })
  const at = fixed.lastIndexOf(',"received_at":')
  return fixed.slice(0, at) + ',"attrs":' + String(attrs) + fixed.slice(at)
}

const scanner = new LineScanner()
scanner.setBounds(bounds)
const frames = new TailFrameWriter()

interface Outcome { outcome: number, end: number, bytes?: Buffer, row?: EventObject }

/** Scans `line` placed after `before` in a buffer, followed by '\n' and `after`, as in a task. */
function scan (line: string, before = '', after = ''): Outcome {
  const buffer = Buffer.from(before + line + '\n' + after)
  const start = Buffer.byteLength(before)
  const end = scanner.scan(buffer, start)
  if (scanner.outcome !== scannedRow) return { outcome: scanner.outcome, end }
  return { outcome: scannedRow, end, bytes: rowBytes(scanner.row, end - start), row: scanner.row.toObject() }
}

/**
 * Checks one line: 'declined', 'taken', or what differs from the reference. A line placed
 * between others must end at its own newline.
 */
function check (line: string, before = '', after = ''): string {
  const got = scan(line, before, after)
  if (got.outcome === declined) return 'declined'
  const size = Buffer.byteLength(line)
  const at = JSON.stringify(line)
  if (got.end !== Buffer.byteLength(before) + size) return `${at}: ends at ${got.end}`
  if (got.outcome === blankLine) return /^[ \t\r]*$/.test(line) ? 'taken' : `${at}: taken as blank`
  const row = referenceRow(line)
  if (row === null) return `${at}: taken, but the reference fails it`
  const want = JSON.stringify(readEventRows(rowBytes(row, size)))
  const gotRows = JSON.stringify(readEventRows(got.bytes!))
  if (want !== gotRows) return `${at}: row ${gotRows}, reference ${want}`
  const values = row.toObject()
  if (JSON.stringify(values) !== JSON.stringify(got.row)) return `${at}: row ${JSON.stringify(got.row)}, reference ${JSON.stringify(values)}`
  // The scanner's row still holds the line (scan() read nothing after it).
  frames.reset()
  frames.add(scanner.row, receivedAt, 0)
  const frame = Buffer.from(frames.finish())
  const wantFrame = Buffer.from('event: event\ndata: ' + referenceJson(values) + '\n\n')
  if (!frame.equals(wantFrame)) return `${at}: tail frame ${JSON.stringify(frame.toString())}, reference ${JSON.stringify(wantFrame.toString())}`
  return 'taken'
}

/** Checks lines; fails with the first differences; returns how many were taken. */
function checkAll (t: Test, lines: Array<[string, string?, string?]>): number {
  const differences: string[] = []
  let taken = 0
  for (const [line, before, after] of lines) {
    const outcome = check(line, before, after)
    if (outcome === 'taken') taken++
    else if (outcome !== 'declined' && differences.length < 10) differences.push(outcome)
  }
  t.strictSame(differences, [], 'no line is taken differently from the reference')
  return taken
}

// ---- a generator of lines ------------------------------------------------------------------

const random = createRandom(20251121)
const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]
const chance = (p: number): boolean => random() < p

/** The format-1 fields of the field table: every one is generated, so the test covers a new column. */
const fieldKeys: readonly string[] = eventFields.filter((f) => f.format === 1).map((f) => f.key)
const otherKeys = ['stream', 'pod', 'message', 'filename', 'msg', 'time', '@timestamp', 'severity', 'http', 'levelname', 'PRIORITY', '_HOSTNAME', '__REALTIME_TIMESTAMP', 'priority', '__proto__', 'constructor', '1', '01', '-1', 'a b', 'é', 'k"q', 'x\\y', '', 'hostname', 'ts2', 'log2', 'Host']
const escapedKeys = ['"\\u0068ost"', '"ho\\u0073t"', '"\\u006cog"', '"a\\/b"', '"a\\nb"', '"\\"q\\""']
const stringBodies = [
  'web-01', '', ' ', 'GET', '/api/v1/users', 'caf\u00e9', '\u00e9\u{1f600}', '\u2028', 'tab\there', 'a"quote', 'back\\slash',
  'line\nbreak', 'nul\u0000char', '\u007f', '{"host":"nested"}', '2025-11-21T11:59:00Z', '1763726340000',
]
const levelTexts = ['info', 'INFO', 'Warning', 'warn', 'err', 'ERROR', 'crit', 'fatal', 'debug', 'trace', 'notice', 'verbose', 'loud', '', 'inf', 'info ', ' WARN', ' \t', '30', '3', 'caf\u00e9']
const rawEscapes = ['\\/', '\\u0041', '\\u00e9', '\\u20ac', '\\ud83d\\ude00', '\\ud800', '\\udc00x', '\\b', '\\f', '\\r', '\\u001f', '\\u005C', '\\U0041', '\\x41', '\\']
const numbers = [
  '0', '-0', '1', '99', '100', '200', '599', '600', '200.0', '2e2', '2E+2', '1.5', '0.25', '-1', '1e999', '-1e999', '1E400',
  '12345678901234567890', '9007199254740991', '9007199254740993', '0.1', '0.30000000000000004', '1.0000000000000002',
  '123456789012345.6', '1.5e-7', '0.0000001', '1e21', '1e-400', '01', '1.', '.5', '-', '+1', '0x10', '1e', '1e+',
  String(receivedAt - 60_000), String(receivedAt + 3 * day), String(receivedAt - 40 * day),
  String((receivedAt - 60_000) / 1000), String((receivedAt - 60_000) * 1000), String((receivedAt - 60_000) * 1e6),
  ((receivedAt - 60_123) / 1000).toFixed(3), ((receivedAt - 60_123) / 1000).toFixed(6), String(receivedAt - 60_000) + '.5',
]
const times = [
  '2025-11-21T11:59:00Z', '2025-11-21T11:59:00.123Z', '2025-11-21t11:59:00.1234567z', '2025-11-21 11:59:00+01:00',
  '2025-11-21T11:59:00.5-08:30', '2025-11-21T11:59:60Z', '2024-02-29T00:00:00Z', '2025-02-29T00:00:00Z', '2025-11-21T24:00:00Z',
  '2025-11-21T11:59:00', '2025-11-21T11:59:00.Z', '2025-11-21T11:59:00+0100', '2025-11-21T11:59:00+24:00', '2025-13-01T00:00:00Z',
  '2025-1-21T11:59:00Z', '2025-11-21T11:59:00ZZ', '2025-10-01T00:00:00Z', '2026-11-21T11:59:00Z', '２025-11-21T11:59:00Z',
  '2025-11-21T11:59:00.9995Z', '2025-11-21T11:59:00.0004+00:00',
]
const containers = [
  '{}', '[]', '{"a":1}', '[1,2,"x"]', '{"a":{"b":[true,false,null]}}', '{"a": 1}', '[1, 2]', '{"1":2,"b":3}', '{"b":3,"1":2}',
  '{"a":1,"a":2}', '{"a":1.5}', '[1e2]', '[-0]', '{"a":"\\u0041"}', '{"a":"x\\"y"}', '{"__proto__":{"x":1}}', '[[[[[]]]]]',
  '['.repeat(70) + ']'.repeat(70), '{"a":[1,2,]}', '{"a"}', '[1 2]', '{"a":1}}',
]

function ws (): string {
  return chance(0.8) ? '' : pick([' ', '\t', '\r', '  ', ' \t'])
}

function jsonString (): string {
  if (chance(0.15)) {
    let body = ''
    for (let i = 0, n = 1 + Math.floor(random() * 3); i < n; i++) body += pick(['a', 'é', '']) + pick(rawEscapes)
    return '"' + body + '"'
  }
  return JSON.stringify(pick(stringBodies))
}

function fieldValue (key: string, depth: number): string {
  const r = random()
  if (r < 0.08) return 'null'
  switch (key) {
    // Numeric strings ("200") are numbers for numeric fields (issue 15).
    case 'status': return r < 0.6 ? pick(['200', '404', '503', '200.0', '2e2']) : r < 0.7 ? pick(numbers) : r < 0.8 ? JSON.stringify(pick(numbers)) : anyValue(depth)
    case 'ts': return r < 0.35 ? JSON.stringify(pick(times)) : r < 0.7 ? pick(numbers) : r < 0.8 ? JSON.stringify(pick(numbers)) : anyValue(depth)
    case 'rt': return r < 0.5 ? pick(['0.123', '0', '1.5', '0.000123', '12']) : r < 0.7 ? pick(numbers) : r < 0.8 ? JSON.stringify(pick(numbers)) : anyValue(depth)
    case 'bytes': return r < 0.5 ? pick(['0', '5120', '123456']) : r < 0.7 ? pick(numbers) : r < 0.8 ? JSON.stringify(pick(numbers)) : anyValue(depth)
    case 'level': return r < 0.5 ? JSON.stringify(pick(levelTexts)) : r < 0.7 ? pick(['10', '30', '35', '60', '70', '0', '3', '7', '8', '9']) : r < 0.8 ? JSON.stringify(pick(numbers)) : anyValue(depth)
    case 'log': return r < 0.4 ? JSON.stringify(nestedText(depth)) : r < 0.85 ? jsonString() : anyValue(depth)
    case 'filename': return r < 0.8 ? jsonString() : anyValue(depth)
    default: return fieldKeys.includes(key as typeof fieldKeys[number]) ? (r < 0.8 ? jsonString() : anyValue(depth)) : anyValue(depth)
  }
}

function anyValue (depth: number): string {
  const r = random()
  if (r < 0.35) return jsonString()
  if (r < 0.6) return pick(numbers)
  if (r < 0.7) return pick(['true', 'false', 'null', 'tru', 'nul', 'False'])
  if (r < 0.9 || depth > 1) return pick(containers)
  return object(depth + 1)
}

/** Text for a format-2 log: JSON with format-1 fields (valid or not), or almost JSON. */
function nestedText (depth: number): string {
  const text = object(depth + 1, true)
  const r = random()
  if (r < 0.6) return text
  if (r < 0.7) return ' \n' + text + '\n'
  if (r < 0.8) return text.slice(0, Math.floor(random() * text.length))
  if (r < 0.9) return text + ' trailing'
  return text.replace(/,/g, ',\n  ')
}

function object (depth: number, nested = false): string {
  const members: string[] = []
  const count = Math.floor(random() * (nested ? 8 : 9))
  for (let i = 0; i < count; i++) {
    const r = random()
    let key: string
    let rawKey: string | null = null
    if (r < 0.6) key = pick(fieldKeys)
    else if (r < 0.72 && depth === 0) key = pick(['log', 'filename'])
    else if (r < 0.97) key = pick(otherKeys)
    else {
      key = ''
      rawKey = pick(escapedKeys)
    }
    members.push(ws() + (rawKey ?? JSON.stringify(key)) + ws() + ':' + ws() + fieldValue(key, depth) + ws())
  }
  return '{' + members.join(',') + (count === 0 ? ws() : '') + '}'
}

function mutate (line: string): string {
  const at = Math.floor(random() * (line.length + 1))
  switch (Math.floor(random() * 4)) {
    case 0: return line.slice(0, at)
    case 1: return line.slice(0, at) + pick(['"', '\\', ',', '}', '{', ':', ' ', '\u0001', 'x', '\u00e9']) + line.slice(at)
    case 2: return line.slice(0, at) + line.slice(at + 1)
    default: return ws() + line + ws() + pick(['', '', 'x', ' {}', '\t'])
  }
}

/** A line as the worker sees it: UTF-8 bytes (a surrogate pair cut by mutate() becomes U+FFFD). */
function generateLine (): string {
  return generateText().toWellFormed()
}

function generateText (): string {
  const r = random()
  if (r < 0.03) return pick(['', ' ', '\t\r', '[1]', '"text"', '42', 'null', '{', '}', '{"a":1} {"b":2}'])
  const line = ws() + object(0) + ws()
  return r < 0.2 ? mutate(line) : line
}

// ---- tests ---------------------------------------------------------------------------------

t.test('generated lines: every line taken is stored exactly as the reference path stores it', async (t) => {
  const count = 30_000
  const lines: Array<[string, string, string]> = []
  for (let i = 0; i < count; i++) {
    // Lines sit between others in a task: the scanner must stop at its own newline.
    lines.push([generateLine(), i % 2 === 0 ? '{"host":"before"}\n' : '', i % 3 === 0 ? '"after",{"x":1}}\n' : ''])
  }
  const failing = lines.filter(([line]) => referenceRow(line) === null).length
  const taken = checkAll(t, lines)
  t.ok(taken > (count - failing) / 2, `the scanner took ${taken} of ${count} lines, ${count - failing} of which the reference stores`)
})

t.test('random JSON-flavoured bytes: never a throw, never a line the reference rejects', async (t) => {
  const alphabet = ['{', '}', '[', ']', '"', '\\', ':', ',', ' ', '\t', '\r', 'a', 'e', 'E', '0', '1', '9', '-', '+', '.',
    'u', 'n', 't', 'r', 'f', 'l', 's', '\u00e9', '\u{1f600}', '\u0000', '"host"', '"log"', '"ts"', '"status"', 'null', 'true']
  const lines: Array<[string]> = []
  for (let i = 0; i < 20_000; i++) {
    let line = '{'
    for (let k = 0, n = Math.floor(random() * 40); k < n; k++) line += pick(alphabet)
    lines.push([chance(0.5) ? line + '}' : line])
  }
  checkAll(t, lines)
})

t.test('the payload of the benchmarks is taken whole', async (t) => {
  const lines = generateLines(5_000, 7, receivedAt)
  t.equal(checkAll(t, lines.map((line) => [line])), lines.length)
})

t.test('the shapes shippers send are taken, not declined', async (t) => {
  const common = [
    '{"ts":1763726340000,"host":"web-1","method":"GET","path":"/x?a=1","status":200,"rt":0.012,"bytes":512,"src":"10.0.0.1","user_agent":"curl/8"}',
    '{"ts":"2025-11-21T11:59:00.123Z","host":"web-1","status":404}',
    '{"log":"GET /x 200\\n","stream":"stdout","time":"2025-11-21T11:59:00.1234567Z"}',
    '{"log":"{\\"ts\\":\\"2025-11-21T11:59:00Z\\",\\"status\\":500,\\"path\\":\\"/a\\",\\"level\\":\\"warn\\"}\\n","stream":"stderr"}',
    '{"log":"{\\"ts\\":\\"2025-11-21T11:59:00Z\\",\\"status\\":500,\\"path\\":\\"/a\\",\\"msg\\":\\"x \\\\\\"y\\\\\\"\\",\\"req\\":{\\"id\\":7}}\\n","stream":"stderr","msg":"outer"}',
    // Issue 15: shippers' field names, mapped on the fast path too.
    '{"level":30,"time":1763726340000,"pid":7,"hostname":"web-1","msg":"request done","req":{"id":1}}', // pino
    '{"@timestamp":"2025-11-21T11:59:00.123Z","message":"GET /x","log.level":"info","service.name":"api"}', // ECS, flattened
    '{"time":"2025-11-21T11:59:00+00:00","remote_addr":"10.0.0.1","request_method":"GET","uri":"/x","status":"200","body_bytes_sent":"512","request_time":"0.012","http_user_agent":"curl/8"}', // nginx JSON log_format
    '{"severity_text":"ERROR","severityNumber":17,"body":"boom","timestamp":"1763726340123456789"}', // OpenTelemetry-shaped
    '{"message":" disk full","fromhost":"web-7","facility":"daemon","priority":"crit","timereported":"2025-11-21T11:59:00.123456+00:00","timegenerated":"2025-11-21T11:59:00.2+00:00"}', // rsyslog StdJSONFmt
    '{"priority":14,"msg":"a ticket\'s priority, no level"}',
    '{"log":"<html> \\u003cb\\u003e caf\\u00e9","filename":"/var/log/app.log"}',
    '{"message":"hello","level":"info","kubernetes":{"pod_name":"api-1","labels":{"app":"api"}},"tags":["a","b"]}',
    '{"host":"a","path":"/p","extra":null,"n":1.5,"big":1e3,"ok":true}',
    '{"msg":"ids","order_id":9007199254740993,"ids":[12345678901234567890123,-9007199254740993],"ts":1763726340123456789}', // integers past 2^53, kept as sent
    '{"log":"caf\\u00e9 \\ud83d\\ude00","host":"\\ud83d\\ude00 \\u20ac"}', // Python's ensure_ascii
    '  {"host":"a"}\r',
    '{}',
  ]
  t.equal(checkAll(t, common.map((line) => [line])), common.length)
})

t.test('declined: what the reference must word, or what the scanner leaves to it', async (t) => {
  const cases = [
    '{"host":1}', // invalid_field
    '{"ts":1}', // ts_out_of_range
    '{"log":5}', // invalid_field
    '[1]', // not_an_object
    '{"host":"a"', // invalid_json
    '{"host":"a"} x', // invalid_json
    '{"a":1,"a":2}', // a repeated key: JSON.parse keeps the last
    '{"b":1,"2":2}', // an array-index key: JSON.parse lists it first
    '{"a":"\\ud800"}', // a lone surrogate
    '{"a":{"b": 1}}', // whitespace inside an attrs value
    '{"log":"{\\"status\\":\\"x\\"}"}', // a nested field kept in attrs
  ]
  for (const line of cases) t.equal(scan(line).outcome, declined, line)
})

t.test('wrapped bodies: declined (the worker fails them with wrapped_body); the same keys among others are taken', async (t) => {
  const wrappers = [
    '{"resourceLogs":[{"scopeLogs":[]}]}',
    '{"resourceSpans":[{"scopeSpans":[]}]}',
    '{"resourceMetrics":[]}',
    '{"streams":[{"stream":{"app":"a"},"values":[["1","x"]]}]}',
    '{"index":{"_index":"logs"}}',
    '{"create":{}}',
    ' {"logs":[{"message":"a"}]} ',
    ...['events', 'records', 'messages', 'data', 'entries', 'items'].map((key) => `{"${key}":[{"a":1}]}`),
  ]
  for (const line of wrappers) {
    t.equal(scan(line).outcome, declined, line)
    t.ok(wrappedBodyMessage(JSON.parse(line)), 'and it is a wrapped body')
  }
  t.same(wrapperKeys.filter((key) => !wrappers.some((line) => line.includes(`{"${key}":`))), [], 'every wrapper key is tried')
  // Single-member lines that are no wrapper are declined too (the check is by key), and stored by the reference.
  for (const line of ['{"logs":[]}', '{"index":{"name":"users"}}', '{"data":{"a":1}}']) {
    t.equal(scan(line).outcome, declined, line)
    t.equal(wrappedBodyMessage(JSON.parse(line)), null, 'no wrapped body')
    t.ok(referenceRow(line), 'the reference stores it')
  }
  const events = [
    '{"message":"batch done","events":[{"id":1}]}',
    '{"host":"h","logs":[{"a":1}]}',
    '{"logs":[{"a":1}],"level":"info"}',
    '{"resourceLogs":[],"x":1}',
    '{"logs":"text"}',
  ]
  t.equal(checkAll(t, events.map((line) => [line])), events.length)
})

t.test('nesting: the scanner takes what the reference keeps (64 levels) and declines what it fails (65)', async (t) => {
  const nest = (levels: number): string => '['.repeat(levels) + '1' + ']'.repeat(levels)
  const objects = (levels: number): string => '{"a":'.repeat(levels) + '1' + '}'.repeat(levels)
  t.equal(checkAll(t, [[`{"x":${nest(64)}}`], [`{"x":${objects(64)}}`], [`{"host":"h","x":[${nest(63)},2]}`]]), 3)
  for (const line of [`{"x":${nest(65)}}`, `{"x":${objects(65)}}`, `{"x":${nest(5_000)}}`, `{"log":"m","x":${nest(65)}}`,
    JSON.stringify({ log: `{"host":${nest(65)}}` })]) {
    t.equal(scan(line).outcome, declined, line.slice(0, 40))
    const result = normalizeEvent(JSON.parse(line), bounds, new EventRow())
    t.equal(result?.code ?? 'stored', 'too_deep', 'the reference fails it with too_deep')
  }
  const kept = JSON.stringify({ log: `{"other":${nest(100)}}` })
  t.equal(scan(kept).outcome, declined, 'a deep nested log object is declined')
  t.ok(referenceRow(kept), 'and the reference keeps it (the deep key stays in the message)')
})

t.test('blank lines and line ends', async (t) => {
  t.strictSame(scan('', 'x\n'), { outcome: blankLine, end: 2 })
  t.strictSame(scan(' \t\r'), { outcome: blankLine, end: 3 })
  const buffer = Buffer.from('{"host":"a"}')
  t.equal(scanner.scan(buffer, 0), buffer.length, 'the last line may end without a newline')
  t.equal(scanner.outcome, scannedRow)
  t.equal(scanner.scan(Buffer.from('   '), 0), 3)
  t.equal(scanner.outcome, blankLine)
})

t.test('strings longer than the scratch buffer keep their spans', async (t) => {
  const long = 'x\\"'.repeat(60_000)
  const lines: Array<[string]> = [
    [`{"log":"${long}","filename":"a\\/b","host":"h\\tq"}`],
    [`{"log":"{\\"host\\":\\"${'y\\\\\\"'.repeat(30_000)}\\"}","path":"\\u00e9"}`],
  ]
  t.equal(checkAll(t, lines), 2)
})
