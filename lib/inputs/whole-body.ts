// The last stage of a whole-body input's pipeline (body-task.ts), in place of the line path's
// framer, batcher and WorkerDispatch: collects the decoded body (already bounded by the route's
// decoded-bytes ByteLimit, so at most ingest.maxDecodedBytes are held) and, when it has ended,
// hands it to the parse worker pool as ONE task, moved (not copied) into the worker. The result
// goes into the request's IngestSummary; a body the worker cannot decode fails the pipeline with
// the SluiceError the worker named (400 undecodable_body, 413 payload_too_large).
import { Writable } from 'node:stream'
import type { Piscina } from 'piscina'
import { SluiceError } from '../errors.ts'
import type { IngestSummary } from '../ingest/ingest-summary.ts'
import type { TaskContext } from '../ingest/worker-dispatch.ts'
import type { BodyFormat, BodyResult, BodyTask } from './body-task.ts'
import { isInvalidBody } from './body-task.ts'

export class WholeBody extends Writable {
  readonly #pool: Piscina
  readonly #summary: IngestSummary
  readonly #task: Omit<BodyTask, 'input'>
  readonly #chunks: Buffer[] = []
  #bytes = 0

  constructor (pool: Piscina, summary: IngestSummary, context: TaskContext, format: BodyFormat, maxDecodedBytes: number) {
    super()
    this.#pool = pool
    this.#summary = summary
    this.#task = { ...context, format, maxDecodedBytes }
  }

  override _write (chunk: Buffer, _enc: BufferEncoding, callback: (err?: Error | null) => void): void {
    this.#chunks.push(chunk)
    this.#bytes += chunk.length
    callback()
  }

  override _final (callback: (err?: Error | null) => void): void {
    // One exact-size ArrayBuffer of its own, so that it can be transferred.
    const input = new ArrayBuffer(this.#bytes)
    const view = new Uint8Array(input)
    let at = 0
    for (const chunk of this.#chunks) {
      view.set(chunk, at)
      at += chunk.length
    }
    this.#chunks.length = 0
    const task: BodyTask = { ...this.#task, input }
    this.#pool.run(task, { name: 'parseBody', transferList: [input] }).then((result: BodyResult) => {
      if (isInvalidBody(result)) {
        callback(new SluiceError(result.invalid.code, result.invalid.message))
        return
      }
      this.#summary.addResult(0, result)
      callback()
    }, (err: unknown) => { callback(err as Error) })
  }
}
