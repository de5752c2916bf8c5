// The export's lines in bytes (lib/query/export-lines.ts): JSONEachRow lines as ClickHouse writes
// them (attrs a JSON string, `/` as `\/`), cut into chunks anywhere, come out as the events API's
// JSON, attrs the object it holds.
import t from 'tap'
import fc from 'fast-check'
import { ExportLineWriter } from '../../lib/query/export-lines.ts'

/** A JSONEachRow line as ClickHouse 18.16 writes the export's SELECT (forward slashes escaped). */
function clickhouseLine (message: string, attrsText: string): string {
  return JSON.stringify({ attrs: attrsText, id: '1-2', ts: 1, message, span_id: null, received_at: 3 }).replace(/\//g, '\\/')
}

function run (input: Buffer, cuts: number[], chunkBytes = 64): { text: string, lines: number, chunks: number } {
  const writer = new ExportLineWriter(chunkBytes)
  const out: Buffer[] = []
  let from = 0
  for (const cut of [...cuts, input.length]) {
    writer.push(input.subarray(from, cut))
    from = cut
    const full = writer.take()
    if (full !== null) out.push(full)
  }
  const rest = writer.end()
  if (rest !== null) out.push(rest)
  return { text: Buffer.concat(out).toString('utf8'), lines: writer.lines, chunks: out.length }
}

const jsonValue = fc.jsonValue({ maxDepth: 4 })
const text = fc.string({ unit: 'binary', maxLength: 40 })

t.test('attrs comes back as the object it holds; every other member as ClickHouse wrote it', async (t) => {
  fc.assert(fc.property(fc.array(fc.tuple(text, fc.dictionary(text, jsonValue, { maxKeys: 5 })), { minLength: 1, maxLength: 6 }), fc.array(fc.nat(), { maxLength: 5 }), (rows, rawCuts) => {
    const input = Buffer.from(rows.map(([message, attrs]) => clickhouseLine(message, JSON.stringify(attrs)) + '\n').join(''))
    const cuts = [...new Set(rawCuts.map((c) => c % (input.length + 1)))].sort((a, b) => a - b)
    const { text, lines } = run(input, cuts)
    const events = text.split('\n').slice(0, -1).map((l) => JSON.parse(l))
    if (lines !== rows.length || events.length !== rows.length) return false
    return events.every((e, i) => JSON.stringify(e) === JSON.stringify({ id: '1-2', ts: 1, message: rows[i][0], span_id: null, attrs: rows[i][1], received_at: 3 }))
  }), { numRuns: 300 })
  t.pass('300 generated pages, cut anywhere')
})

t.test('a line cut at every byte gives the same output', async (t) => {
  const attrs = { text: 'quote " backslash \\ slash / tab \t nl \n', emoji: '🚀 é \u2028', 'k","received_at":': [1, { b: '\u0001' }] }
  const line = clickhouseLine('msg ","attrs":"x', JSON.stringify(attrs)) + '\n'
  const input = Buffer.from(line + line)
  const whole = run(input, []).text
  t.same(JSON.parse(whole.split('\n')[0]).attrs, attrs)
  for (let cut = 0; cut <= input.length; cut++) {
    if (run(input, [cut]).text !== whole) { t.fail(`cut at ${cut}`); return }
  }
  t.pass(`${input.length + 1} cuts`)
})

t.test('attrs stays a JSON string when its text nests too deep, holds a control character or a lone surrogate', async (t) => {
  const deep = '{"x":' + '['.repeat(3_000) + ']'.repeat(3_000) + '}'
  const raw = '{"a":"line\nbreak"}' // not JSON text: a raw line break inside
  const lone = '{"a":"\ud800"}'
  for (const attrsText of [deep, raw, lone]) {
    const { text } = run(Buffer.from(clickhouseLine('m', attrsText) + '\n'), [])
    t.equal(text.split('\n').length, 2, 'one line')
    t.equal(JSON.parse(text).attrs, JSON.parse(JSON.stringify(attrsText)), 'attrs as its text')
  }
})

t.test('output comes in buffers of whole lines once chunkBytes are full; an unfinished last line is an error', async (t) => {
  const line = clickhouseLine('m', '{"a":1}') + '\n'
  const input = Buffer.from(line.repeat(100))
  const cuts = Array.from({ length: 99 }, (_, i) => (i + 1) * Buffer.byteLength(line))
  const { text, chunks } = run(input, cuts, line.length * 10)
  t.equal(text, (JSON.stringify({ id: '1-2', ts: 1, message: 'm', span_id: null, attrs: { a: 1 }, received_at: 3 }) + '\n').repeat(100))
  t.ok(chunks >= 9, `${chunks} buffers`)
  const writer = new ExportLineWriter(1024)
  writer.push(Buffer.from(line.slice(0, 20)))
  t.throws(() => writer.end())
  const bad = new ExportLineWriter(1024)
  t.throws(() => { bad.push(Buffer.from('{"id":"1-2"}\n')) }, 'a line without attrs and received_at')
})
