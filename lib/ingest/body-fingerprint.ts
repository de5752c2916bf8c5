// A request's fingerprint for Idempotency-Key (docs/api.md section 6.7): hex SHA-256 of the
// request path and the body as sent (wire bytes, before any decoding), so that a retry of the
// same request matches and another request under the same key does not.
//
// Contract: BodyFingerprint is a pass-through stage at the head of the first attempt's pipeline;
// fingerprint() is the digest once every byte has passed, '' before (a body abandoned part-way
// has no fingerprint, and its key's answer is then replayed without a comparison).
// checkRetryBody() reads a retry's body (at most maxRawBytes: 413 beyond) and throws
// 422 idempotency_key_reused when its fingerprint differs from the first attempt's.
import { createHash } from 'node:crypto'
import type { Hash } from 'node:crypto'
import { Transform, Writable } from 'node:stream'
import type { Readable, TransformCallback } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { SluiceError } from '../errors.ts'
import { ByteLimit } from './byte-limit.ts'

export class BodyFingerprint extends Transform {
  #hash: Hash
  #digest = ''
  #ended = false

  constructor (path: string) {
    super()
    this.#hash = createHash('sha256').update(path).update('\n')
  }

  override _transform (chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.#hash.update(chunk)
    callback(null, chunk)
  }

  override _flush (callback: TransformCallback): void {
    this.#ended = true
    callback()
  }

  fingerprint (): string {
    if (this.#ended && this.#digest === '') this.#digest = this.#hash.digest('hex')
    return this.#digest
  }
}

/** Reads a retry's body to its end and refuses it when it is not the first attempt's request. */
export async function checkRetryBody (body: Readable, path: string, maxRawBytes: number, firstFingerprint: string): Promise<void> {
  if (firstFingerprint === '') return
  const print = new BodyFingerprint(path)
  await pipeline(body, new ByteLimit(maxRawBytes, 'raw'), print, new Writable({ write: (_chunk, _encoding, done) => { done() } }))
  if (print.fingerprint() !== firstFingerprint) {
    throw new SluiceError('idempotency_key_reused', 'This Idempotency-Key was used for a request with another body or path; send a new key for a new request')
  }
}
