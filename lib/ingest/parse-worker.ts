// The piscina worker: one ParseTask of raw line bytes in, RowBinary rows for the events table,
// counts and the first failures out (contract in parse-task.ts). Lines are numbered from
// task.firstLine, blank ones included; a blank line (only spaces, tabs or CRs) is skipped and not
// counted. A failing line fails alone with its code, and nothing a client sends makes this throw.
// A stray CR before the '\n' (CRLF is stripped upstream, "\r\r\n" leaves one) is JSON whitespace,
// so the line parses as if it were not there.
//
// Hot path: a task is checked for UTF-8 in one native call, then each line goes through the
// LineScanner (line-scanner.ts), which reads it from its bytes into an event row
// (lib/events/event-row.ts) without JSON.parse or JS strings. A line the scanner declines (any
// failing line, and the rare shapes it leaves alone) takes the reference path: decoded,
// JSON.parse, normalizeEvent (lib/events/normalize.ts) into the same row shape, which words every
// failure. Either row then goes to the one writer (EventRowWriter#write) and, while the stream is
// tailed, the one live entry point (LiveCollector#add). Rows are written into one buffer (row-serializer.ts) that piscina
// transfers back. Only a task that holds invalid UTF-8 takes the per-line path throughout, so that
// the bad line fails alone.
import { Buffer, isUtf8 } from 'node:buffer'
import { move, transferableSymbol, valueSymbol } from 'piscina'
import { EventRow } from '../events/event-row.ts'
import { parseEventJson } from '../events/json-integers.ts'
import { normalizeEvent } from '../events/normalize.ts'
import type { TimeBounds } from '../events/normalize.ts'
import type { EventRejection } from '../events/rejection.ts'
import { EventRowWriter } from './row-serializer.ts'
import { EventRowJsonWriter } from './row-json-serializer.ts'
import { LineScanner, blankLine, scannedRow } from './line-scanner.ts'
import { wrappedBodyMessage } from './wrapped-body.ts'
import { LiveCollector } from '../live/live-collector.ts'
import { maxListedFailures } from './parse-task.ts'
import type { BodyError, LineFailure, LineFailureCode, LineSink, ParseResult, ParseTask, RecordSink } from './parse-task.ts'
import type { LiveOutput } from '../live/live-protocol.ts'

const newline = 10

/**
 * A ParseResult that piscina moves instead of cloning: the worker posts [valueSymbol] and lists
 * [transferableSymbol] as the transfer list. Structured clone copies own string-keyed fields
 * only, so the main thread receives a plain ParseResult.
 */
class MovableParseResult implements ParseResult {
  rows: ArrayBuffer
  ingested: number
  untimed: number
  failed: number
  failures: LineFailure[]
  failureCounts: Partial<Record<LineFailureCode, number>>
  declare live?: LiveOutput
  declare inputResult?: unknown

  constructor (rows: ArrayBuffer, ingested: number, untimed: number, failed: number, failures: LineFailure[],
    failureCounts: Partial<Record<LineFailureCode, number>>, live: LiveOutput | undefined, inputResult?: unknown) {
    this.rows = rows
    this.ingested = ingested
    this.untimed = untimed
    this.failed = failed
    this.failures = failures
    this.failureCounts = failureCounts
    if (live) this.live = live
    if (inputResult !== undefined) this.inputResult = inputResult
  }

  get [transferableSymbol] (): ArrayBuffer { return this.rows }
  get [valueSymbol] (): ParseResult { return this }
}

/** Accumulates one task's rows, counts and failures. */
export class TaskOutput implements LineSink {
  readonly #rows: EventRowWriter | EventRowJsonWriter
  readonly bounds: TimeBounds
  readonly #seqBase: number
  readonly #live: LiveCollector | null
  #ingested = 0
  #untimed = 0
  #failed = 0
  readonly #failures: LineFailure[] = []
  readonly #failureCounts: Partial<Record<LineFailureCode, number>> = {}

  constructor (task: ParseTask) {
    // RowBinary rows come out about the size of the JSON lines plus the attributes again as
    // arrays (1.12x on bench/payload.ts, more for lines with many attributes), and each write
    // reserves its row's worst case first. A regrowth copies everything written so far: with
    // 1.125x, as before the attribute arrays, most tasks grew once (~7% of the ingest's worker
    // CPU, bench/README.md). Room never written is never touched (allocUnsafeSlow), and finish()
    // hands over an exact-size copy.
    // JSONCompactEachRow (the embedded engine's text format) comes out about the same size plus
    // the quotes and commas.
    const room = (perByte: number): number => Math.ceil(task.input.byteLength * perByte) + 4096
    this.#rows = task.rowFormat === 'JSONCompactEachRow'
      ? new EventRowJsonWriter(task.orgId, task.stream, task.receivedAt, room(1.75))
      : new EventRowWriter(task.orgId, task.stream, task.receivedAt, room(1.5))
    // ts is a UInt64 column: a negative bound would let a negative ts fail the whole insert.
    this.bounds = { receivedAt: task.receivedAt, minTs: Math.max(task.minTs, 0), maxTs: task.maxTs }
    this.#seqBase = task.seqBase
    this.#live = task.live ? new LiveCollector(task.live, task.receivedAt) : null
  }

