// Size limits at their boundaries: the wire and decoded caps answer 413 and store nothing; a gzip
// bomb stops at the cap without memory growing past it; an over-long line fails alone.
import t from 'tap'
import { gzipSync, createGzip } from 'node:zlib'
import { Readable } from 'node:stream'
import { startServer } from '../helpers/server.ts'
import type { TestServer } from '../helpers/server.ts'
import { countEvents, createIngestTarget, postIngest } from '../helpers/ingest.ts'
import type { IngestTarget } from '../helpers/ingest.ts'

const maxRaw = 4096
const maxDecoded = 16384
const maxLine = 1024
let s: TestServer
let tgt: IngestTarget
t.before(async () => {
  s = await startServer(t, { ingest: { maxRawBytes: maxRaw, maxDecodedBytes: maxDecoded, maxLineBytes: maxLine } })
  tgt = await createIngestTarget(s, 'limits')
})

/** A body of exactly `size` bytes of valid NDJSON lines. */
function bodyOf (size: number): Buffer {
  const line = '{"path":"/x"}\n'
  const count = Math.floor(size / line.length)
  const rest = size - count * line.length
  let text = line.repeat(count)
  if (rest > 0) text = text.slice(0, -1) + ' '.repeat(rest) + '\n'
  const b = Buffer.from(text)
  if (b.length !== size) throw new Error('bad body size')
  return b
}

t.test('raw body: the limit passes, one byte more is 413 and stores nothing', async (t) => {
  const before = await countEvents(tgt)
  const ok = await postIngest(tgt, bodyOf(maxRaw))
  t.equal(ok.status, 200)
  const stored = await countEvents(tgt)
  t.equal(stored - before, ok.body.ingested)
  const over = await postIngest(tgt, bodyOf(maxRaw + 1))
  t.equal(over.status, 413)
  t.equal(over.body.error, 'payload_too_large')
  // Without Content-Length (chunked), the count happens while streaming.
  const chunked = await postIngest(tgt, Readable.from([bodyOf(maxRaw + 1)]))
  t.equal(chunked.status, 413)
  t.equal(chunked.body.error, 'payload_too_large')
  t.equal(await countEvents(tgt), stored)
})

t.test('decoded body: the limit passes, one byte more is 413 and stores nothing', async (t) => {
  const before = await countEvents(tgt)
  const ok = await postIngest(tgt, gzipSync(bodyOf(maxDecoded)), { 'content-encoding': 'gzip' })
  t.equal(ok.status, 200)
  t.equal(ok.body.bytes, maxDecoded)
  const stored = await countEvents(tgt)
  t.equal(stored - before, ok.body.ingested)
  const over = await postIngest(tgt, gzipSync(bodyOf(maxDecoded + 1)), { 'content-encoding': 'gzip' })
  t.equal(over.status, 413)
  t.equal(over.body.error, 'payload_too_large')
  t.equal(await countEvents(tgt), stored)
})

t.test('a gzip bomb stops at the cap, fast, without memory growing past it', async (t) => {
  const big = await startServer(t) // default caps: 16 MiB raw, 64 MiB decoded
  const bigTgt = await createIngestTarget(big, 'bomb')
  // 512 MiB of zeros (8× the cap) compressed to about 0.5 MiB, streamed so the test holds little memory.
  const zeros = Buffer.alloc(1024 * 1024)
  let left = 512
  const source = new Readable({ read () { this.push(left-- > 0 ? zeros : null) } })
  const bomb = await new Promise<Buffer>((resolve, reject) => {
    const parts: Buffer[] = []
    source.pipe(createGzip({ level: 9 })).on('data', (c: Buffer) => parts.push(c)).on('end', () => resolve(Buffer.concat(parts))).on('error', reject)
  })
  t.ok(bomb.length < 16 * 1024 * 1024, `the bomb is ${bomb.length} bytes on the wire`)
  global.gc?.()
  const rssBefore = process.memoryUsage().rss
  const r = await postIngest(bigTgt, bomb, { 'content-encoding': 'gzip' })
  t.equal(r.status, 413)
  t.equal(r.body.error, 'payload_too_large')
  const grew = process.memoryUsage().rss - rssBefore
  t.ok(grew < 3 * 64 * 1024 * 1024, `RSS grew by ${Math.round(grew / 1048576)} MiB (cap 64 MiB)`)
  t.equal(await countEvents(bigTgt), 0)
})

t.test('a line over the limit fails alone; a line at the limit passes', async (t) => {
  const own = await createIngestTarget(s, 'longlines')
  const at = JSON.stringify({ path: '/at', pad: '' }).length
  const exact = JSON.stringify({ path: '/at', pad: 'x'.repeat(maxLine - at) })
  const over = JSON.stringify({ path: '/over', pad: 'x'.repeat(maxLine - at + 1) })
  t.equal(Buffer.byteLength(exact), maxLine)
  const r = await postIngest(own, [exact, over, '{"path":"/after"}'].join('\n'))
  t.equal(r.status, 200)
  t.match(r.body, { ingested: 2, failed: 1 })
  t.same(r.body.failures.map((f: { line: number, code: string }) => [f.line, f.code]), [[2, 'line_too_long']])
})

t.test('an uncompressed body is held to the decoded limit too, when that one is lower', async (t) => {
  const own = await startServer(t, { ingest: { maxRawBytes: 16384, maxDecodedBytes: 4096, maxLineBytes: maxLine } })
  const target = await createIngestTarget(own, 'decoded-lower')
  const ok = await postIngest(target, bodyOf(4096))
  t.equal(ok.status, 200)
  const over = await postIngest(target, bodyOf(4097))
  t.equal(over.status, 413)
  t.equal(over.body.error, 'payload_too_large')
  t.equal(await countEvents(target), ok.body.ingested, 'the refused body stored nothing')
})
