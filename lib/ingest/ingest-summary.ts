// What one ingest request produced: row bytes for the writer, counts, and the first failures in
// line order. Worker results arrive out of order; failures are kept sorted by line and capped, so
// memory per request stays bounded however bad the input is.
import { maxListedFailures } from './parse-task.ts'
import type { BodyError, LineFailure, ParseResult } from './parse-task.ts'
import type { LiveOutput } from '../live/live-protocol.ts'

export class IngestSummary {
  /** Row bytes per task, indexed by task order, so the stored order follows the body. */
  readonly chunks: Buffer[] = []
  ingested = 0
  /** Rows stored with the receive time as ts (ParseResult.untimed). */
  untimed = 0
  failed = 0
  failures: LineFailure[] = []
  /** Live-view output per task (only while the stream is tailed), in task order. */
  readonly live: LiveOutput[] = []
  /** A whole-body input's body that a worker could not read (ParseResult.bodyError). */
  bodyError: BodyError | null = null
  /** Failure counts by code, for metrics (all failures, not only the listed ones). */
  readonly failedByCode = new Map<string, number>()

  addResult (index: number, result: ParseResult): void {
    if (result.bodyError !== undefined) this.bodyError ??= result.bodyError
    this.ingested += result.ingested
    this.untimed += result.untimed ?? 0
    if (result.rows.byteLength > 0) this.chunks[index] = Buffer.from(result.rows)
    if (result.live) this.live[index] = result.live
    this.failed += result.failed
    if (result.failed > 0) {
      for (const [code, n] of Object.entries(result.failureCounts)) this.failedByCode.set(code, (this.failedByCode.get(code) ?? 0) + n)
      this.#merge(result.failures)
    }
  }

  /** A failure found on the main thread (line_too_long, framing). */
  addFailure (failure: LineFailure): void {
    this.failed++
    this.failedByCode.set(failure.code, (this.failedByCode.get(failure.code) ?? 0) + 1)
    this.#merge([failure])
  }

  #merge (more: LineFailure[]): void {
    const all = this.failures.concat(more)
    all.sort((a, b) => a.line - b.line)
    this.failures = all.length > maxListedFailures ? all.slice(0, maxListedFailures) : all
  }

  /** Row buffers in body order (tasks that stored nothing leave holes, skipped here). */
  rowChunks (): Buffer[] {
    return this.chunks.filter((c) => c !== undefined)
  }
}
