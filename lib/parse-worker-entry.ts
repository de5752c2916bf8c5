// The parse workers' entry (lib/app.ts starts the pool on this file). It sends NDJSON tasks to
// lib/ingest/parse-worker.ts, tasks of a whole-body input (OTLP, Loki) to its decoder in
// lib/inputs/ through parseRecords, and Elasticsearch `_bulk` tasks to lib/inputs/elastic/ through
// parseLinesWith. It sits at the top of lib/ so that ingest never imports inputs (inputs import
// ingest: its pipeline, task types and event rules).
//
// workerData (set by lib/app.ts): { maxDecodedBytes, maxRecordBytes, rowFormat }: ingest.maxDecodedBytes,
// the bound on what a compressed block decoded in the worker (Loki's snappy) may expand to;
// ingest.maxLineBytes, the most a protocol's record may take (as an NDJSON line); and the format the
// storage engine takes event rows in (ClickHouse#insertFormat), RowBinary when absent.
import { workerData } from 'piscina'
import parseLines, { parseLinesWith, parseRecords } from './ingest/parse-worker.ts'
import type { EventRowFormat, ParseResult, ParseTask } from './ingest/parse-task.ts'
import { decodeBody } from './inputs/decode-body.ts'
import { parseBulkLines } from './inputs/elastic/bulk-lines.ts'

export interface ParseWorkerData {
  maxDecodedBytes: number
  /** ingest.maxLineBytes; unlimited when absent. */
  maxRecordBytes?: number
  rowFormat?: EventRowFormat
}

const { maxDecodedBytes, maxRecordBytes, rowFormat } = workerData as ParseWorkerData

export default function parseTask (task: ParseTask): ParseResult {
  if (rowFormat !== undefined) task.rowFormat = rowFormat
  if (task.inputKind === undefined || task.inputKind === 'ndjson') return parseLines(task)
  if (task.inputKind === 'elastic-bulk') return parseLinesWith(task, parseBulkLines)
  return parseRecords(task, (sink) => decodeBody(task, sink, maxDecodedBytes, maxRecordBytes))
}
