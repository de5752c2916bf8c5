// EventRowWriter: an event row (lib/events/event-row.ts) to RowBinary in eventColumns order, checked
// against a reference encoding built the slow and obvious way, and against ClickHouse itself.
import t from 'tap'
import { eventsTableStatements } from '../../lib/storage/migrate.ts'
import { EventRowWriter, readEventRows } from '../../lib/ingest/row-serializer.ts'
import { EventRowJsonWriter } from '../../lib/ingest/row-json-serializer.ts'
import { eventColumns } from '../../lib/events/fields.ts'
import { eventRow } from '../helpers/events.ts'
import { createTestDatabase } from '../helpers/clickhouse.ts'

const receivedAt = 1763726400000

type EventRow = Record<string, string | number | null>
/** A decoded row's column `name`. */
const col = (name: string): number => eventColumns.indexOf(name)

const baseRow: EventRow = {
  ts: 1763726399123,
  host: 'web-1',
  path: '/api/v1/orders',
  method: 'GET',
  status: 200,
  rt: 0.25,
  bytes: 512,
  src: '10.0.0.1',
  user_agent: 'curl/8.5.0',
  message: null,
  filename: null,
  attrs: '{}',
}

function serialize (rows: EventRow[], orgId = 'org_1', stream = 'web'): ArrayBuffer {
  const writer = new EventRowWriter(orgId, stream, receivedAt, 64)
  rows.forEach((row, i) => { writer.write(eventRow(row), 1000 + i, 200 + i) })
  return writer.finish()
}

/**
 * The rows as the engine behind `db` takes them (RowBinary; the embedded engine, which takes text
 * formats only: JSONCompactEachRow, row-json-serializer.ts), with their INSERT.
 */
function insertFor (db: { clickhouse: { insertFormat: string } }, rows: EventRow[]): [string, Buffer] {
  const format = db.clickhouse.insertFormat
  if (format === 'RowBinary') return [`INSERT INTO events (${eventColumns.join(', ')}) FORMAT RowBinary`, Buffer.from(serialize(rows))]
  const writer = new EventRowJsonWriter('org_1', 'web', receivedAt, 64)
  rows.forEach((row, i) => { writer.write(eventRow(row), 1000 + i, 200 + i) })
  return [`INSERT INTO events (${eventColumns.join(', ')}) FORMAT ${format}`, Buffer.from(writer.finish())]
}

// The reference encoding, built the slow and obvious way: minimal VarUInt lengths.
function varUInt (value: number): Buffer {
  const out: number[] = []
  while (value >= 0x80) {
    out.push(0x80 | (value & 0x7f))
    value = Math.floor(value / 0x80)
  }
  out.push(value)
  return Buffer.from(out)
}
const refString = (text: string): Buffer => Buffer.concat([varUInt(Buffer.byteLength(text)), Buffer.from(text)])
const refNullable = (value: Buffer | null): Buffer => value === null ? Buffer.from([1]) : Buffer.concat([Buffer.from([0]), value])
function refUInt (value: number, size: number): Buffer {
  const out = Buffer.alloc(size)
  if (size === 8) out.writeBigUInt64LE(BigInt(value))
  else out.writeUIntLE(value, 0, size)
  return out
}
function refFloat (value: number): Buffer {
  const out = Buffer.alloc(8)
  out.writeDoubleLE(value)
  return out
}
const refNullableString = (value: string | null): Buffer => refNullable(value === null ? null : refString(value))
const refStrings = (values: string[]): Buffer => Buffer.concat([varUInt(values.length), ...values.map(refString)])

