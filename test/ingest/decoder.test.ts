import t from 'tap'
import zlib from 'node:zlib'
import { Readable, Writable } from 'node:stream'
import type { Transform } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { promisify } from 'node:util'
import { createDecoder } from '../../lib/ingest/decoder.ts'
import { SluiceError, toHttpError } from '../../lib/errors.ts'
import { cutAt, slices } from '../helpers/framing.ts'
import { compressZeros } from '../helpers/compress.ts'
import { waitFor } from '../helpers/wait-for.ts'

const deflateAsync = promisify(zlib.deflate)

const text = Buffer.from(Array.from({ length: 2000 }, (_, i) => `{"i":${i},"msg":"héllo wörld"}\n`).join(''))

const encoders: Record<string, (body: Buffer) => Buffer> = {
  gzip: (body) => zlib.gzipSync(body),
  'x-gzip': (body) => zlib.gzipSync(body),
  deflate: (body) => zlib.deflateSync(body),
  'deflate (raw)': (body) => zlib.deflateRawSync(body),
  br: (body) => zlib.brotliCompressSync(body),
  zstd: (body) => zlib.zstdCompressSync(body),
}
const headerOf = (name: string): string => name.replace(' (raw)', '')

async function decode (encoding: string, chunks: Buffer[]): Promise<Buffer> {
  const decoder = createDecoder(encoding)
  if (decoder === null) throw new Error(`no decoder for ${encoding}`)
  const out: Buffer[] = []
  await pipeline(Readable.from(chunks, { objectMode: false }), decoder, new Writable({
    write (chunk: Buffer, _encoding, callback) { out.push(chunk); callback() },
  }))
  return Buffer.concat(out)
}

async function decodeError (encoding: string, chunks: Buffer[]): Promise<SluiceError> {
  const error = await decode(encoding, chunks).then(() => null, (err: unknown) => err)
  if (error === null) throw new Error('decoding succeeded')
  return toHttpError(error)
}

t.test('identity and no header need no decoder', async (t) => {
  for (const value of [undefined, '', 'identity', ' Identity ']) t.equal(createDecoder(value), null, String(value))
})

t.test('every encoding round-trips, with any case and surrounding whitespace', async (t) => {
  for (const [name, encode] of Object.entries(encoders)) {
    const encoded = encode(text)
    t.same(await decode(headerOf(name), [encoded]), text, name)
    t.same(await decode(` ${headerOf(name).toUpperCase()}\t`, slices(encoded, 1000)), text, `${name}, upper case, in pieces`)
  }
})

t.test('unknown and stacked encodings are refused before any byte is read', async (t) => {
  for (const value of ['compress', 'gzip, br', 'gzip,identity', 'snappy', 'br;q=1']) {
    t.throws(() => createDecoder(value), { code: 'unsupported_content_encoding', status: 400 }, value)
  }
  t.throws(() => createDecoder('gzip, br'), { message: /stacks several codings/ })
})

/** Enough text for several deflate blocks, little enough to decode at every cut quickly. */
const small = text.subarray(0, 8000)

t.test('concatenated gzip members and zstd frames all decode, cut at every byte', async (t) => {
  const parts = [small.subarray(0, 700), small.subarray(700, 701), small.subarray(701)]
  const bodies: Array<[string, Buffer]> = [
    ['gzip', Buffer.concat(parts.map((part) => zlib.gzipSync(part)))],
    ['zstd', Buffer.concat(parts.map((part) => zlib.zstdCompressSync(part)))],
  ]
  for (const [encoding, body] of bodies) {
    t.same(await decode(encoding, [body]), small, `${encoding} in one chunk`)
    let wrong = 0
    for (let at = 0; at <= body.length; at++) {
      if (!(await decode(encoding, cutAt(body, at))).equals(small)) wrong++
    }
    t.equal(wrong, 0, `${encoding} cut at each of ${body.length + 1} places`)
    t.same(await decode(encoding, slices(body, 1)), small, `${encoding} one byte a chunk`)
  }
})

t.test('zlib-wrapped and raw deflate decode cut at every byte, the sniffed byte alone too', async (t) => {
  for (const name of ['deflate', 'deflate (raw)']) {
    const body = encoders[name](small)
    let wrong = 0
    for (let at = 0; at <= body.length; at++) {
      if (!(await decode('deflate', cutAt(body, at))).equals(small)) wrong++
    }
    t.equal(wrong, 0, name)
  }
})

