// The decompression stage of an ingest request, chosen by its Content-Encoding.
//
// Contract: `createDecoder()` returns null for identity (or no header), a stream that turns the
// encoded body into the decoded one for gzip, deflate, br and zstd, and throws 400
// unsupported_content_encoding for anything else, stacked codings ("gzip, br") included, before
// a byte of the body is read. Corrupt or truncated data (an empty body included) errors with
// zlib's own error, coded `Z_*`, `ERR_TRAILING_JUNK_AFTER_STREAM_END`, `ERR__ERROR_*` (brotli) or
// `ZSTD_error_*`, which toHttpError() answers with 400 malformed_body. The streams honour
// backpressure and stop inflating when destroyed, so the decoded-bytes ByteLimit after this stage
// bounds a zip bomb to its limit plus a chunk. A gzip or br stream holds its zlib context from
// the start: destroy it if the pipeline never runs (deflate and zstd make theirs on the first byte).
//
// Accepted forms, as clients send them:
// - gzip (and its RFC 9110 alias x-gzip): any number of concatenated members.
// - deflate: RFC 9110 means zlib-wrapped, but raw deflate is sent often enough that browsers and
//   undici accept both; the first byte tells them apart.
// - br, zstd: one stream; zstd may be several concatenated frames.
// Bytes after the end of a deflate or br stream are an error, not silently dropped data.
import { Duplex } from 'node:stream'
import type { Transform } from 'node:stream'
import zlib from 'node:zlib'
import { SluiceError } from '../errors.ts'

/**
 * Bytes per output chunk. 256 KiB inflates about twice as fast as zlib's 16 KiB default, having
 * fewer thread-pool round trips (gzip of a 64 MiB NDJSON body: about 330 to 720 MiB/s).
 */
const chunkSize = 256 * 1024

/**
 * RFC 9659: HTTP zstd senders use windows of at most 8 MiB (2^23 bytes). Refusing larger ones keeps
 * a request's decoder memory at 8 MiB instead of zstd's default ceiling of 128 MiB.
 */
const zstdWindowLogMax = 23

/** A zlib decompression stream; `bytesWritten` counts the input bytes it has consumed. */
type ZlibStream = Transform & zlib.Zlib

export function createDecoder (contentEncoding: string | undefined): Duplex | null {
  const coding = (contentEncoding ?? '').trim().toLowerCase()
  switch (coding) {
    case '':
    case 'identity':
      return null
    case 'gzip':
    case 'x-gzip':
      return zlib.createGunzip({ chunkSize })
    case 'br':
      return zlib.createBrotliDecompress({ chunkSize, rejectGarbageAfterEnd: true })
    case 'deflate':
      return new LazyDecoder(createInflate)
    case 'zstd':
      return new LazyDecoder(createZstdDecompress)
  }
  const message = coding.includes(',')
    ? `Content-Encoding "${coding}" stacks several codings: send the body with one of gzip, deflate, br or zstd`
    : `Content-Encoding "${coding}" is not supported: use gzip, deflate, br, zstd or identity`
  throw new SluiceError('unsupported_content_encoding', message)
}

/**
 * Zlib-wrapped deflate starts with a CMF byte whose low nibble is 8 (CM = deflate); raw deflate
 * starts with a block header, whose low bits (BFINAL, BTYPE, then stored-block padding that
 * encoders write as zeros) never read 8 from an encoder. undici sniffs the same way.
 */
function createInflate (firstByte: number | undefined): ZlibStream {
  const options = { chunkSize, rejectGarbageAfterEnd: true }
  return firstByte === undefined || (firstByte & 0x0f) === 8 ? zlib.createInflate(options) : zlib.createInflateRaw(options)
}

function createZstdDecompress (): ZlibStream {
  return zlib.createZstdDecompress({ chunkSize, params: { [zlib.constants.ZSTD_d_windowLogMax]: zstdWindowLogMax } })
}

/**
 * Runs a zlib stream made from the first byte of input, and a fresh one for input left over when a
 * stream ends before its input does: Node's zstd decoder stops at the end of the first frame of a
 * write and drops the rest (nodejs/node#64741), so each further frame gets a decoder of its own.
 * Backpressure holds both ways: the inner stream is paused while this one's readable side is
 * full, and a write is acknowledged only once the inner stream has consumed all of it.
 */
class LazyDecoder extends Duplex {
  readonly #createInner: (firstByte: number | undefined) => ZlibStream
  #inner: ZlibStream | null = null
  /** Bytes written to #inner; its bytesWritten says how many of them it consumed. */
  #fed = 0
  /** The bytes last written to #inner, held until they are all consumed, and their callback. */
  #pending: Buffer | null = null
  #callback: ((err?: Error | null) => void) | null = null
  /** The tail of #pending that a stream which ended did not take; the next stream starts with it. */
  #rest: Buffer | null = null
  /** #inner emitted 'end' while a write was pending: its output is all out. */
  #innerEnded = false

  constructor (createInner: (firstByte: number | undefined) => ZlibStream) {
    super()
    this.#createInner = createInner
  }

  override _write (chunk: Buffer, _encoding: BufferEncoding, callback: (err?: Error | null) => void): void {
    if (chunk.length === 0) { callback(); return }
    this.#callback = callback
    this.#feed(chunk)
  }

  override _final (callback: (err?: Error | null) => void): void {
    // An empty body still goes through zlib, which reports it as truncated, like gunzip does.
    (this.#inner ?? this.#attach(undefined)).end()
    callback()
  }

  override _read (): void {
    this.#inner?.resume()
  }

  override _destroy (err: Error | null, callback: (err?: Error | null) => void): void {
    this.#inner?.destroy()
    callback(err)
  }

  #feed (bytes: Buffer): void {
    const inner = this.#inner ?? this.#attach(bytes[0])
    this.#pending = bytes
    this.#fed += bytes.length
    inner.write(bytes, this.#onWritten)
  }

  #attach (firstByte: number | undefined): ZlibStream {
    const inner = this.#createInner(firstByte)
    inner.on('data', this.#onData)
    inner.on('end', this.#onEnd)
    inner.on('error', this.#onError)
    this.#inner = inner
    this.#fed = 0
    return inner
  }

  readonly #onData = (data: Buffer): void => {
    if (!this.push(data)) this.#inner?.pause()
  }

  readonly #onError = (err: Error): void => {
    this.destroy(err)
  }

  /** Zlib calls back once it has consumed what it will of the write; an error comes via 'error'. */
  readonly #onWritten = (err?: Error | null): void => {
    if (err || this.destroyed || this.#inner === null || this.#pending === null) return
    const unread = this.#fed - this.#inner.bytesWritten
    if (unread > 0) {
      // The stream ended mid-write: the rest goes to the next one once this one's output is out.
      this.#rest = this.#pending.subarray(this.#pending.length - unread)
      this.#startNextIfReady()
      return
    }
    const callback = this.#callback
    this.#pending = null
    this.#callback = null
    callback?.()
  }

  /** 'end' and the write callback of a stream that ended mid-write come in either order. */
  readonly #onEnd = (): void => {
    if (this.#pending === null) {
      this.push(null) // ended by _final: the body is done
      return
    }
    this.#innerEnded = true
    this.#startNextIfReady()
  }

  #startNextIfReady (): void {
    const rest = this.#rest
    if (!this.#innerEnded || rest === null) return
    this.#rest = null
    this.#innerEnded = false
    this.#inner = null
    this.#feed(rest)
  }
}
