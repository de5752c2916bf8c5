// The worker-side classification of _bulk lines (lib/inputs/elastic/bulk-lines.ts), line by line
// with no state between lines, against a recording sink; and the pairing of a task's lines into
// items (bulk-answer.ts) when a task ends between an action and its document.
import t from 'tap'
import { Buffer } from 'node:buffer'
import { lineKind, parseBulkLines } from '../../lib/inputs/elastic/bulk-lines.ts'
import type { BulkLines } from '../../lib/inputs/elastic/bulk-lines.ts'
import { BulkSummary, pairItems } from '../../lib/inputs/elastic/bulk-answer.ts'
import type { LineFailureCode, LineSink } from '../../lib/ingest/parse-task.ts'

/** Stores every object without a `bad` key; records what it was given. */
function recordingSink () {
  const stored: Array<{ value: unknown, line: number }> = []
  const failed: Array<{ line: number, code: LineFailureCode }> = []
  const sink: LineSink = {
    addValue (value, line) {
      if (value === null || typeof value !== 'object' || Array.isArray(value)) {
        failed.push({ line, code: 'not_an_object' })
        return { code: 'not_an_object', message: 'not an object' }
      }
      if ('bad' in value) {
        failed.push({ line, code: 'invalid_field' })
        return { code: 'invalid_field', message: 'bad' }
      }
      stored.push({ value, line })
      return null
    },
    fail (line, code) { failed.push({ line, code }) },
  }
  return { sink, stored, failed }
}

function parse (text: string | Buffer, firstLine = 1) {
  const rec = recordingSink()
  const out = parseBulkLines(Buffer.isBuffer(text) ? text : Buffer.from(text), firstLine, rec.sink)
  return { out, ...rec }
}

t.test('actions, update bodies and documents are told apart per line', async (t) => {
  const { out, stored, failed } = parse([
    '{"index":{"_index":"a","_id":"1"}}',
    '{"message":"doc"}',
    '{"create":{"_index":"a","_id":7}}',
    '{"update":{"_id":"u"}}',
    '{"doc":{"x":1},"doc_as_upsert":true}',
    '{"delete":{"_index":"b"}}',
    '',
    '{"index":"not an object"}', // a document: the value is no object
    '{"index":{},"extra":1}', // a document: two keys
    '{"doc":1,"other":2}', // a document: a key that is no update key
    '{"bad":1}',
    '{"broken"',
    '{"index":{}}', // the last line without its newline
  ].join('\n'), 10)
  t.same(Array.from(out.kinds), [
    lineKind.index, lineKind.stored, lineKind.create, lineKind.update, lineKind.updateBody, lineKind.delete, lineKind.blank,
    lineKind.stored, lineKind.stored, lineKind.stored, lineKind.failed, lineKind.failed, lineKind.index,
  ])
  t.equal(out.firstLine, 10)
  t.same(out.indexNames, ['a', 'b'])
  t.same(Array.from(out.indexRefs).slice(0, 6), [0, -1, 0, -1, -1, 1])
  t.same(out.idLines, [10, 12, 13])
  t.same(out.ids, ['1', '7', 'u'], 'a numeric _id comes back as a string')
  t.same(out.failures.map((f) => [f.line, f.code]), [[20, 'invalid_field'], [21, 'invalid_json']])
  t.same(stored.map((s) => s.line), [11, 17, 18, 19])
  t.same(stored[0].value, { message: 'doc' }, 'the document is stored as sent')
  t.same(failed.map((f) => f.line), [20, 21], 'failures are counted with the task\'s')
})

t.test('a task holding invalid UTF-8 fails that line alone', async (t) => {
  const body = Buffer.concat([Buffer.from('{"index":{}}\n'), Buffer.from([0x7b, 0x22, 0xff, 0x22, 0x7d, 0x0a]), Buffer.from('{"create":{}}\n{"ok":1}\n')])
  const { out, failed } = parse(body)
  t.same(Array.from(out.kinds), [lineKind.index, lineKind.failed, lineKind.create, lineKind.stored])
  t.same(failed, [{ line: 2, code: 'invalid_utf8' }])
})

t.test('pairing across tasks: an action at the end of one task takes the first line of the next', async (t) => {
  const summary = new BulkSummary()
  const first = parse('{"index":{"_id":"x"}}\n{"a":1}\n{"create":{"_index":"i"}}\n', 1).out
  const second = parse('{"b":2}\n{"delete":{"_id":"d"}}\n{"index":{}}\n{"bad":1}\n', 4).out
  // Results arrive out of order.
  summary.addResult(1, { rows: new ArrayBuffer(0), ingested: 1, failed: 1, failures: [], failureCounts: {}, inputResult: second })
  summary.addResult(0, { rows: new ArrayBuffer(0), ingested: 1, failed: 0, failures: [], failureCounts: {}, inputResult: first })
  const items = pairItems(summary)
  t.same(items.map((i) => [i.action, i.line, i.docLine, i.status, i.id, i.index, i.error?.code ?? null]), [
    ['index', 1, 2, 201, 'x', null, null],
    ['create', 3, 4, 201, null, 'i', null],
    ['delete', 5, 5, 404, 'd', null, null],
    ['index', 6, 7, 400, null, null, 'invalid_field'],
  ])
})

t.test('pairing refuses a document where an action belongs, and an action left without its document', async (t) => {
  const refuse = (tasks: BulkLines[]): unknown => {
    const summary = new BulkSummary()
    tasks.forEach((task, i) => { summary.addResult(i, { rows: new ArrayBuffer(0), ingested: 0, failed: 0, failures: [], failureCounts: {}, inputResult: task }) })
    try {
      pairItems(summary)
      return null
    } catch (err) {
      return (err as { code: string }).code
    }
  }
  t.equal(refuse([parse('{"a":1}\n').out]), 'bad_request')
  t.equal(refuse([parse('{"index":{}}\n').out]), 'bad_request')
  t.equal(refuse([parse('{"update":{}}\n{"a":1}\n').out]), 'bad_request', 'an update body that is a plain document was stored: refused whole')
  t.equal(refuse([parse('{"index":{}}\n{"index":{}}\n').out]), null, 'an action-shaped document is an item error, not a refusal')
})
