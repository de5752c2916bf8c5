// The answer to an Elasticsearch `_bulk` request (docs/api.md section 6.10), assembled on the main
// thread from the workers' per-line outcomes (bulk-lines.ts): actions are paired with the line
// after them by line order, as Elasticsearch does, whatever task each line was parsed in.
//
// Contract: BulkSummary collects what the pipeline produced (it is the request's IngestSummary,
// plus every task's BulkLines and every line that failed on the main thread, none of them capped);
// pairItems() walks the lines once and either returns the items or throws a 400 bad_request for a
// body Elasticsearch would refuse whole (a document where an action line belongs, an action
// without its document at the end). It is called before the rows are written, so a refused body
// stores nothing. renderBulkAnswer() writes the `{"took", "errors", "items"}` text in pieces.
//
// A stored item is answered compactly, `{"create":{"status":201}}` (about 26 bytes): what every
// client reads of a success is its `status` (Fluent Bit's es output, rsyslog's omelasticsearch,
// the Python and JS helpers, Filebeat, Logstash); Elasticsearch's full item (about 180 bytes) made
// the answer to a 2,800-record chunk pass Fluent Bit's default 512 KB read buffer, which it then
// re-sent forever although it was stored (issue 21). A failed item keeps the full shape, with
// `error`. rejectItems() turns the items of a request that stored nothing into per-item 429s
// (bulk-rejection.ts): Elasticsearch's own way to say "resend these", which clients retry item
// by item where a whole-request 429 is dropped (rsyslog 8.2302) or retried without end.
import { SluiceError } from '../../errors.ts'
import type { ErrorCode } from '../../errors.ts'
import { IngestSummary } from '../../ingest/ingest-summary.ts'
import type { LineFailure, ParseResult } from '../../ingest/parse-task.ts'
import { actionNames, lineKind } from './bulk-lines.ts'
import type { ActionName, BulkLineFailure, BulkLines } from './bulk-lines.ts'

export class BulkSummary extends IngestSummary {
  /** Per task, in task order. */
  readonly bulk: BulkLines[] = []
  /** Lines that failed on the main thread (line_too_long, framing), by line. */
  readonly mainFailures = new Map<number, LineFailure>()

  override addResult (index: number, result: ParseResult): void {
    super.addResult(index, result)
    if (result.inputResult !== undefined) this.bulk[index] = result.inputResult as BulkLines
  }

  override addFailure (failure: LineFailure): void {
    super.addFailure(failure)
    this.mainFailures.set(failure.line, failure)
  }

  /** Lines that are not blank: a bound on the request's items, counted without building them. */
  contentLines (): number {
    let n = this.mainFailures.size
    for (const task of this.bulk) {
      if (task === undefined) continue
      for (let i = 0; i < task.kinds.length; i++) if (task.kinds[i] !== lineKind.blank) n++
    }
    return n
  }
}

/**
 * Bytes of answer counted per item when bounding a request's items: a stored item renders to
 * about 26 bytes, a failed or rejected one to 150-250, and a minimal bulk item (`{"delete":{}}`)
 * is 14 bytes of body, so without a bound a body of tiny items could be answered with ten times
 * its size.
 */
export const answerBytesPerItem = 128

/** Throws 413 payload_too_large when the body holds more lines than `maxAnswerBytes` of answer can list. */
export function checkItemCount (summary: BulkSummary, maxAnswerBytes: number): void {
  const maxItems = Math.floor(maxAnswerBytes / answerBytesPerItem)
  const lines = summary.contentLines()
  if (lines > maxItems) {
    throw new SluiceError('payload_too_large', `The body holds ${lines} lines; a bulk request is answered for at most ${maxItems} items: send fewer per request`)
  }
}

/** One item of the answer. */
export interface BulkItem {
  action: ActionName
  /** The action's line. */
  line: number
  /** The document's line (index, create, update); the action's for delete. */
  docLine: number
  index: string | null
  id: string | null
  status: number
  /** The item's error: Elasticsearch's `type` and `reason`, and Sluice's line failure code. */
  error: { type: string, reason: string, code: string } | null
}

/** A line as the pairing sees it. */
interface LineView { line: number, kind: number, index: string | null, id: string | null, failure: BulkLineFailure | LineFailure | null }

/** Every non-blank line of the body in order: the tasks' lines and the main thread's failures. */
function * bodyLines (summary: BulkSummary): Generator<LineView> {
  const pending = [...summary.mainFailures.values()].sort((a, b) => a.line - b.line)
  let p = 0
  for (const task of summary.bulk) {
    if (task === undefined) continue
    while (p < pending.length && pending[p].line < task.firstLine) yield failedLine(pending[p++])
    let f = 0
    let idAt = 0
    for (let i = 0; i < task.kinds.length; i++) {
      const line = task.firstLine + i
      const kind = task.kinds[i]
      if (kind === lineKind.blank) {
        const failure = summary.mainFailures.get(line)
        if (failure !== undefined) {
          while (p < pending.length && pending[p].line <= line) p++
          yield failedLine(failure)
        }
        continue
      }
      let failure: BulkLineFailure | null = null
      if (kind === lineKind.failed) {
        while (task.failures[f].line < line) f++
        failure = task.failures[f]
      }
      let id: string | null = null
      while (idAt < task.idLines.length && task.idLines[idAt] < line) idAt++
      if (idAt < task.idLines.length && task.idLines[idAt] === line) id = task.ids[idAt]
      const ref = task.indexRefs[i]
      yield { line, kind, index: ref >= 0 ? task.indexNames[ref] : null, id, failure }
    }
  }
  while (p < pending.length) yield failedLine(pending[p++])
}

