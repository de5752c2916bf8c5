import t from 'tap'
import { frameBody, cutAt, slices } from '../helpers/framing.ts'

const bom = '\ufeff'

t.test('NDJSON lines: LF and CRLF, blank lines keep their numbers, last line without LF', async (t) => {
  const framed = await frameBody(['{"a":1}\r\n\n   \t\r\n{"b":2}\n\r\n{"c":3}'])
  t.same(framed.lines, ['{"a":1}', '', '', '{"b":2}', '', '{"c":3}'])
  t.same(framed.failures, [])
  t.equal(framed.lineCount, 6)
})

t.test('a final LF ends the last line and adds none', async (t) => {
  t.same((await frameBody(['{"a":1}\n{"b":2}\n'])).lines, ['{"a":1}', '{"b":2}'])
})

t.test('only a CR right before an LF or the end of the body goes; other CRs are data', async (t) => {
  const framed = await frameBody(['{"a":"x\ry"}\r\r\n{"b":2}\r'])
  t.same(framed.lines, ['{"a":"x\ry"}\r', '{"b":2}'])
})

t.test('a leading BOM is dropped, one further in is data', async (t) => {
  const framed = await frameBody([`${bom}{"a":1}\n${bom}{"b":2}\n`])
  t.same(framed.lines, ['{"a":1}', `${bom}{"b":2}`])
})

t.test('a body that is only the start of a BOM is data', async (t) => {
  const framed = await frameBody([Buffer.from([0xef, 0xbb])])
  t.same(framed.raw.map((line) => [...line]), [[0xef, 0xbb]])
  t.equal(framed.sawLine, true)
})

t.test('leading blank lines count, and the first line keeps its position', async (t) => {
  const framed = await frameBody([`${bom}\r\n\n  {"a":1}\n`])
  t.same(framed.lines, ['', '', '  {"a":1}'])
})

t.test('lines reach the worker as their raw bytes, invalid UTF-8 included', async (t) => {
  const every = Buffer.alloc(255)
  for (let i = 0, byte = 0; byte < 256; byte++) if (byte !== 0x0a) every[i++] = byte
  const invalid = Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0xc3, 0x22, 0x7d]) // {"<ff><fe><c3>"}
  const body = Buffer.concat([invalid, Buffer.from('\n'), every, Buffer.from('\nok')])
  const framed = await frameBody([body])
  t.same(framed.raw[0], invalid)
  t.same(framed.raw[1], every)
  t.equal(framed.lines[2], 'ok')
})

t.test('maxLineBytes: a line of exactly the limit passes, one byte more fails alone', async (t) => {
  const max = 16
  const exact = 'x'.repeat(max)
  const body = `${exact}\n${exact}y\n${exact}\r\n${exact}y\r\n${exact}\ry\nlast`
  const framed = await frameBody([body], { maxLineBytes: max })
  t.same(framed.lines, [exact, '', exact, '', '', 'last'])
  t.same(framed.failures.map((f) => [f.line, f.code]), [[2, 'line_too_long'], [4, 'line_too_long'], [5, 'line_too_long']])
  t.match(framed.failures[0].message, /16-byte limit/)
})

t.test('the default limit is 256 KiB: exactly that passes, a byte more fails', async (t) => {
  const exact = Buffer.alloc(256 * 1024, 0x61)
  const body = Buffer.concat([exact, Buffer.from('\r\n'), exact, Buffer.from('b\n{}')])
  for (const size of [64 * 1024, 256 * 1024, 100_000]) {
    const framed = await frameBody(slices(body, size))
    t.same(framed.raw.map((line) => line.length), [256 * 1024, 0, 2], `${size}-byte chunks`)
    t.same(framed.failures.map((f) => [f.line, f.code]), [[2, 'line_too_long']], `${size}-byte chunks`)
  }
})

