import t from 'tap'
import { EventRowWriter } from '../../lib/ingest/row-serializer.ts'
import type { EventRow } from '../../lib/ingest/event-schema.ts'
import { eventColumns } from '../../lib/ingest/parse-task.ts'
import { decodeTsv } from '../helpers/tsv.ts'

const receivedAt = 1763726400000

const baseRow: EventRow = {
  ts: 1763726399123,
  host: 'web-1',
  path: '/api/v1/orders',
  method: 'GET',
  status: 200,
  rt: 0.25,
  bytes: 512,
  src: '10.0.0.1',
  userAgent: 'curl/8.5.0',
  message: null,
  filename: null,
  attrs: '{}',
}

function serialize (rows: EventRow[], orgId = 'org_1', stream = 'web'): ArrayBuffer {
  const writer = new EventRowWriter(orgId, stream, receivedAt, 64)
  rows.forEach((row, i) => { writer.write(row, 1000 + i, 200 + i) })
  return writer.finish()
}

// The reference: what ClickHouse's TSV writer produces, built the slow and obvious way.
function escapeReference (text: string): string {
  return text.replace(/[\\\t\n\r\0\b\f]/g, (ch) => ({ '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r', '\0': '\\0', '\b': '\\b', '\f': '\\f' })[ch]!)
}

t.test('columns in eventColumns order, NULL as \\N', async (t) => {
  const text = Buffer.from(serialize([baseRow, { ...baseRow, host: null, status: null, rt: null, bytes: null, message: 'm', filename: '/f.log', attrs: '{"a":1}' }])).toString()
  t.equal(text,
    'org_1\tweb\t1763726399123\t1763726400000\tweb-1\t/api/v1/orders\tGET\t200\t0.25\t512\t10.0.0.1\tcurl/8.5.0\t\\N\t\\N\t{}\t1000\t200\n' +
    'org_1\tweb\t1763726399123\t1763726400000\t\\N\t/api/v1/orders\tGET\t\\N\t\\N\t\\N\t10.0.0.1\tcurl/8.5.0\tm\t/f.log\t{"a":1}\t1001\t201\n')
  t.equal(decodeTsv(Buffer.from(text))[0].length, eventColumns.length)
})

t.test('strings: escaped like ClickHouse, UTF-8 like Buffer.from', async (t) => {
  const samples = [
    'tab\there', 'new\nline', 'cr\rlf', 'nul\0byte', 'back\\slash', 'bell\b form\f', '\\N', '\\', 'end\\',
    'quotes \' " `', 'héllo', '日本語テキスト', '😀 emoji 🚀', 'mixed\t😀\\n\n日本', '\u0001\u001f\u007f', 'x'.repeat(40) + '\t',
    'a long string with nothing to escape at all, over the short-string threshold',
    'lone high \ud800 surrogate', 'lone low \udc00', 'swapped \udc00\ud800', 'high at end \ud83d', '\ud83d',
  ]
  const rows = samples.map((text) => ({ ...baseRow, host: text, message: text, attrs: text }))
  const bytes = Buffer.from(serialize(rows))
  const expected = samples.map((text, i) => {
    const field = escapeReference(text)
    return `org_1\tweb\t1763726399123\t1763726400000\t${field}\t/api/v1/orders\tGET\t200\t0.25\t512\t10.0.0.1\tcurl/8.5.0\t${field}\t\\N\t${field}\t${1000 + i}\t${200 + i}\n`
  }).join('')
  t.ok(bytes.equals(Buffer.from(expected)), 'byte for byte')
  const decoded = decodeTsv(bytes)
  samples.forEach((text, i) => t.equal(decoded[i][4], Buffer.from(text).toString(), JSON.stringify(text)))
})