t.test('RowBinary in eventColumns order, byte for byte; NULL as its flag', async (t) => {
  const second: EventRow = { ...baseRow, host: null, status: null, rt: null, bytes: null, message: 'm', filename: '/f.log', level: 'warn', attrs: '{"a":1}' }
  const bytes = Buffer.from(serialize([baseRow, second]))
  // Each column as its ClickHouse type is encoded (lib/events/fields.ts gives the types).
  const encoders: Record<string, (row: EventRow, i: number) => Buffer> = {
    org_id: () => refString('org_1'),
    stream: () => refString('web'),
    received_at: () => refUInt(receivedAt, 8),
    ts: (row) => refUInt(row.ts as number, 8),
    host: (row) => refNullableString(row.host as string | null),
    path: (row) => refNullableString(row.path as string | null),
    method: (row) => refNullableString(row.method as string | null),
    status: (row) => refNullable(row.status === null ? null : refUInt(row.status as number, 2)),
    rt: (row) => refNullable(row.rt === null ? null : refFloat(row.rt as number)),
    bytes: (row) => refNullable(row.bytes === null ? null : refUInt(row.bytes as number, 8)),
    src: (row) => refNullableString(row.src as string | null),
    user_agent: (row) => refNullableString(row.user_agent as string | null),
    message: (row) => refNullableString(row.message as string | null),
    filename: (row) => refNullableString(row.filename as string | null),
    level: (row) => refNullableString((row.level ?? null) as string | null),
    attrs: (row) => refString(row.attrs as string),
    seq: (_row, i) => refUInt(1000 + i, 8),
    size: (_row, i) => refUInt(200 + i, 4),
    attr_keys: (row) => refStrings(Object.keys(JSON.parse(row.attrs as string) as object)),
    attr_values: (row) => refStrings(Object.values(JSON.parse(row.attrs as string) as object).map(String)),
  }
  for (const name of eventColumns) if (encoders[name] === undefined) encoders[name] = (row) => refNullableString((row[name] ?? null) as string | null)
  const expected = [baseRow, second].map((row, i) => Buffer.concat(eventColumns.map((name) => encoders[name](row, i))))
  t.ok(bytes.equals(Buffer.concat(expected)), 'byte for byte')
  const decoded = readEventRows(bytes)
  const byName = (values: Record<string, string | null>): Array<string | null> => eventColumns.map((name) => values[name])
  t.strictSame(decoded, [
    byName({ org_id: 'org_1', stream: 'web', ts: '1763726399123', received_at: '1763726400000', host: 'web-1', path: '/api/v1/orders', method: 'GET', status: '200', rt: '0.25', bytes: '512', src: '10.0.0.1', user_agent: 'curl/8.5.0', message: null, filename: null, level: null, service: null, trace_id: null, span_id: null, attrs: '{}', seq: '1000', size: '200', attr_keys: '[]', attr_values: '[]' }),
    byName({ org_id: 'org_1', stream: 'web', ts: '1763726399123', received_at: '1763726400000', host: null, path: '/api/v1/orders', method: 'GET', status: null, rt: null, bytes: null, src: '10.0.0.1', user_agent: 'curl/8.5.0', message: 'm', filename: '/f.log', level: 'warn', service: null, trace_id: null, span_id: null, attrs: '{"a":1}', seq: '1001', size: '201', attr_keys: '["a"]', attr_values: '["1"]' }),
  ])
  t.equal(decoded[0].length, eventColumns.length)
})

t.test('strings: any bytes, UTF-8 like Buffer.from, exact lengths', async (t) => {
  const samples = [
    '', 'tab\there', 'new\nline', 'nul\0byte', 'back\\slash', '\\N', 'héllo', '日本語テキスト', '😀 emoji 🚀',
    '\u0001\u001f\u007f', 'x'.repeat(40) + '\t', 'x'.repeat(42), 'x'.repeat(43), '日'.repeat(42), '日'.repeat(43),
    'x'.repeat(5461), 'x'.repeat(5462), '😀'.repeat(3000), 'é'.repeat(70_000),
    'lone high \ud800 surrogate', 'lone low \udc00', 'swapped \udc00\ud800', 'high at end \ud83d', '\ud83d',
  ]
  const rows = samples.map((text) => ({ ...baseRow, host: text, message: text, attrs: text }))
  const decoded = readEventRows(serialize(rows))
  samples.forEach((text, i) => {
    const expected = Buffer.from(text).toString()
    t.equal(decoded[i][col('host')], expected, `host ${JSON.stringify(text.slice(0, 20))} (${text.length})`)
    t.equal(decoded[i][col('message')], expected)
    t.equal(decoded[i][col('attrs')], expected)
  })
  // A row's strings are UTF-8 spans, so their lengths are exact: 50 ASCII bytes, one length byte.
  const one = Buffer.from(serialize([{ ...baseRow, ts: 0, host: 'h'.repeat(50) }]))
  const at = refString('org_1').length + refString('web').length + 8 + 8
  t.strictSame([...one.subarray(at, at + 3)], [0, 50, 0x68], 'not NULL, then 50 as a one-byte VarUInt, then the bytes')
})

t.test('random strings read back as Buffer.from encodes them', async (t) => {
  // Seeded, so a failure reproduces; the alphabet leans on the characters that need care.
  let seed = 12345
  const random = (): number => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff
    return seed / 0x80000000
  }
  const alphabet = ['a', 'Z', ' ', 'N', '"', 'é', '€', '😀', '\ud800', '\udfff', '\u0080', '\u07ff', '\u0800', '\uffff', '\u0001', '\t', '\n', '\\', '\0', '\ufeff']
  const samples: string[] = []
  for (let i = 0; i < 2000; i++) {
    let text = ''
    const length = Math.floor(random() * 80)
    for (let j = 0; j < length; j++) text += alphabet[Math.floor(random() * alphabet.length)]
    samples.push(text)
  }
  const decoded = readEventRows(serialize(samples.map((text) => ({ ...baseRow, path: text }))))
  t.equal(decoded.length, samples.length)
  t.ok(samples.every((text, i) => decoded[i][col('path')] === Buffer.from(text).toString() && decoded[i][col('seq')] === String(1000 + i)))
})