t.test('the limit holds wherever the chunks are cut', async (t) => {
  const max = 8
  const body = Buffer.from('12345678\n123456789\n\r\n12345678\r\n1234567890123\r\nend\n123456789')
  const expected = ['12345678', '', '', '12345678', '', 'end', '']
  for (let at = 0; at <= body.length; at++) {
    const framed = await frameBody(cutAt(body, at), { maxLineBytes: max })
    t.same(framed.lines, expected, `cut at ${at}`)
    t.same(framed.failures.map((f) => f.line), [2, 5, 7], `cut at ${at}`)
  }
  const bytewise = await frameBody(slices(body, 1), { maxLineBytes: max })
  t.same(bytewise.lines, expected)
})

t.test('a 60 MiB line or array element fails alone with memory bounded by the line limit', async (t) => {
  const chunk = Buffer.alloc(256 * 1024, 0x61)
  const bodies = [
    ['NDJSON', '{"first":1}\n', '\n{"after":2}\n'],
    ['array', '[{"first":1}, {"long":"', '"}, {"after":2}]'],
  ]
  for (const [name, head, tail] of bodies) {
    const baseline = process.memoryUsage().heapUsed
    let peak = baseline
    async function * body (): AsyncGenerator<Buffer> {
      yield Buffer.from(head)
      for (let i = 0; i < 240; i++) { // 60 MiB
        peak = Math.max(peak, process.memoryUsage().heapUsed)
        yield chunk
      }
      yield Buffer.from(tail)
    }
    const framed = await frameBody(body())
    t.same(framed.lines, ['{"first":1}', '', '{"after":2}'], name)
    t.same(framed.failures.map((f) => [f.line, f.code]), [[2, 'line_too_long']], name)
    // Holding the line would take 60 MiB of heap (split2 keeps it as a string).
    const grown = peak - baseline
    t.ok(grown < 8 * 1024 * 1024, `${name}: heap grew by ${(grown / 1048576).toFixed(1)} MiB`)
  }
})

t.test('NDJSON cut at every byte: mid-line, mid-CRLF, mid-UTF-8, mid-BOM', async (t) => {
  const body = Buffer.from(`${bom}{"msg":"héllo €"}\r\n\n{"b":"日本"}\r\n{"c":"😀"}`)
  const expected = ['{"msg":"héllo €"}', '', '{"b":"日本"}', '{"c":"😀"}']
  for (let at = 0; at <= body.length; at++) {
    t.same((await frameBody(cutAt(body, at))).lines, expected, `cut at ${at}`)
  }
  t.same((await frameBody(slices(body, 1))).lines, expected, 'one byte a chunk')
  t.same((await frameBody(slices(body, 3))).lines, expected, 'three bytes a chunk')
})

t.test('JSON array body: element k is line k', async (t) => {
  const body = ' \r\n[{"a":1},\n  {"b":{"c":[1,2,{"d":"]}"}]}} , {"e":"a \\"quoted\\" ]}, string"},{"f":"\\\\"}]\n'
  const framed = await frameBody([body])
  t.same(framed.lines, [
    '{"a":1}',
    '{"b":{"c":[1,2,{"d":"]}"}]}} ',
    '{"e":"a \\"quoted\\" ]}, string"}',
    '{"f":"\\\\"}',
  ])
  t.same(framed.failures, [])
  for (const line of framed.lines) t.doesNotThrow(() => JSON.parse(line))
})

t.test('JSON array: newlines between tokens become CRs, one inside a string stays invalid', async (t) => {
  const framed = await frameBody(['[\n{\n"a": 1,\r\n"b": 2\n}\n,\n{"bad": "x\ny"}\n]'])
  t.same(framed.lines, ['{\r"a": 1,\r\r"b": 2\r}\r', '{"bad": "x\ry"}\r'].map((line) => line.replace(/\r$/, '')))
  t.same(JSON.parse(framed.lines[0]), { a: 1, b: 2 })
  t.throws(() => JSON.parse(framed.lines[1]))
})

