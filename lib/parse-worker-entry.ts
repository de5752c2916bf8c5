// The parse workers' entry (the piscina pool's filename, lib/app.ts): NDJSON tasks go to
// lib/ingest/parse-worker.ts, tasks of a whole-body input (ParseTask.inputKind) to its decoder
// in lib/inputs/ through parseRecords. It sits at the top of lib/ so that ingest never imports
// inputs (inputs import ingest: its pipeline, task types and event rules).
//
// workerData (set by lib/app.ts): { maxDecodedBytes }, ingest.maxDecodedBytes, the bound on what
// a compressed block decoded in the worker (Loki's snappy) may expand to.
import { workerData } from 'piscina'
import parseLines, { parseRecords } from './ingest/parse-worker.ts'
import type { ParseResult, ParseTask } from './ingest/parse-task.ts'
import { decodeBody } from './inputs/decode-body.ts'

export interface ParseWorkerData {
  maxDecodedBytes: number
}

const { maxDecodedBytes } = workerData as ParseWorkerData

export default function parseTask (task: ParseTask): ParseResult {
  if (task.inputKind === undefined || task.inputKind === 'ndjson') return parseLines(task)
  return parseRecords(task, (sink) => decodeBody(task, sink, maxDecodedBytes))
}
