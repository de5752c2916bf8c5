// EventRowJsonWriter (the embedded engine's JSONCompactEachRow rows) held to EventRowWriter
// (RowBinary, checked against its own reference encoding and ClickHouse in row-serializer.test.ts):
// the same lines through the parse worker in both formats give the same rows, field for field.
// That ClickHouse reads these bytes as meant is checked on 26.x by the round-trip tests of
// parse-worker.test.ts and row-serializer.test.ts under `npm run test:chdb`.
import t from 'tap'
import type { Test } from 'tap'
import fc from 'fast-check'
import parseLines from '../../lib/ingest/parse-worker.ts'
import type { EventRowFormat, ParseTask } from '../../lib/ingest/parse-task.ts'
import { readEventRows } from '../../lib/ingest/row-serializer.ts'
import { eventColumns } from '../../lib/events/fields.ts'
import { generateLines } from '../../bench/payload.ts'

const receivedAt = 1763726400000
const day = 86_400_000

function rowsOf (text: string, rowFormat: EventRowFormat): ArrayBuffer {
  const bytes = Buffer.from(text)
  const input = new ArrayBuffer(bytes.length)
  new Uint8Array(input).set(bytes)
  const task: ParseTask = { input, firstLine: 1, orgId: 'org_"1\\', stream: 'web', receivedAt, minTs: receivedAt - 30 * day, maxTs: receivedAt + 2 * day, seqBase: 2 ** 40, live: null, rowFormat }
  return parseLines(task).rows
}

/** JSONCompactEachRow rows as readEventRows shows RowBinary ones: numbers as text, arrays as JSON. */
function readJsonRows (rows: ArrayBuffer): Array<Array<string | null>> {
  const text = Buffer.from(rows).toString('utf8')
  t.ok(text === '' || text.endsWith('\n'), 'every row ends in a newline')
  return text.split('\n').filter((line) => line !== '').map((line) => (JSON.parse(line) as unknown[]).map((value) =>
    value === null ? null : Array.isArray(value) ? JSON.stringify(value) : String(value)))
}

function sameRows (t: Test, text: string, what: string): void {
  const binary = readEventRows(rowsOf(text, 'RowBinary'))
  const json = readJsonRows(rowsOf(text, 'JSONCompactEachRow'))
  t.equal(json.length, binary.length, `${what}: as many rows`)
  for (let i = 0; i < binary.length; i++) {
    t.equal(json[i].length, eventColumns.length)
    if (JSON.stringify(json[i]) !== JSON.stringify(binary[i])) {
      t.strictSame(json[i], binary[i], `${what}: row ${i + 1}`)
      return
    }
  }
  t.pass(`${what}: ${binary.length} rows equal field for field`)
}

t.test('30,000 generated lines: the same rows as RowBinary', async (t) => {
  sameRows(t, generateLines(30_000, 11, receivedAt).join('\n') + '\n', 'bench payload')
})

t.test('awkward strings and numbers: escapes, control bytes, astral and lone surrogates, extremes', async (t) => {
  const tricky = 'tab\there new\nline cr\r back\\slash \\N quote\' dq" nul\0 bell\u0007 bs\b ff\f ctl\u0001\u001f del\u007f é 日本 😀 \ud800'
  const lines = [
    { ts: receivedAt - 1, host: tricky, path: '/p\\a\tth', method: 'GET', status: 200, rt: 5e-7, bytes: 2 ** 53 - 1, src: '::1', extra: tricky, nested: { k: [tricky, 1, null] } },
    { ts: receivedAt - 2, rt: 1e21, status: 599, bytes: 0 },
    { ts: receivedAt - 3, log: tricky, filename: 'C:\\logs\\app.log', level: 'warn', service: '"svc"', trace_id: '\u2028\u2029' },
    { ts: receivedAt - 4, log: JSON.stringify({ host: 'inner', status: 'bad\t', rt: 0.000123 }), stream: 'stdout' },
    { ts: receivedAt - 5, host: '', path: '', rt: 0, status: 100, '': 'empty key', 'a.b': { c: { d: 'deep' } } },
    { ts: receivedAt - 6, '\ufeff': 0, '\ufeffbom': '\ufeffvalue' },
  ]
  sameRows(t, lines.map((line) => JSON.stringify(line)).join('\n') + '\n', 'tricky lines')
})

t.test('any JSON object line (fast-check): the same rows as RowBinary', async (t) => {
  const value = fc.oneof(fc.string({ unit: 'binary' }), fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.boolean(), fc.constant(null))
  const line = fc.record({
    host: fc.option(fc.string({ unit: 'binary' })),
    log: fc.option(fc.string({ unit: 'binary' })),
    status: fc.option(fc.integer({ min: 100, max: 599 })),
    rt: fc.option(fc.double({ min: 0, max: 1e9, noNaN: true })),
    bytes: fc.option(fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER })),
    attrs: fc.dictionary(fc.string({ unit: 'binary' }), fc.oneof(value, fc.dictionary(fc.string(), value))),
  }, { requiredKeys: [] })
  fc.assert(fc.property(fc.array(line, { minLength: 1, maxLength: 20 }), (records) => {
    const text = records.map((r) => {
      const { attrs, ...fields } = r
      return JSON.stringify({ ...attrs, ...Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== null)) })
    }).join('\n') + '\n'
    const binary = readEventRows(rowsOf(text, 'RowBinary'))
    const json = readJsonRows(rowsOf(text, 'JSONCompactEachRow'))
    return JSON.stringify(json) === JSON.stringify(binary)
  }), { numRuns: 300 })
  t.pass('300 generated bodies')
})
