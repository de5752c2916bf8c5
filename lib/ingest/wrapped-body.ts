// Wrapped bodies on the NDJSON route (docs/api.md sections 6.4 and 6.6): a JSON object line that is a
// known wrapper of many records, not an event. Stored as one event it would hide every record
// in one attrs value, so the parse worker fails the line with `wrapped_body` and a message
// naming the endpoint that reads the shape; the route then answers 400 wrapped_body when nothing
// else of the request was stored (ingest-route.ts).
//
// Precise on purpose, since a false match fails a good line: only an object whose ONLY key is a
// wrapper key, with the value that key holds in that format. A normal event that carries an
// `events` array among other fields is an event. Runs on the reference path only: the line
// scanner declines a single-member line whose key is a wrapper key (isWrapperKey), so it never
// stores one. Only NDJSON lines (and JSON array elements) are checked: the protocol inputs
// (OTLP, Loki, Elasticsearch _bulk) read their own shapes and never come here.
import type { LineFailure } from './parse-task.ts'

/** The message of a line that is an Elasticsearch _bulk action line (see isBulkActionFailure). */
export const bulkActionMessage =
  'the line is an Elasticsearch _bulk action line (index/create): POST the bulk body to /api/elastic/_bulk'

/** Keys of the single-key wrappers that hold an array of event objects. */
const arrayWrapperKeys = new Set(['logs', 'events', 'records', 'messages', 'data', 'entries', 'items'])

/**
 * Every key a wrapper check may start from: the scanner declines a line whose only member is a
 * container under one of these, and the reference path (wrappedBodyMessage) decides.
 */
export const wrapperKeys: readonly string[] = [
  'resourceLogs', 'resourceSpans', 'resourceMetrics', 'streams', 'index', 'create', ...arrayWrapperKeys,
]

/**
 * Keys an Elasticsearch _bulk action's metadata may hold (the bulk API's action fields, with and
 * without the underscore older clients write). `{"index":{"name":"x"}}` is an event, not an action.
 */
const bulkMetadataKeys = new Set([
  '_index', '_id', '_type', '_routing', 'routing', 'pipeline', 'require_alias', 'require_data_stream',
  'dynamic_templates', 'version', 'version_type', '_version', '_version_type', 'if_seq_no', 'if_primary_term',
  'retry_on_conflict', '_retry_on_conflict', 'list_executed_pipelines',
])

type JsonObject = Record<string, unknown>

function isPlainObject (value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** True when `value` is a non-empty array whose every item is an object passing `check`. */
function isArrayOfObjects (value: unknown, check: (item: JsonObject) => boolean = () => true): boolean {
  if (!Array.isArray(value) || value.length === 0) return false
  for (const item of value) if (!isPlainObject(item) || !check(item)) return false
  return true
}

/**
 * The failure message when `value` (a parsed NDJSON line) is a known wrapper of many records,
 * naming what to do instead; null for anything else (the line is read as an event).
 */
export function wrappedBodyMessage (value: unknown): string | null {
  if (!isPlainObject(value)) return null
  let key: string | undefined
  // The line's own keys (JSON.parse makes no enumerable prototype keys); stop at the second.
  for (const k in value) {
    if (key !== undefined) return null
    key = k
  }
  if (key === undefined) return null
  const inner = value[key]
  switch (key) {
    case 'resourceLogs':
      return Array.isArray(inner)
        ? 'the line is an OpenTelemetry logs export (OTLP/JSON resourceLogs): POST it to /v1/logs'
        : null
    case 'resourceSpans':
    case 'resourceMetrics':
      return Array.isArray(inner)
        ? `the line is an OpenTelemetry ${key === 'resourceSpans' ? 'traces' : 'metrics'} export (OTLP/JSON ${key}): Sluice takes logs only (OTLP logs go to /v1/logs)`
        : null
    case 'streams':
      return isArrayOfObjects(inner, (s) => Object.hasOwn(s, 'values') || Object.hasOwn(s, 'entries'))
        ? 'the line is a Loki push body (streams): POST it to /loki/api/v1/push'
        : null
    case 'index':
    case 'create':
      return isBulkMetadata(inner) ? bulkActionMessage : null
  }
  return arrayWrapperKeys.has(key) && isArrayOfObjects(inner)
    ? `the line wraps many records under "${key}": send one event per line (NDJSON) or a JSON array body`
    : null
}

/** An action's metadata: an object holding only _bulk action fields (or none). */
function isBulkMetadata (value: unknown): boolean {
  if (!isPlainObject(value)) return false
  for (const k in value) if (!bulkMetadataKeys.has(k)) return false
  return true
}

/**
 * Whether a listed failure is an Elasticsearch _bulk action line: the route refuses a body whose
 * first line is one (a bulk body), since its documents stored as events would lose their action
 * and be stored again when resent to /api/elastic/_bulk.
 */
export function isBulkActionFailure (failure: LineFailure): boolean {
  return failure.code === 'wrapped_body' && failure.message === bulkActionMessage
}