t.test('random strings match the reference byte for byte', async (t) => {
  // Seeded, so a failure reproduces; the alphabet leans on the characters that need care.
  let seed = 12345
  const random = (): number => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff
    return seed / 0x80000000
  }
  const plain = ['a', 'Z', ' ', 'N', '"', 'é', '€', '😀', '\ud800', '\udfff', '\u0080', '\u07ff', '\u0800', '\uffff', '\u0001']
  const escaped = [...plain, '\t', '\n', '\r', '\0', '\b', '\f', '\\']
  const samples: string[] = []
  for (let i = 0; i < 2000; i++) {
    // Half without escapes, so that long ones take the native write.
    const alphabet = i % 2 === 0 ? plain : escaped
    let text = ''
    const length = Math.floor(random() * 40)
    for (let j = 0; j < length; j++) text += alphabet[Math.floor(random() * alphabet.length)]
    samples.push(text)
  }
  const bytes = Buffer.from(serialize(samples.map((text) => ({ ...baseRow, path: text }))))
  const expected = samples.map((text, i) => `org_1\tweb\t1763726399123\t1763726400000\tweb-1\t${escapeReference(text)}\tGET\t200\t0.25\t512\t10.0.0.1\tcurl/8.5.0\t\\N\t\\N\t{}\t${1000 + i}\t${200 + i}\n`).join('')
  t.ok(bytes.equals(Buffer.from(expected)))
})

t.test('org and stream are escaped too', async (t) => {
  const [row] = decodeTsv(serialize([baseRow], 'org\twith tab', 'stream\\x'))
  t.equal(row[0], 'org\twith tab')
  t.equal(row[1], 'stream\\x')
})

t.test('numbers: plain decimal integers, rt that reads back exactly', async (t) => {
  const integers = [0, 1, 9, 10, 99, 100, 101, 2 ** 31 - 1, 2 ** 31, 99_999_999, 100_000_000, 100_000_001, 1763726399123, 2 ** 53 - 1]
  const decodedIntegers = decodeTsv(serialize(integers.map((n) => ({ ...baseRow, ts: n, bytes: n }))))
  integers.forEach((n, i) => {
    t.equal(decodedIntegers[i][2], String(n), `ts ${n}`)
    t.equal(decodedIntegers[i][9], String(n), `bytes ${n}`)
  })
  const rts = [0, -0, 0.5, 0.25, 1, 0.000001, 0.000010, 0.1 + 0.2, 1.081401, 123456.789012, 5e-7, 1e-7, 1e21, 1.7976931348623157e308, 2 ** 53 / 1e6, 9007199254.740993, 0.1234567]
  const decodedRts = decodeTsv(serialize(rts.map((rt) => ({ ...baseRow, rt }))))
  rts.forEach((rt, i) => {
    const text = decodedRts[i][8]!
    t.equal(Number(text), rt, `rt ${rt} as ${text}`)
    t.match(text, /^\d+(\.\d+)?(e[+-]\d+)?$/, 'a form ClickHouse reads')
  })
  t.equal(decodedRts[5][8], '0.000001', 'microseconds in plain decimal')
  t.equal(decodedRts[1][8], '0', '-0 is 0')
  t.equal(decodedRts[0][7], '200')
})

t.test('the buffer grows past its first size; finish() hands over exactly the rows', async (t) => {
  const long = { ...baseRow, message: 'm'.repeat(10_000) + '\t' }
  const rows = Array.from({ length: 50 }, () => long)
  const buffer = serialize(rows)
  const decoded = decodeTsv(buffer)
  t.equal(decoded.length, 50)
  t.equal(decoded[49][12], long.message)
  t.equal(buffer.byteLength, Buffer.from(buffer).lastIndexOf('\n') + 1, 'no slack after the last row')
  t.equal(serialize([]).byteLength, 0, 'no rows, no bytes')
  const size = buffer.byteLength
  const moved = structuredClone(buffer, { transfer: [buffer] })
  t.ok(buffer.detached, 'transferable: the original is detached')
  t.equal(moved.byteLength, size)
})