function failedLine (failure: LineFailure): LineView {
  return { line: failure.line, kind: lineKind.failed, index: null, id: null, failure }
}

function isAction (kind: number): boolean {
  return kind >= lineKind.index && kind <= lineKind.delete
}

/**
 * Pairs actions and documents; throws 400 bad_request for a body Elasticsearch refuses whole. Item
 * statuses: 201 stored; 400 for a document that failed Sluice's rules (`mapper_parsing_exception`),
 * one shaped like an action or an update body, and every `update` (events are append-only); 404
 * `not_found` for `delete`, which deletes nothing.
 */
export function pairItems (summary: BulkSummary): BulkItem[] {
  const items: BulkItem[] = []
  let action: LineView | null = null
  for (const view of bodyLines(summary)) {
    if (action === null) {
      if (!isAction(view.kind)) {
        const why = view.failure !== null ? `${view.failure.code}: ${view.failure.message}` : 'expected an action line: {"index": {}}, {"create": {}}, {"update": {...}} or {"delete": {...}}'
        throw new SluiceError('bad_request', `Malformed action/metadata line [${view.line}]: ${why}`)
      }
      if (view.kind === lineKind.delete) {
        items.push({ action: 'delete', line: view.line, docLine: view.line, index: view.index, id: view.id, status: 404, error: null })
      } else {
        action = view
      }
      continue
    }
    const name = actionNames[action.kind] as ActionName
    const item: BulkItem = { action: name, line: action.line, docLine: view.line, index: action.index, id: action.id, status: 201, error: null }
    if (name === 'update') {
      if (view.kind === lineKind.stored) {
        // Stored already by its worker, which could not know it follows an update: refuse the
        // body whole, as Elasticsearch refuses an update body it cannot read.
        throw new SluiceError('bad_request', `Malformed update request body on line [${view.line}]: send {"doc": {...}}`)
      }
      item.status = 400
      item.error = { type: 'action_request_validation_exception', reason: 'Sluice stores append-only events: update is not supported, send index or create', code: 'update_not_supported' }
    } else if (view.kind === lineKind.failed && view.failure !== null) {
      item.status = 400
      item.error = { type: 'mapper_parsing_exception', reason: `failed to parse: ${view.failure.message}`, code: view.failure.code }
    } else if (view.kind === lineKind.updateBody) {
      item.status = 400
      item.error = { type: 'mapper_parsing_exception', reason: 'a document whose keys are all update keys (doc, upsert, script, ...) is read as an update body and not stored', code: 'not_stored' }
    } else if (isAction(view.kind)) {
      item.status = 400
      item.error = { type: 'mapper_parsing_exception', reason: 'a document with the shape of an action line ({"index": {...}}) is not stored', code: 'not_stored' }
    }
    items.push(item)
    action = null
  }
  if (action !== null) {
    throw new SluiceError('bad_request', `The action on line [${action.line}] has no document: every index, create and update line is followed by one`)
  }
  return items
}

export interface AnswerContext {
  /** ms since the request arrived. */
  took: number
  /** `_index` of items whose action named none: the path's `{index}`, else the stream's name. */
  defaultIndex: string
}

/** The answer's JSON text, in pieces of about `pieceBytes` characters (so a large answer is never one string). */
export function * renderBulkAnswer (items: BulkItem[], context: AnswerContext, pieceBytes = 64 * 1024): Generator<string> {
  const errors = items.some((item) => item.error !== null)
  let piece = `{"took":${Math.max(0, Math.round(context.took))},"errors":${errors},"items":[`
  for (let i = 0; i < items.length; i++) {
    piece += (i === 0 ? '' : ',') + renderItem(items[i], i, context)
    if (piece.length >= pieceBytes) {
      yield piece
      piece = ''
    }
  }
  yield piece + ']}'
}

/** What a stored item is answered: its action and status, the one thing clients read of it. */
const storedItems: Record<ActionName, string> = {
  index: '{"index":{"status":201}}',
  create: '{"create":{"status":201}}',
  update: '{"update":{"status":201}}',
  delete: '{"delete":{"status":201}}',
}

function renderItem (item: BulkItem, seqNo: number, context: AnswerContext): string {
  if (item.status === 201 && item.error === null) return storedItems[item.action]
  const body: Record<string, unknown> = { _index: item.index ?? context.defaultIndex, _id: item.id }
  if (item.error !== null) {
    body.status = item.status
    body.error = { type: item.error.type, reason: item.error.reason, sluice_code: item.error.code, line: item.docLine }
  } else {
    body._version = 1
    body.result = 'not_found'
    body._shards = { total: 1, successful: 0, failed: 0 }
    body._seq_no = seqNo
    body._primary_term = 1
    body.status = item.status
  }
  return JSON.stringify({ [item.action]: body })
}

/** Elasticsearch's error type for a document it did not take for now and that may be sent again. */
export const rejectedType = 'es_rejected_execution_exception'

/**
 * The items of a request that stored nothing, answered as Elasticsearch answers documents it
 * rejected for now: status 429, `es_rejected_execution_exception`, Sluice's code (rate_limited,
 * server_busy, storage_unavailable, ...) in `sluice_code`. Items that failed on their own (400)
 * keep their answer: sending them again would fail the same way.
 */
export function rejectItems (items: BulkItem[], code: ErrorCode, reason: string): BulkItem[] {
  return items.map((item) => item.error !== null ? item : { ...item, status: 429, error: { type: rejectedType, reason, code } })
}