t.test('JSON array: elements of any type go on for the worker to judge', async (t) => {
  t.same((await frameBody(['[1, "x", null, [2]]'])).lines, ['1', '"x"', 'null', '[2]'])
})

t.test('JSON array: an empty element goes on as its separator, which the worker fails', async (t) => {
  const cases: Array<[string, string[]]> = [
    ['[{"a":1},,{"b":2}]', ['{"a":1}', ',', '{"b":2}']],
    ['[{"a":1}, ]', ['{"a":1}', ']']],
    ['[,]', [',', ']']],
    ['[ ]', []],
  ]
  for (const [body, lines] of cases) {
    const framed = await frameBody([body])
    t.same(framed.lines, lines, body)
    t.same(framed.failures, [], body)
    for (const line of lines) if (line === ',' || line === ']') t.throws(() => JSON.parse(line), body)
  }
})

t.test('JSON array: a missing ] or data after it fails the element it hits', async (t) => {
  const cases: Array<[string, string[], Array<[number, RegExp]>]> = [
    ['[{"a":1}, {"b":2}', ['{"a":1}', ''], [[2, /without its closing/]]],
    ['[{"a":1}, {"b":"unterminated', ['{"a":1}', ''], [[2, /without its closing/]]],
    ['[{"a":1},', ['{"a":1}', ''], [[2, /without its closing/]]],
    ['[', [''], [[1, /without its closing/]]],
    ['[{"a":1}] {"b":2}\n{"c":3}', ['{"a":1}', ''], [[2, /after the JSON array/]]],
    ['[{"a":1}]\n \r\n', ['{"a":1}'], []],
  ]
  for (const [body, lines, failures] of cases) {
    const framed = await frameBody([body])
    t.same(framed.lines, lines, body)
    t.equal(framed.failures.length, failures.length, body)
    failures.forEach(([line, message], i) => {
      t.equal(framed.failures[i].line, line, body)
      t.equal(framed.failures[i].code, 'invalid_json', body)
      t.match(framed.failures[i].message, message, body)
    })
  }
})

t.test('JSON array: an element over maxLineBytes fails alone', async (t) => {
  const framed = await frameBody([`[{"a":"${'x'.repeat(40)}"}, {"b":1}]`], { maxLineBytes: 16 })
  t.same(framed.lines, ['', '{"b":1}'])
  t.same(framed.failures.map((f) => [f.line, f.code]), [[1, 'line_too_long']])
})

t.test('JSON array: the element limit holds wherever the chunks are cut', async (t) => {
  const exact = '{"s":"' + 'x'.repeat(10) + '"}' // 18 bytes
  const over = '{"s":"' + 'x'.repeat(11) + '"}'
  const body = Buffer.from(`[${exact},${over}, ${exact}\n,${over}\r\n]`)
  for (let at = 0; at <= body.length; at++) {
    const framed = await frameBody(cutAt(body, at), { maxLineBytes: 18 })
    t.same(framed.lines, [exact, '', exact, ''], `cut at ${at}`)
    t.same(framed.failures.map((f) => [f.line, f.code]), [[2, 'line_too_long'], [4, 'line_too_long']], `cut at ${at}`)
  }
  const bytewise = await frameBody(slices(body, 1), { maxLineBytes: 18 })
  t.same(bytewise.lines, [exact, '', exact, ''], 'one byte a chunk')
})

t.test('JSON array cut at every byte: mid-string, mid-escape, mid-UTF-8', async (t) => {
  const body = Buffer.from(`${bom}\n [ {"m":"a \\"q\\" ] } , \\\\","u":"€😀"} ,\n{"n":[{"x":"}"}]},,{"z":1} ] `)
  const expected = ['{"m":"a \\"q\\" ] } , \\\\","u":"€😀"} ', '{"n":[{"x":"}"}]}', ',', '{"z":1} ']
  for (let at = 0; at <= body.length; at++) {
    const framed = await frameBody(cutAt(body, at))
    t.same(framed.lines, expected, `cut at ${at}`)
    t.same(framed.failures, [], `cut at ${at}`)
  }
  t.same((await frameBody(slices(body, 1))).lines, expected, 'one byte a chunk')
})

