// The contract between the main thread and the parse workers. The main thread never parses event
// JSON: it hands workers batches of raw line bytes and gets back bytes ready to insert into the
// events table, plus counts and the first failures. Both directions move ArrayBuffers (transferred
// with Piscina.move, never cloned).
import type { LiveOutput, LiveRequest } from '../live/live-protocol.ts'
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
  /**
   * What the worker makes of `input`; absent means 'ndjson' (one JSON event per line). An input
   * whose records are not JSON lines (a protobuf body, an Elasticsearch _bulk pair) adds its kind
   * here and its branch in parse-worker.ts.
   */
  inputKind?: InputKind
  /**
   * How the rows come out: RowBinary (row-serializer.ts), the default, or JSONCompactEachRow
   * (row-json-serializer.ts) for an engine that takes text formats only (chdb). Set by the
   * worker entry from its workerData: the engine decides, not the request.
   */
  rowFormat?: EventRowFormat
}

/** The formats a worker writes event rows in (ClickHouse#insertFormat picks one). */
export const eventRowFormats = ['RowBinary', 'JSONCompactEachRow'] as const
export type EventRowFormat = typeof eventRowFormats[number]

/**
 * The kinds of worker task (ParseTask.inputKind). Besides NDJSON, whole-body inputs decoded by
 * lib/inputs/ (one task per request): OTLP logs as protobuf or JSON, Loki push as JSON or
 * snappy-compressed protobuf. And Elasticsearch `_bulk` lines ('elastic-bulk'), read per line by
 * lib/inputs/elastic/ (parseLinesWith).
 */
export type InputKind = 'ndjson' | 'otlp-proto' | 'otlp-json' | 'loki-proto' | 'loki-json' | 'elastic-bulk'

/** A whole body a worker could not read at all (lib/inputs/): the request stores nothing. */
export interface BodyError {
  code: 'undecodable_body' | 'payload_too_large'
  message: string
}

/**
 * Where a whole-body input's decoder puts each record (parse-worker.ts parseRecords). `record`
 * numbers records from 1 in body order (the `line` of listed failures); `size` is the record's
 * bytes, stored in the `size` column.
 */
export interface RecordSink {
  add (event: Record<string, unknown>, record: number, size: number): void
  fail (record: number, code: LineFailureCode, message: string): void
}

export interface ParseResult {
  /** Rows for the events table in the task's rowFormat (RowBinary by default), columns in `eventColumns` order. Transferred. */
  rows: ArrayBuffer
  ingested: number
  /**
   * Rows whose ts is the receive time: the line carried no timestamp of its own. A body with any
   * is never recognised as a shipper's retry (docs/api.md section 6.7).
   */
  untimed?: number
  failed: number
  /** The first failures of this task, at most maxListedFailures. */
  failures: LineFailure[]
  /** Every failure of the task counted by code (metrics), listed or not. */
  failureCounts: Partial<Record<LineFailureCode, number>>
  /** Present when the task asked for it (ParseTask.live). */
  live?: LiveOutput
  /** A whole-body input's body that could not be read at all (then nothing else is set). */
  bodyError?: BodyError
  /**
   * What an input that reads the lines itself (parse-worker.ts parseLinesWith) sends back for its
   * own answer, structured-cloned: for 'elastic-bulk', lib/inputs/elastic/bulk-lines.ts BulkLines.
   */
  inputResult?: unknown
}

/**
 * Where an input that reads a task's lines itself (ParseTask.inputKind 'elastic-bulk') stores its
 * records: the reference path of a JSON line (parse-worker.ts), failures counted with the task's.
 */
export interface LineSink {
  /** Stores `value` (a parsed JSON record) as line `line`'s event of `size` bytes; returns its rejection, or null once stored. */
  addValue (value: unknown, line: number, size: number): { code: LineFailureCode, message: string } | null
  /** Fails line `line` without storing anything. */
  fail (line: number, code: LineFailureCode, message: string): void
}
