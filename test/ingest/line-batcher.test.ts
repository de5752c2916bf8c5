import t from 'tap'
import { LineBatcher } from '../../lib/ingest/line-batcher.ts'
import type { FailedLine, LineBatch } from '../../lib/ingest/line-batcher.ts'
import type { LineFailure } from '../../lib/ingest/parse-task.ts'
import { frameBody } from '../helpers/framing.ts'

function batchLines (lines: Array<string | FailedLine>, taskBytes?: number) {
  const failures: LineFailure[] = []
  const batches: LineBatch[] = []
  const batcher = new LineBatcher({ taskBytes, onFailure: (failure) => failures.push(failure) })
  for (const line of lines) {
    const batch = batcher.add(line)
    if (batch !== undefined) batches.push(batch)
  }
  const last = batcher.flush()
  if (last !== undefined) batches.push(last)
  t.equal(batcher.flush(), undefined, 'nothing is left after flush()')
  return { batches, failures, batcher }
}

t.test('lines are packed into tasks of about taskBytes, never one line per task', async (t) => {
  const line = '{"msg":"' + 'x'.repeat(190) + '"}' // 200 bytes, 201 with its LF
  const count = 10_000
  const taskBytes = 128 * 1024
  const { batches } = batchLines(Array.from({ length: count }, () => line), taskBytes)
  const perTask = Math.floor(taskBytes / 201)
  t.equal(batches.length, Math.ceil(count / perTask))
  for (const [i, batch] of batches.entries()) {
    t.equal(batch.firstLine, i * perTask + 1)
    t.equal(batch.lineCount, i < batches.length - 1 ? perTask : count - i * perTask)
    t.equal(batch.input.byteLength, batch.lineCount * 201)
  }
  t.equal(Buffer.from(batches[0].input).toString('latin1', 0, 201), line + '\n')
})

t.test('input is an exact-size ArrayBuffer of its own, safe to transfer', async (t) => {
  const { batches } = batchLines(['{"a":1}', '{"b":2}'])
  t.equal(batches.length, 1)
  const { input } = batches[0]
  t.ok(input instanceof ArrayBuffer)
  t.equal(input.byteLength, 16)
  t.equal(Buffer.from(input).toString(), '{"a":1}\n{"b":2}\n')
  structuredClone(input, { transfer: [input] })
  t.equal(input.byteLength, 0, 'transferred')
})

t.test('a line longer than taskBytes gets a task of its own, neighbours keep theirs', async (t) => {
  const big = 'y'.repeat(300)
  const { batches } = batchLines(['a', 'b', big, 'c'], 100)
  t.same(batches.map((b) => [b.firstLine, b.lineCount, Buffer.from(b.input).toString('latin1')]),
    [[1, 2, 'a\nb\n'], [3, 1, big + '\n'], [4, 1, 'c\n']])
})

t.test('add() returns the batch a line closes, before that line is in any batch', async (t) => {
  const batcher = new LineBatcher({ taskBytes: 8, onFailure: () => {} })
  t.equal(batcher.add('abc'), undefined) // 4 bytes
  t.equal(batcher.add('def'), undefined) // 8 bytes: exactly taskBytes
  const full = batcher.add('g')
  t.same(full && [full.firstLine, full.lineCount, Buffer.from(full.input).toString()], [1, 2, 'abc\ndef\n'])
  const last = batcher.flush()
  t.same(last && [last.firstLine, last.lineCount, Buffer.from(last.input).toString()], [3, 1, 'g\n'])
})

t.test('latin1 lines are written back as the bytes they stand for', async (t) => {
  const bytes = Buffer.from([0x7b, 0xe2, 0x82, 0xac, 0xff, 0x00, 0x7d])
  const { batches } = batchLines([bytes.toString('latin1')])
  t.same(Buffer.from(batches[0].input), Buffer.concat([bytes, Buffer.from('\n')]))
})

t.test('failed and blank lines are written empty and keep their numbers', async (t) => {
  const { batches, failures, batcher } = batchLines([
    '{"a":1}', { code: 'line_too_long', message: 'too long' }, ' \t\r', '', '{"b":2}',
    { code: 'invalid_json', message: 'empty element in the JSON array' },
  ])
  t.equal(Buffer.from(batches[0].input).toString(), '{"a":1}\n\n\n\n{"b":2}\n\n')
  t.same(failures, [
    { line: 2, code: 'line_too_long', message: 'too long' },
    { line: 6, code: 'invalid_json', message: 'empty element in the JSON array' },
  ])
  t.equal(batcher.lineCount, 6)
  t.equal(batcher.sawLine, true)
})

t.test('sawLine tells an empty body from one with lines', async (t) => {
  const cases: Array<[string, boolean, number]> = [
    ['', false, 0],
    ['\n\r\n  \n\t', false, 0],
    ['\ufeff\n', false, 0],
    ['[]', false, 0],
    [' [ \n ] ', false, 0],
    ['\n\n{"a":1}', true, 3],
    ['x', true, 1],
    ['[{}]', true, 1],
    ['[,]', true, 2], // two empty elements, which the worker fails: lines with content
    ['[', true, 1], // a failed line has content
  ]
  for (const [body, sawLine, lineCount] of cases) {
    const framed = await frameBody([body], { maxLineBytes: 8 })
    t.equal(framed.sawLine, sawLine, JSON.stringify(body))
    t.equal(framed.lineCount, lineCount, JSON.stringify(body))
  }
  const blankBatches = batchLines(['', '  ', '\r'])
  t.equal(blankBatches.batcher.sawLine, false, 'blank lines alone')
  t.equal(blankBatches.batcher.lineCount, 3)
  const tooLong = await frameBody(['x'.repeat(20)], { maxLineBytes: 8 })
  t.equal(tooLong.sawLine, true, 'a body whose only line is too long has a line')
})

t.test('blank lines before a batch\'s first real line are not shipped; runs inside a batch keep numbers', async (t) => {
  const batcher = new LineBatcher({ taskBytes: 64, onFailure: () => {} })
  t.equal(batcher.add(''), undefined)
  t.equal(batcher.addBlankLines(1000), undefined)
  t.equal(batcher.flush(), undefined, 'blank lines alone make no batch')
  t.equal(batcher.lineCount, 1001)
  t.equal(batcher.add('{"a":1}'), undefined) // line 1002, 8 bytes
  t.equal(batcher.addBlankLines(3), undefined) // lines 1003-1005, 3 bytes
  t.equal(batcher.add('{"b":2}'), undefined) // line 1006
  const full = batcher.addBlankLines(100) // does not fit: closes the batch, the run is skipped
  t.same(full && [full.firstLine, full.lineCount, Buffer.from(full.input).toString()], [1002, 5, '{"a":1}\n\n\n\n{"b":2}\n'])
  batcher.add('{"c":3}')
  const last = batcher.flush()
  t.same(last && [last.firstLine, last.lineCount], [1107, 1], 'the next batch starts after the run')
  t.equal(batcher.lineCount, 1107)
})
