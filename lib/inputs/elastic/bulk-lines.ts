// Elasticsearch `_bulk` bodies in the parse workers (docs/api.md section 6.10): each line of a task
// is classified on its own, with no state carried between lines or tasks (a task may end between an
// action and its document):
// - an action line is a JSON object with exactly one key, `index`, `create`, `update` or `delete`,
//   whose value is an object (its `_index` and `_id` are kept for the answer);
// - an update body is an object whose keys are all update-request keys (`doc`, `upsert`, `script`,
//   ...) with at least one of `doc`, `upsert`, `script`: recognised so that it is never stored;
// - any other line is a document, stored through the worker's reference path (one call site:
//   storeDocument below), or failed with its line failure code.
// The main thread pairs actions with documents by line order (bulk-answer.ts). Since nothing here
// knows the previous line, a document whose only key is `index`/`create`/`update`/`delete` holding
// an object, or whose keys are all update keys, is read as an action or an update body and not
// stored; the answer says so for its item. Pure: nothing a client sends makes this throw.
import { Buffer, isUtf8 } from 'node:buffer'
import type { LineFailureCode, LineSink } from '../../ingest/parse-task.ts'
import { isRawInteger, parseEventJson } from '../../events/json-integers.ts'

/** What a parse task of an Elasticsearch bulk body carries (ParseTask.kind). */
export const elasticBulkKind = 'elastic-bulk'

/** Per line of a task (BulkLines.kinds). */
export const lineKind = {
  /** Blank, or written empty by the main thread (a line that failed there: line_too_long). */
  blank: 0,
  index: 1,
  create: 2,
  update: 3,
  delete: 4,
  /** A document, stored as an event. */
  stored: 5,
  /** A line that is not an action and was not stored: its failure is in BulkLines.failures. */
  failed: 6,
  /** An update request body (`{"doc": ...}`), never stored. */
  updateBody: 7,
} as const

/** Action names by their line kind (1-4). */
export const actionNames = ['', 'index', 'create', 'update', 'delete'] as const
export type ActionName = 'index' | 'create' | 'update' | 'delete'

const actionKinds: Record<string, number> = { index: lineKind.index, create: lineKind.create, update: lineKind.update, delete: lineKind.delete }

const updateBodyKeys = new Set(['doc', 'upsert', 'doc_as_upsert', 'script', 'scripted_upsert', 'detect_noop', '_source', 'lang', 'params'])

export interface BulkLineFailure {
  line: number
  code: LineFailureCode
  message: string
}

/** A task's per-line outcome, sent back to the main thread as ParseResult.inputResult. */
export interface BulkLines {
  firstLine: number
  /** One lineKind per line of the task, blank lines included. */
  kinds: Uint8Array
  /** Distinct `_index` values of the task's actions. */
  indexNames: string[]
  /** Per line: the action's `_index` as a position in indexNames, -1 when it named none. */
  indexRefs: Int32Array
  /** Lines of the actions that carried an `_id`, and those ids (as strings), in line order. */
  idLines: number[]
  ids: string[]
  /** Every line of kind `failed`, in line order (not capped: each is an item's answer). */
  failures: BulkLineFailure[]
}

const newline = 10

/**
 * Classifies and stores every line of one task's bytes (lines end at '\n', the last may not);
 * runs in a parse worker (lib/parse-worker-entry.ts, parseLinesWith).
 */
export function parseBulkLines (bytes: Buffer, firstLine: number, sink: LineSink): BulkLines {
  let lineCount = 0
  for (let i = bytes.indexOf(newline); i !== -1; i = bytes.indexOf(newline, i + 1)) lineCount++
  if (bytes.length > 0 && bytes[bytes.length - 1] !== newline) lineCount++
  const out: BulkLines = {
    firstLine, kinds: new Uint8Array(lineCount), indexNames: [], indexRefs: new Int32Array(lineCount).fill(-1),
    idLines: [], ids: [], failures: [],
  }
  const names = new Map<string, number>()
  const allUtf8 = isUtf8(bytes)
  let start = 0
  for (let i = 0; i < lineCount; i++) {
    let end = bytes.indexOf(newline, start)
    if (end === -1) end = bytes.length
    const line = firstLine + i
    if (!allUtf8 && !isUtf8(bytes.subarray(start, end))) {
      sink.fail(line, 'invalid_utf8', 'the line is not valid UTF-8')
      out.kinds[i] = lineKind.failed
      out.failures.push({ line, code: 'invalid_utf8', message: 'the line is not valid UTF-8' })
    } else {
      const text = bytes.toString('utf8', start, end)
      if (!isBlank(text)) classifyLine(out, names, i, line, text, end - start, sink)
    }
    start = end + 1
  }
  return out
}

function classifyLine (out: BulkLines, names: Map<string, number>, i: number, line: number, text: string, size: number, sink: LineSink): void {
  let value: unknown
  try {
    value = parseEventJson(text)
  } catch (err) {
    const message = (err as SyntaxError).message
    sink.fail(line, 'invalid_json', message)
    out.kinds[i] = lineKind.failed
    out.failures.push({ line, code: 'invalid_json', message })
    return
  }
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    const object = value as Record<string, unknown>
    const keys = Object.keys(object)
    const action = keys.length === 1 ? actionKinds[keys[0]] : undefined
    const meta = action === undefined ? undefined : object[keys[0]]
    if (action !== undefined && meta !== null && typeof meta === 'object' && !Array.isArray(meta) && !isRawInteger(meta)) {
      out.kinds[i] = action
      const { _index: index, _id: id } = meta as Record<string, unknown>
      if (typeof index === 'string') {
        let ref = names.get(index)
        if (ref === undefined) {
          ref = out.indexNames.push(index) - 1
          names.set(index, ref)
        }
        out.indexRefs[i] = ref
      }
      if (typeof id === 'string' || typeof id === 'number' || isRawInteger(id)) {
        out.idLines.push(line)
        out.ids.push(isRawInteger(id) ? id.rawJSON : String(id))
      }
      return
    }
    if (isUpdateBody(keys)) {
      out.kinds[i] = lineKind.updateBody
      return
    }
  }
  const rejection = storeDocument(sink, value, line, size)
  if (rejection === null) {
    out.kinds[i] = lineKind.stored
  } else {
    out.kinds[i] = lineKind.failed
    out.failures.push({ line, code: rejection.code, message: rejection.message })
  }
}

/**
 * The one place a bulk document enters the reference path (the seam of the protocol adapters):
 * the document object as sent, in Sluice's own event shape; the field mapping of the event model
 * reads its `@timestamp`, `message` and ECS names.
 */
function storeDocument (sink: LineSink, document: unknown, line: number, size: number): { code: LineFailureCode, message: string } | null {
  return sink.addValue(document, line, size)
}

function isUpdateBody (keys: string[]): boolean {
  if (keys.length === 0) return false
  let body = false
  for (const key of keys) {
    if (!updateBodyKeys.has(key)) return false
    if (key === 'doc' || key === 'upsert' || key === 'script') body = true
  }
  return body
}

/** Only JSON whitespace other than '\n' (space, tab, CR), or nothing. */
function isBlank (text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i)
    if (ch !== 32 && ch !== 9 && ch !== 13) return false
  }
  return true
}
