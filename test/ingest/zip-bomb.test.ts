// A compressed body that inflates to 10 GiB must be stopped at the decoded-bytes limit: quickly,
// after reading little of it (bytes read, not time, is what the test holds), and without memory growing past the limit while it inflates.
import t from 'tap'
import zlib from 'node:zlib'
import { Readable, Writable } from 'node:stream'
import type { Transform } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { ByteLimit } from '../../lib/ingest/byte-limit.ts'
import { createDecoder } from '../../lib/ingest/decoder.ts'
import { createLineSplitter } from '../../lib/ingest/line-splitter.ts'
import { LineBatcher } from '../../lib/ingest/line-batcher.ts'
import { toHttpError } from '../../lib/errors.ts'
import { compressZeros } from '../helpers/compress.ts'

const MiB = 1024 * 1024
const maxDecodedBytes = 64 * MiB // the default limit
const memberMiB = 64
const members = 160 // 160 × 64 MiB = 10 GiB inflated

const bombs: Array<[string, () => Transform]> = [
  ['gzip', () => zlib.createGzip()], // members: gunzip's multi-member path
  ['zstd', () => zlib.createZstdCompress()], // frames: the decoder that restarts per frame
]

for (const [encoding, createCompressor] of bombs) {
  t.test(`a 10 GiB ${encoding} bomb stops at the decoded limit`, async (t) => {
    const member = await compressZeros(createCompressor(), memberMiB)
    async function * bomb (): AsyncGenerator<Buffer> {
      for (let i = 0; i < members; i++) yield member
    }
    const raw = new ByteLimit(16 * MiB, 'raw')
    const decoder = createDecoder(encoding)!
    const decoded = new ByteLimit(maxDecodedBytes, 'decoded')
    const batcher = new LineBatcher({ onFailure: () => {} })
    const sink = new Writable({ objectMode: true, write (_batch, _encoding, callback) { callback() } })

    const baseline = process.memoryUsage.rss()
    let peak = baseline
    const sampler = setInterval(() => { peak = Math.max(peak, process.memoryUsage.rss()) }, 5)
    const started = performance.now()
    const error = await pipeline(Readable.from(bomb(), { objectMode: false }), raw, decoder, decoded,
      ...createLineSplitter({ batcher }), sink).then(() => null, (err: unknown) => err)
    const elapsedMs = performance.now() - started
    clearInterval(sampler)
    peak = Math.max(peak, process.memoryUsage.rss())

    const httpError = toHttpError(error)
    t.equal(httpError.code, 'payload_too_large')
    t.match(httpError.message, /decompressed request body is over the limit of 64 MiB/)
    t.ok(decoded.bytes > maxDecodedBytes && decoded.bytes <= maxDecodedBytes + 256 * 1024,
      `stopped within one 256 KiB chunk of the limit (${decoded.bytes} bytes)`)
    t.ok(decoder.destroyed, 'the decoder is destroyed, so it inflates no further')
    // What the stream buffers ahead of the decoder hold, out of 10 MB (gzip) or 330 KB (zstd).
    // "Quickly" is held as work, not time: under 1 MiB read and 64 MiB + one chunk inflated.
    t.ok(raw.bytes < MiB, `read ${raw.bytes} of ${member.length * members} compressed bytes`)
    const grownMiB = (peak - baseline) / MiB
    t.ok(grownMiB < 2 * maxDecodedBytes / MiB, `RSS grew by ${grownMiB.toFixed(1)} MiB`)
    t.comment(`${encoding}: ${member.length} bytes a member; stopped after ${elapsedMs.toFixed(0)} ms, RSS +${grownMiB.toFixed(1)} MiB`)
  })
}

t.test('concurrent bombs through the server: the decoded bytes being read are bounded server-wide', async (t) => {
  // Bombs of small JSON lines: every decoded byte becomes lines, tasks and rows (about three
  // times its size) until the request's 413, so eight at once held eight limits' worth of them.
  const { startServer } = await import('../helpers/server.ts')
  const { createIngestTarget, postIngest } = await import('../helpers/ingest.ts')
  const limit = 16 * MiB
  const bombs = 16
  const s = await startServer(t, { ingest: { maxDecodedBytes: limit }, limits: { concurrentRequests: 64, maxReadingBytes: 8 * MiB } })
  const tgt = await createIngestTarget(s, 'bombs')
  const line = Buffer.from('{"path":"/bomb","status":200}\n')
  const block = Buffer.alloc(MiB)
  for (let at = 0; at < MiB; at += line.length) line.copy(block, at)
  const bomb = zlib.gzipSync(Buffer.concat(Array.from({ length: 256 }, () => block)))
  const warm = await postIngest(tgt, bomb, { 'content-encoding': 'gzip' }) // JIT and pools warm
  t.equal(warm.status, 413)
  const baseline = process.memoryUsage.rss()
  let peak = baseline
  let peakReading = 0
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage.rss())
    peakReading = Math.max(peakReading, s.app.admission.readingBytes)
  }, 5)
  const answers = await Promise.all(Array.from({ length: bombs }, () => postIngest(tgt, bomb, { 'content-encoding': 'gzip' })))
  clearInterval(sampler)
  t.same([...new Set(answers.map((a) => `${a.status} ${a.body.error}`))], ['413 payload_too_large'])
  const grownMiB = (peak - baseline) / MiB
  // The bound itself, deterministic: maxReadingBytes, plus the longest reader's body, which never
  // waits. RSS (this process's, test client included, and at the mercy of when the GC runs while
  // other test files share the cores) is reported, not asserted: alone it grows by ~50 MiB here,
  // against ~440 MiB without the bound.
  t.ok(peakReading <= 8 * MiB + limit, `decoded bytes being read peaked at ${(peakReading / MiB).toFixed(1)} MiB`)
  t.ok(peakReading > 0, 'the sampler saw the bombs being read')
  t.equal(s.app.admission.readingBytes, 0, 'every reading byte is handed back')
  t.equal(s.app.admission.uncommittedBytes, 0)
  t.comment(`${bombs} concurrent ${bomb.length}-byte JSON-line bombs (256 MiB each), decoded limit ${limit / MiB} MiB: RSS +${grownMiB.toFixed(0)} MiB`)
})
