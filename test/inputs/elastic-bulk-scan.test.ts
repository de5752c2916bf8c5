// The action scan of a refused _bulk body (lib/inputs/elastic/bulk-scan.ts), held to the pairing
// of admitted bodies: the same items (action, line, document line, _index, _id) for bodies cut in
// two at every byte, with blank lines, CRLF, documents that look like actions, long documents and
// gzip; the same refusals (400 bad_request, 413, empty_body).
import t from 'tap'
import { Readable } from 'node:stream'
import { gzipSync } from 'node:zlib'
import { scanBulkItems } from '../../lib/inputs/elastic/bulk-scan.ts'
import type { ScanLimits } from '../../lib/inputs/elastic/bulk-scan.ts'
import { createDecoder } from '../../lib/ingest/decoder.ts'
import { SluiceError } from '../../lib/errors.ts'

const limits: ScanLimits = { maxRawBytes: 1 << 20, maxDecodedBytes: 1 << 20, maxLineBytes: 256, maxLines: 100 }

function scan (chunks: Buffer[], options: Partial<ScanLimits> = {}, gzip = false) {
  return scanBulkItems(Readable.from(chunks), gzip ? createDecoder('gzip') : null, { ...limits, ...options })
}

const body = [
  '{"index":{"_index":"a","_id":"x1"}}',
  '{"message":"one","index":{"nested":true}}',
  '',
  '  \r',
  '{"create":{}}\r',
  '',
  '{"index":{"_index":"looks like an action"}}', // a document: it follows an action
  '{"delete":{"_id":7}}',
  '{"update":{"_id":"u"}}',
  '{"doc":{"a":1}}',
  '{"create":{"_index":"é"}}',
  '{"pad":"' + 'y'.repeat(1000) + '"}', // a document longer than maxLineBytes: skipped, never kept
].join('\n') + '\n'

const expected = [
  { action: 'index', line: 1, docLine: 2, index: 'a', id: 'x1' },
  { action: 'create', line: 5, docLine: 7, index: null, id: null },
  { action: 'delete', line: 8, docLine: 8, index: null, id: '7' },
  { action: 'update', line: 9, docLine: 10, index: null, id: 'u' },
  { action: 'create', line: 11, docLine: 12, index: 'é', id: null },
]

t.test('the same items however the body is cut', async (t) => {
  const bytes = Buffer.from(body)
  t.strictSame((await scan([bytes])).map(({ action, line, docLine, index, id }) => ({ action, line, docLine, index, id })), expected)
  for (let cut = 1; cut < bytes.length; cut++) {
    const items = await scan([bytes.subarray(0, cut), bytes.subarray(cut)])
    const got = items.map(({ action, line, docLine, index, id }) => ({ action, line, docLine, index, id }))
    if (JSON.stringify(got) !== JSON.stringify(expected)) {
      t.strictSame(got, expected, `cut at ${cut}`)
      return
    }
  }
  const view = (items: Awaited<ReturnType<typeof scan>>) => items.map(({ action, line, docLine, index, id }) => ({ action, line, docLine, index, id }))
  t.strictSame(view(await scan([...bytes].map((b) => Buffer.from([b])))), expected, 'one byte at a time')
  t.strictSame(view(await scan([gzipSync(bytes)], {}, true)), expected, 'gzip')
  const noFinalNewline = Buffer.from('{"index":{}}\n{"a":1}')
  t.equal((await scan([noFinalNewline])).length, 1, 'the last line may lack its newline')
})

async function refusal (chunks: Buffer[], options: Partial<ScanLimits> = {}): Promise<string> {
  try {
    await scan(chunks, options)
    return 'none'
  } catch (err) {
    return err instanceof SluiceError ? err.code : String(err)
  }
}

t.test('a body Elasticsearch refuses whole is refused as when admitted', async (t) => {
  t.equal(await refusal([Buffer.from('{"message":"not an action"}\n')]), 'bad_request')
  t.equal(await refusal([Buffer.from('{"index":{}}\n{"a":1}\nnot json\n')]), 'bad_request')
  t.equal(await refusal([Buffer.from('{"index":{}}\n\n')]), 'bad_request', 'an action without its document')
  t.equal(await refusal([Buffer.from('{"index":"x"}\n{"a":1}\n')]), 'bad_request', 'an action holds an object')
  t.equal(await refusal([Buffer.from(`{"index":{"_id":"${'z'.repeat(300)}"}}\n{}\n`)]), 'bad_request', 'an action line over maxLineBytes')
  t.equal(await refusal([Buffer.from('\n \n')]), 'empty_body')
  const many = Buffer.from('{"delete":{}}\n'.repeat(101))
  t.equal(await refusal([many]), 'payload_too_large', 'more lines than the answer may list')
  t.equal(await refusal([Buffer.from(body)], { maxDecodedBytes: 100, maxRawBytes: 100 }), 'payload_too_large', 'over the size limit')
})
