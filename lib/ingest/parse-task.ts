// The contract between the main thread and the parse workers. The main thread never parses event
// JSON: it hands workers batches of raw line bytes and gets back bytes ready to insert into the
// events table, plus counts and the first failures. Both directions move ArrayBuffers (transferred
// with Piscina.move, never cloned).
import type { LiveStatsPartial } from '../live/live-stats.ts'
import type { LineFailureCode } from '../events/rejection.ts'

// The failure codes and the column order belong to the event model (lib/events/); re-exported
// for the ingest code that names them here.
export { lineFailureCodes } from '../events/rejection.ts'
export type { LineFailureCode } from '../events/rejection.ts'
export { eventColumns } from '../events/fields.ts'

export interface LineFailure {
  /** 1-based line number in the request body (JSON array bodies: 1-based element index). */
  line: number
  code: LineFailureCode
  message: string
}

/** At most this many failures are listed in one ingest response. */
export const maxListedFailures = 100

export interface ParseTask {
  /**
   * Raw line bytes, each line terminated by a single '\n' (CR of CRLF and the BOM already
   * removed). Blank lines are present so that line numbers stay physical: the worker skips them
   * without counting them. An exact-size buffer, transferred.
   */
  input: ArrayBuffer
  /** Line number of the first line in `input`. */
  firstLine: number
  orgId: string
  stream: string
  /** Receive time of the request, ms since the epoch; the `ts` of events that carry none. */
  receivedAt: number
  /** Oldest accepted event time (ms), from the stream's retention. */
  minTs: number
  /** Newest accepted event time (ms): receive time + 2 days. */
  maxTs: number
  /**
   * Base of the rows' `seq`: a random multiple of 2^25 per request; a row's seq is seqBase plus
   * its line number, unique per stored line, the tiebreak of event pagination.
   */
  seqBase: number
  /** Set while someone tails the stream: what the live views need from this task. */
  live: LiveRequest | null
}

/** What the tail hub asks of a task while a stream has tail clients. */
export interface LiveRequest {
  /** The distinct `q` filters of the stream's tail clients ('' matches every event); at most 31. */
  filters: string[]
  /**
   * Per filter: matching events this task serializes at most (what is left of the filter's
   * events-per-second allowance); the rest are counted as dropped. Bounds the workers' tail work
   * on a busy stream while a quiet one gets every event.
   */
  caps: number[]
}

/** What a task sends back for the live views. */
export interface LiveOutput {
  /**
   * SSE frames (`event: event`, the event's JSON in the events API's shape) of the events matching
   * at least one filter, in line order, as UTF-8 (lib/live/tail-frames.ts).
   */
  frames: Uint8Array
  /** Per event: where its frame ends in `frames` (the next one starts there). */
  ends: number[]
  /** Per event: bit i set when it matched filters[i]. */
  masks: number[]
  /** Per filter: matching events left out by `caps`. */
  dropped: number[]
  /** Aggregates over every stored event of the task. */
  stats: LiveStatsPartial
}

export interface ParseResult {
  /** RowBinary rows for the events table (row-serializer.ts), columns in `eventColumns` order. Transferred. */
  rows: ArrayBuffer
  ingested: number
  failed: number
  /** The first failures of this task, at most maxListedFailures. */
  failures: LineFailure[]
  /** Every failure of the task counted by code (metrics), listed or not. */
  failureCounts: Partial<Record<LineFailureCode, number>>
  /** Present when the task asked for it (ParseTask.live). */
  live?: LiveOutput
}

/** Lines per request that `seq` can number (2^25); a 64 MiB body has fewer non-blank lines. */
export const seqLineSpace = 2 ** 25

/** A random seqBase: 28 random bits above the line bits, so seq stays below 2^53. */
export function randomSeqBase (): number {
  return Math.floor(Math.random() * 2 ** 28) * seqLineSpace
}
