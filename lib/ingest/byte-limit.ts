// A pass-through stage that counts the bytes of a request body and fails the pipeline with
// 413 payload_too_large the moment the count passes its limit.
//
// Contract: chunks pass through unchanged while the running total is at most `limit` bytes; the
// chunk that takes it over is not passed on, and the stage errors at once, so pipeline() destroys
// every stage (the socket and the decoder included) instead of reading or inflating further. One
// instance counts wire bytes (before the decoder), another decompressed bytes (after it): the
// second is the zip-bomb guard, and its `bytes` is the size the ingest response reports.
import { Transform } from 'node:stream'
import type { TransformCallback } from 'node:stream'
import { SluiceError } from '../errors.ts'

/** Which side of the decoder a limit counts: bytes as sent, or bytes after decompression. */
export type ByteLimitKind = 'raw' | 'decoded'

const describedKind = { raw: 'request body', decoded: 'decompressed request body' } as const

export class ByteLimit extends Transform {
  readonly #limit: number
  readonly #kind: ByteLimitKind
  readonly #onBytes: ((bytes: number) => Promise<void> | undefined) | undefined
  #bytes = 0

  /**
   * `limit`: bytes that may pass (inclusive); one more fails the request. `onBytes` hears of
   * every chunk that passes (its length), e.g. to count accepted bytes against a budget; when it
   * returns a promise, the chunk waits for it (the stage reads no further: backpressure), and a
   * rejection fails the stage.
   */
  constructor (limit: number, kind: ByteLimitKind, onBytes?: (bytes: number) => Promise<void> | undefined) {
    super()
    this.#limit = limit
    this.#kind = kind
    this.#onBytes = onBytes
  }

  /** Bytes seen so far, including those of a chunk that went over the limit. */
  get bytes (): number {
    return this.#bytes
  }

  override _transform (chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.#bytes += chunk.length
    if (this.#bytes > this.#limit) {
      callback(new SluiceError('payload_too_large',
        `The ${describedKind[this.#kind]} is over the limit of ${formatBytes(this.#limit)}`))
      return
    }
    const room = this.#onBytes?.(chunk.length)
    if (room === undefined) callback(null, chunk)
    else room.then(() => { callback(null, chunk) }, callback)
  }
}

/** "64 MiB" reads better than 67108864; limits that are not whole KiB or MiB stay in bytes. */
function formatBytes (bytes: number): string {
  if (bytes >= 1024 * 1024 && bytes % (1024 * 1024) === 0) return `${bytes / (1024 * 1024)} MiB`
  if (bytes >= 1024 && bytes % 1024 === 0) return `${bytes / 1024} KiB`
  return `${bytes} bytes`
}