t.test('past a line\'s worth of leading whitespace a body is NDJSON, so little is held back', async (t) => {
  const array = '[{"a":1}]'
  t.same((await frameBody(['\n'.repeat(5) + array], { maxLineBytes: 16 })).lines, ['{"a":1}'])
  const framed = await frameBody(['\n'.repeat(20) + array], { maxLineBytes: 16 })
  t.equal(framed.lineCount, 21)
  t.equal(framed.lines[20], array)
})

t.test('a body whose first non-blank byte is not [ is NDJSON even if [ comes later', async (t) => {
  t.same((await frameBody(['{"a":[1]}\n[{"b":2}]\n'])).lines, ['{"a":[1]}', '[{"b":2}]'])
})

t.test('runs of blank lines keep every number, cut at any place, next to cut lines too', async (t) => {
  const long = 'z'.repeat(40) // over maxLineBytes 16 below: a cut line right before a run
  const body = Buffer.from(['{"a":1}', '\n'.repeat(63), '{"b":2}', '\n'.repeat(64), '{"c":3}', '\n'.repeat(65),
    long, '\n'.repeat(5000), '{"d":4}', '\r\n'.repeat(70), '\n'.repeat(70_000), 'tail'].join('\n'))
  const expected = body.toString('latin1').split('\n').map((line) => line.endsWith('\r') ? line.slice(0, -1) : line)
  const want = expected.map((line) => line === long ? '' : line)
  for (const pieces of [[body], slices(body, 4096), slices(body, 7), cutAt(body, 100), cutAt(body, 5200)]) {
    const framed = await frameBody(pieces, { maxLineBytes: 16 })
    t.equal(framed.lineCount, expected.length)
    t.same(framed.lines, want)
    t.same(framed.failures.map((f) => [f.line, f.code]), [[expected.indexOf(long) + 1, 'line_too_long']])
  }
})

t.test('a body of blank lines ships no task; one line among megabytes of them ships a small one', async (t) => {
  // Counted without frameBody, which would hold every one of the 8 M lines.
  const { Readable, Writable } = await import('node:stream')
  const { pipeline } = await import('node:stream/promises')
  const { createLineSplitter } = await import('../../lib/ingest/line-splitter.ts')
  const { LineBatcher } = await import('../../lib/ingest/line-batcher.ts')
  const MiB = 1024 * 1024
  async function frame (chunks: Buffer[]) {
    const batcher = new LineBatcher({ onFailure: () => {} })
    const batches: Array<{ firstLine: number, lineCount: number, bytes: number }> = []
    await pipeline(Readable.from(chunks, { objectMode: false }), ...createLineSplitter({ batcher }), new Writable({
      objectMode: true,
      write (batch, _encoding, callback) { batches.push({ firstLine: batch.firstLine, lineCount: batch.lineCount, bytes: batch.input.byteLength }); callback() },
    }))
    return { batcher, batches }
  }
  const blanks = Buffer.alloc(8 * MiB, '\n')
  const none = await frame([blanks, blanks])
  t.equal(none.batcher.lineCount, 16 * MiB)
  t.equal(none.batcher.sawLine, false)
  t.same(none.batches, [], 'no task for blank lines')
  const one = await frame([blanks, Buffer.from('{"a":1}\n'), blanks])
  t.equal(one.batcher.lineCount, 16 * MiB + 1)
  t.equal(one.batcher.sawLine, true)
  t.equal(one.batches.length, 1)
  t.equal(one.batches[0].firstLine, 8 * MiB + 1, 'the line keeps its number')
  t.ok(one.batches[0].bytes <= 120 * 1024, `its task is at most taskBytes (${one.batches[0].bytes} bytes)`)
})