  /** Stores `row`, read from line `line` of `size` bytes. */
  addRow (row: EventRow, line: number, size: number): void {
    const seq = this.#seqBase + line
    this.#rows.write(row, seq, size)
    if (this.#live !== null) this.#live.add(row, seq)
    if (!row.tsGiven) this.#untimed++
    this.#ingested++
  }

  /**
   * Stores an event given as a JS value in the line shape (docs/api.md section 6.4): a parsed
   * line, or a record a protocol adapter built. Line `line` (its number in the request), of
   * `size` bytes. The rules and failures are the reference path's.
   */
  addValue (value: unknown, line: number, size: number): EventRejection | null {
    const rejection = normalizeEvent(value, this.bounds, referenceRow)
    if (rejection !== null) {
      this.fail(line, rejection.code, rejection.message)
      return rejection
    }
    this.addRow(referenceRow, line, size)
    return null
  }

  /**
   * Parses text[start, end), one NDJSON line without its '\n', of `size` bytes in the body. A
   * wrapper of many records fails it with wrapped_body (wrapped-body.ts).
   */
  addLine (text: string, start: number, end: number, line: number, size: number): void {
    if (isBlank(text, start, end)) return
    let value: unknown
    try {
      value = parseEventJson(text.slice(start, end))
    } catch (err) {
      this.fail(line, 'invalid_json', (err as SyntaxError).message)
      return
    }
    // A wrapper of many records (an OTLP export, a Loki push, {"logs":[...]}) is no event.
    const wrapped = wrappedBodyMessage(value)
    if (wrapped !== null) {
      this.fail(line, 'wrapped_body', wrapped)
      return
    }
    this.addValue(value, line, size)
  }

  fail (line: number, code: LineFailureCode, message: string): void {
    if (this.#failed < maxListedFailures) this.#failures.push({ line, code, message })
    this.#failed++
    this.#failureCounts[code] = (this.#failureCounts[code] ?? 0) + 1
  }

  finish (inputResult?: unknown): MovableParseResult {
    return new MovableParseResult(this.#rows.finish(), this.#ingested, this.#untimed, this.#failed, this.#failures, this.#failureCounts, this.#live?.finish(), inputResult)
  }
}

/** True when text[start, end) holds only JSON whitespace other than '\n': space, tab, CR. */
function isBlank (text: string, start: number, end: number): boolean {
  for (let i = start; i < end; i++) {
    const ch = text.charCodeAt(i)
    if (ch !== 32 && ch !== 9 && ch !== 13) return false
  }
  return true
}

/** One per worker: its buffers are reused by every task. */
const scanner = new LineScanner()
/** The reference path's row, one per worker like the scanner's. */
const referenceRow = new EventRow()

function parseValidBytes (output: TaskOutput, bytes: Buffer, firstLine: number): void {
  scanner.setBounds(output.bounds)
  let line = firstLine
  let start = 0
  while (start < bytes.length) {
    let end = scanner.scan(bytes, start)
    if (scanner.outcome === scannedRow) {
      output.addRow(scanner.row, line, end - start)
    } else if (scanner.outcome !== blankLine) {
      // The contract ends every line with '\n'; a last line without one is still a line.
      end = bytes.indexOf(newline, start)
      if (end === -1) end = bytes.length
      const text = bytes.toString('utf8', start, end)
      output.addLine(text, 0, text.length, line, end - start)
    }
    start = end + 1
    line++
  }
}

function parseLineByLine (output: TaskOutput, bytes: Buffer, firstLine: number): void {
  let line = firstLine
  let start = 0
  while (start < bytes.length) {
    let end = bytes.indexOf(newline, start)
    if (end === -1) end = bytes.length
    if (isUtf8(bytes.subarray(start, end))) {
      const text = bytes.toString('utf8', start, end)
      output.addLine(text, 0, text.length, line, end - start)
    } else {
      output.fail(line, 'invalid_utf8', 'the line is not valid UTF-8')
    }
    start = end + 1
    line++
  }
}

/** Parses one task; the result is marked for piscina to transfer `rows`. Never throws for input. */
export default function parseTask (task: ParseTask): ParseResult {
  const output = new TaskOutput(task)
  const bytes = Buffer.from(task.input)
  if (isUtf8(bytes)) parseValidBytes(output, bytes, task.firstLine)
  else parseLineByLine(output, bytes, task.firstLine)
  return move(output.finish()) as MovableParseResult
}

/**
 * A task of a whole-body input (ParseTask.inputKind other than 'ndjson'): `decode` reads
 * task.input and puts each record, as a plain event object in Sluice's JSON shape, into the sink,
 * which stores it through addValue, the path of a JSON line. The decoders live in lib/inputs/ and
 * are passed in by the worker entry (lib/parse-worker-entry.ts), so ingest imports no input.
 * A body `decode` cannot read at all comes back as bodyError, nothing of it stored.
 */
export function parseRecords (task: ParseTask, decode: (sink: RecordSink) => BodyError | null): ParseResult {
  const output = new TaskOutput(task)
  const bodyError = decode({
    add: (event, record, size) => { output.addValue(event, record, size) },
    fail: (record, code, message) => { output.fail(record, code, message) },
  })
  if (bodyError !== null) return { rows: new ArrayBuffer(0), ingested: 0, failed: 0, failures: [], failureCounts: {}, bodyError }
  return move(output.finish()) as MovableParseResult
}

/**
 * A task whose lines an input reads itself (ParseTask.inputKind 'elastic-bulk'): `parse` gets the
 * task's bytes and a sink storing records through the reference path, and returns what the
 * input's answer needs (ParseResult.inputResult). The parsers live in lib/inputs/ and are passed
 * in by the worker entry (lib/parse-worker-entry.ts), so ingest imports no input.
 */
export function parseLinesWith (task: ParseTask, parse: (bytes: Buffer, firstLine: number, sink: LineSink) => unknown): ParseResult {
  const output = new TaskOutput(task)
  const inputResult = parse(Buffer.from(task.input), task.firstLine, output)
  return move(output.finish(inputResult)) as MovableParseResult
}
