// The framing of inputs whose body is one record, not lines (a protobuf or JSON export request):
// the decoded body, collected whole, becomes one worker task, so the main thread never decodes it.
//
// Contract: bytes in; at most one LineBatch out, when the body ends: the whole body in an
// exact-size ArrayBuffer of its own (transferred to the worker), firstLine 1, lineCount 1. An
// empty body yields none and leaves sawInput false. Its size is bounded upstream by the decoded
// byte limit (ingest.maxDecodedBytes), so holding it is bounded too.
import { Transform } from 'node:stream'
import type { TransformCallback } from 'node:stream'
import type { LineBatch } from './line-batcher.ts'

export class BodyCollector extends Transform {
  readonly #chunks: Buffer[] = []
  #bytes = 0

  constructor () {
    super({ readableObjectMode: true })
  }

  /** Whether the body held any byte; final once this stream has ended. */
  get sawInput (): boolean {
    return this.#bytes > 0
  }

  override _transform (chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.#chunks.push(chunk)
    this.#bytes += chunk.length
    callback()
  }

  override _flush (callback: TransformCallback): void {
    if (this.#bytes === 0) { callback(); return }
    const input = new ArrayBuffer(this.#bytes)
    const view = new Uint8Array(input)
    let at = 0
    for (const chunk of this.#chunks) {
      view.set(chunk, at)
      at += chunk.length
    }
    this.#chunks.length = 0
    const batch: LineBatch = { input, firstLine: 1, lineCount: 1 }
    callback(null, batch)
  }
}