t.test('org and stream of any characters', async (t) => {
  const [row] = readEventRows(serialize([baseRow], 'org\twith tab', 'stream\\x 日本 and a name longer than sixteen'))
  t.equal(row[col('org_id')], 'org\twith tab')
  t.equal(row[col('stream')], 'stream\\x 日本 and a name longer than sixteen')
})

t.test('numbers: integers up to 2^53 - 1, rt exactly as the double it was', async (t) => {
  const integers = [0, 1, 255, 256, 2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1, 2 ** 32, 2 ** 32 + 1, 1763726399123, 2 ** 53 - 1]
  const decodedIntegers = readEventRows(serialize(integers.map((n) => ({ ...baseRow, ts: n, bytes: n }))))
  integers.forEach((n, i) => {
    t.equal(decodedIntegers[i][col('ts')], String(n), `ts ${n}`)
    t.equal(decodedIntegers[i][col('bytes')], String(n), `bytes ${n}`)
  })
  const rts = [0, 0.5, 0.25, 1, 0.000001, 0.1 + 0.2, 1.081401, 5e-7, 1e-7, 1e21, 1.7976931348623157e308, 5e-324]
  const decodedRts = readEventRows(serialize(rts.map((rt) => ({ ...baseRow, rt }))))
  rts.forEach((rt, i) => t.equal(Number(decodedRts[i][col('rt')]), rt, `rt ${rt}`))
  const [negativeZero] = readEventRows(serialize([{ ...baseRow, rt: -0 }]))
  t.equal(negativeZero[col('rt')], '0')
  t.ok(Object.is(Number(negativeZero[col('rt')]), 0), '-0 is stored as 0')
  t.equal(readEventRows(serialize([{ ...baseRow, status: 599 }]))[0][col('status')], '599')
})

t.test('the buffer grows past its first size; finish() hands over exactly the rows', async (t) => {
  const long = { ...baseRow, message: 'm'.repeat(10_000) + '\t' }
  const rows = Array.from({ length: 50 }, () => long)
  const buffer = serialize(rows)
  const decoded = readEventRows(buffer)
  t.equal(decoded.length, 50, 'the reader ends exactly at the last row')
  t.equal(decoded[49][col('message')], long.message)
  t.equal(serialize([]).byteLength, 0, 'no rows, no bytes')
  t.throws(() => readEventRows(buffer.slice(0, buffer.byteLength - 1)), RangeError, 'a cut row is noticed')
  const size = buffer.byteLength
  const moved = structuredClone(buffer, { transfer: [buffer] })
  t.ok(buffer.detached, 'transferable: the original is detached')
  t.equal(moved.byteLength, size)
})

t.test('ClickHouse reads the rows, long strings included', async (t) => {
  const db = await createTestDatabase(t)
  for (const statement of eventsTableStatements) await db.clickhouse.command(statement)
  const strings = ['', 'short', 'x'.repeat(42), 'x'.repeat(43), '日'.repeat(43), 'x'.repeat(5462), '😀'.repeat(3000), 'tab\tnew\nline\\ \0 \ud800']
  const rows = strings.map((text, i) => ({ ...baseRow, ts: (baseRow.ts as number) + i, host: text, message: text, attrs: text, rt: i === 0 ? null : 0.1 * i, bytes: 2 ** 53 - 1 - i }))
  await db.clickhouse.insertRaw(...insertFor(db, rows))
  const stored = await db.clickhouse.query<Record<string, unknown>>('SELECT host, message, attrs, ts, rt, bytes, seq, size, status FROM events ORDER BY ts')
  t.equal(stored.length, strings.length)
  strings.forEach((text, i) => {
    const expected = Buffer.from(text).toString()
    t.strictSame(stored[i], {
      host: expected, message: expected, attrs: expected, ts: (baseRow.ts as number) + i, rt: i === 0 ? null : 0.1 * i,
      bytes: 2 ** 53 - 1 - i, seq: 1000 + i, size: 200 + i, status: 200,
    }, `row ${i}`)
  })
})

t.test('ClickHouse reads the attribute pairs: dotted paths, value texts', async (t) => {
  const db = await createTestDatabase(t)
  for (const statement of eventsTableStatements) await db.clickhouse.command(statement)
  const attrs = '{"user":{"id":42,"name":"ann \\"a\\" é"},"order.total":129.5,"tags":["x"],"ok":false}'
  await db.clickhouse.insertRaw(...insertFor(db, [{ ...baseRow, attrs }, baseRow]))
  const stored = await db.clickhouse.query<{ attr_keys: string[], attr_values: string[] }>('SELECT attr_keys, attr_values FROM events ORDER BY length(attr_keys) DESC')
  t.strictSame(stored, [
    { attr_keys: ['user.id', 'user.name', 'order.total', 'tags', 'ok'], attr_values: ['42', 'ann "a" é', '129.5', '["x"]', 'false'] },
    { attr_keys: [], attr_values: [] },
  ])
})
