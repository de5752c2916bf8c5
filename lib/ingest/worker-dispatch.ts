// The last stage of a request's pipeline: hands batches of lines to the parse worker pool and
// collects what comes back into the request's IngestSummary. Backpressure: at most
// `maxInFlight` tasks of one request are with the pool at a time, and none is added while the
// pool says it needs drain; until then the stage does not call back, so the pipeline stops
// reading the socket.
import { Writable } from 'node:stream'
import type { Piscina } from 'piscina'
import type { ParseResult, ParseTask } from './parse-task.ts'
import type { IngestSummary } from './ingest-summary.ts'
import type { LineBatch } from './line-batcher.ts'

export type TaskContext = Omit<ParseTask, 'input' | 'firstLine'>

/** Tasks of one request with the pool at once: enough to keep every worker busy, no more. */
const defaultMaxInFlight = 4

export class WorkerDispatch extends Writable {
  #pool: Piscina
  #summary: IngestSummary
  #context: TaskContext
  #maxInFlight: number
  #inFlight = 0
  #index = 0
  #error: unknown = null
  #waiting: (() => void) | null = null

  constructor (pool: Piscina, summary: IngestSummary, context: TaskContext, maxInFlight = defaultMaxInFlight) {
    super({ objectMode: true, highWaterMark: 1 })
    this.#pool = pool
    this.#summary = summary
    this.#context = context
    this.#maxInFlight = maxInFlight
  }

  override _write (batch: LineBatch, _enc: BufferEncoding, callback: (err?: Error | null) => void): void {
    if (this.#error) { callback(this.#error as Error); return }
    const index = this.#index++
    const task: ParseTask = { ...this.#context, input: batch.input, firstLine: batch.firstLine }
    this.#inFlight++
    this.#pool.run(task, { transferList: [batch.input] }).then((result: ParseResult) => {
      this.#summary.addResult(index, result)
    }, (err: unknown) => {
      this.#error ??= err
    }).finally(() => {
      this.#inFlight--
      const resume = this.#waiting
      this.#waiting = null
      resume?.()
    })
    this.#whenRoom(callback)
  }

  #whenRoom (callback: (err?: Error | null) => void): void {
    const ready = (): void => {
      if (this.#error) { callback(this.#error as Error); return }
      if (this.#inFlight < this.#maxInFlight && (!this.#pool.needsDrain || this.#inFlight === 0)) { callback(); return }
      this.#waiting = ready
    }
    ready()
  }

  /** Called when the input ended: waits for every task of this request. */
  override _final (callback: (err?: Error | null) => void): void {
    const done = (): void => {
      if (this.#inFlight > 0) { this.#waiting = done; return }
      callback(this.#error ? this.#error as Error : null)
    }
    done()
  }
}
