import t from 'tap'
import zlib from 'node:zlib'
import { Readable, Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { ByteLimit } from '../../lib/ingest/byte-limit.ts'
import { createDecoder } from '../../lib/ingest/decoder.ts'
import { toHttpError } from '../../lib/errors.ts'

/** Sends `chunks` through raw limit → gzip decoder → decoded limit; resolves with what passed. */
async function limitBody (chunks: Buffer[], maxRawBytes: number, maxDecodedBytes: number, gzip = false) {
  const raw = new ByteLimit(maxRawBytes, 'raw')
  const decoded = new ByteLimit(maxDecodedBytes, 'decoded')
  const out: Buffer[] = []
  const sink = new Writable({ write (chunk: Buffer, _encoding, callback) { out.push(chunk); callback() } })
  const stages = gzip ? [raw, createDecoder('gzip')!, decoded] : [raw, decoded]
  const error = await pipeline([Readable.from(chunks, { objectMode: false }), ...stages, sink])
    .then(() => null, (err: unknown) => err)
  return { error, body: Buffer.concat(out), raw: raw.bytes, decoded: decoded.bytes }
}

t.test('raw limit: exactly the limit passes, one byte more is 413', async (t) => {
  const body = Buffer.alloc(1000, 0x61)
  const atLimit = await limitBody([body.subarray(0, 400), body.subarray(400)], 1000, 10_000)
  t.equal(atLimit.error, null)
  t.same(atLimit.body, body)
  t.equal(atLimit.raw, 1000)

  const over = await limitBody([body, Buffer.from('b')], 1000, 10_000)
  const error = toHttpError(over.error)
  t.equal(error.code, 'payload_too_large')
  t.equal(error.status, 413)
  t.equal(error.message, 'The request body is over the limit of 1000 bytes')
  t.same(over.body, body, 'the chunk that went over is not passed on')
})

t.test('decoded limit: counted after decompression, at the byte', async (t) => {
  const body = Buffer.alloc(64 * 1024, 0x61)
  const gzipped = zlib.gzipSync(body)
  const atLimit = await limitBody([gzipped], 1024 * 1024, body.length, true)
  t.equal(atLimit.error, null)
  t.equal(atLimit.decoded, body.length)
  t.ok(atLimit.raw < 1024, 'the wire bytes are few')

  const over = await limitBody([gzipped], 1024 * 1024, body.length - 1, true)
  const error = toHttpError(over.error)
  t.equal(error.code, 'payload_too_large')
  t.equal(error.message, 'The decompressed request body is over the limit of 65535 bytes')
})

t.test('limits name themselves in MiB or KiB when they are whole, else in bytes', async (t) => {
  const cases = [[16 * 1024 * 1024, 'the limit of 16 MiB'], [256 * 1024, 'the limit of 256 KiB'], [1536, 'the limit of 1536 bytes']] as const
  for (const [limit, text] of cases) {
    const { error } = await limitBody([Buffer.alloc(limit + 1)], limit, limit + 1)
    t.equal((error as Error).message, `The request body is over ${text}`)
  }
})
