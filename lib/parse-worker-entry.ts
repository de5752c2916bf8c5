// The parse workers' entry (the piscina pool's filename, lib/app.ts): NDJSON tasks go to
// lib/ingest/parse-worker.ts; a task of an input that reads its lines itself (ParseTask.inputKind)
// to its parser in lib/inputs/, through parseLinesWith. It sits at the top of lib/ so that ingest
// never imports inputs (inputs import ingest: its pipeline, task types and event rules).
import parseLines, { parseLinesWith } from './ingest/parse-worker.ts'
import type { ParseResult, ParseTask } from './ingest/parse-task.ts'
import { parseBulkLines } from './inputs/elastic/bulk-lines.ts'

export default function parseTask (task: ParseTask): ParseResult {
  if (task.inputKind === 'elastic-bulk') return parseLinesWith(task, parseBulkLines)
  return parseLines(task)
}