t.test('corrupt data is 400 malformed_body for every encoding', async (t) => {
  for (const [name, encode] of Object.entries(encoders)) {
    const encoded = encode(text)
    const corrupt = Buffer.from(encoded)
    // Damage the start of the compressed data: headers and first block, which every format checks.
    for (let i = 2; i < Math.min(18, corrupt.length); i++) corrupt[i] ^= 0x5a
    const error = await decodeError(headerOf(name), [corrupt])
    t.equal(error.code, 'malformed_body', `${name}: ${(error.cause as Error)?.message}`)
    t.equal(error.status, 400)
    t.equal((await decodeError(headerOf(name), [Buffer.from('this is not compressed at all')])).code, 'malformed_body', `${name}: plain text`)
  }
})

t.test('truncated data is 400 malformed_body for every encoding, wherever it stops', async (t) => {
  for (const [name, encode] of Object.entries(encoders)) {
    const encoded = encode(text)
    for (const keep of [0, 1, 2, Math.floor(encoded.length / 2), encoded.length - 1]) {
      const error = await decodeError(headerOf(name), [encoded.subarray(0, keep)])
      t.equal(error.code, 'malformed_body', `${name} cut to ${keep} bytes: ${(error.cause as Error)?.message}`)
    }
  }
})

t.test('bytes after the end of the compressed data are malformed, not ignored', async (t) => {
  for (const name of ['deflate', 'deflate (raw)', 'br', 'gzip', 'zstd']) {
    const encoded = Buffer.concat([encoders[name](text), Buffer.from('trailing junk')])
    t.equal((await decodeError(headerOf(name), [encoded])).code, 'malformed_body', name)
  }
})

t.test('a zstd frame whose window is over 8 MiB is refused', async (t) => {
  // Streamed, so the compressor cannot shrink the 16 MiB window to the size of the input.
  const compressor = zlib.createZstdCompress({ params: { [zlib.constants.ZSTD_c_windowLog]: 24 } })
  const wide = await new Promise<Buffer>((resolve, reject) => {
    const out: Buffer[] = []
    compressor.on('data', (chunk: Buffer) => out.push(chunk)).on('end', () => resolve(Buffer.concat(out))).on('error', reject)
    compressor.end(text)
  })
  const error = await decodeError('zstd', [wide])
  t.equal(error.code, 'malformed_body')
  t.equal((error.cause as { code?: string }).code, 'ZSTD_error_frameParameter_windowTooLarge')
})

/** `n` one-byte deflates, one after another: each a round trip through libuv's thread pool. */
async function threadPoolTrips (n: number): Promise<void> {
  for (let i = 0; i < n; i++) await deflateAsync(Buffer.alloc(1))
}

t.test('an unread decoder stops inflating: backpressure reaches zlib', async (t) => {
  const MiB = 1024 * 1024
  const compressors: Record<string, () => Transform> = {
    gzip: () => zlib.createGzip(),
    deflate: () => zlib.createDeflate(),
    'deflate (raw)': () => zlib.createDeflateRaw(),
    br: () => zlib.createBrotliCompress({ params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 4 } }),
    zstd: () => zlib.createZstdCompress(),
  }
  for (const [name, createCompressor] of Object.entries(compressors)) {
    const body = await compressZeros(createCompressor(), 32)
    const decoder = createDecoder(headerOf(name))!
    decoder.end(body)
    // Nothing reads it. Once its buffer is full, a decoder that wrongly went on would inflate
    // another chunk (16 KiB of output) on each trip through libuv's thread pool: let 256 trips
    // pass (4 MiB worth), on the clock of the work, not the wall.
    await waitFor(() => decoder.readableLength >= decoder.readableHighWaterMark, { what: `${name}: the decoder's buffer to fill` })
    await threadPoolTrips(256)
    t.ok(decoder.readableLength <= MiB, `${name}: ${decoder.readableLength} bytes buffered`)
    let total = 0
    for await (const chunk of decoder) total += (chunk as Buffer).length
    t.equal(total, 32 * MiB, `${name}: all of it once read`)
  }
})
