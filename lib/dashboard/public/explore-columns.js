// @ts-check
// What Explore knows about an event's fields: the columns of the events API (docs/api.md section
// 7.3, in the field table's order: test/dashboard/explore.browser.test.ts holds this list equal to
// lib/events/fields.ts), a field's value in an event (a column, or an attribute by its dotted
// path), every attribute flattened to dotted paths as /fields names them, the default columns, and
// whether a stream's events are access logs (then the panels view is the default). No DOM here: the
// test imports this file in Node.

import { isRawNumber, parseJson } from './json-digits.js'

/** @typedef {import('./types.js').SluiceEvent} SluiceEvent */

/** The event columns of the field table, in its order. */
export const eventColumns = /** @type {const} */ ([
  'ts', 'host', 'path', 'status', 'rt', 'bytes', 'method', 'src', 'user_agent', 'message', 'filename', 'level', 'service', 'trace_id', 'span_id',
])

const columnSet = new Set(/** @type {readonly string[]} */ (eventColumns))

/** @param {string} name */
export const isColumn = (name) => columnSet.has(name)

/**
 * The aliases of the field table (lib/events/fields.ts `aliases`, held equal by
 * test/dashboard/explore.browser.test.ts): q reads each as its column (`hostname:x` is `host:x`),
 * so an attribute at such a path is `attrs.<path>` (explore34c H3).
 */
export const fieldAliases = /** @type {const} */ ([
  'time', 'timestamp', '@timestamp', 'date', 'timereported', '__REALTIME_TIMESTAMP', 'hostname', 'host.name', 'host.hostname', 'fromhost',
  '_HOSTNAME', 'url.path', 'uri', 'http.response.status_code', 'http.status_code', 'request_time', 'http.response.body.bytes', 'body_bytes_sent',
  'http.request.method', 'http.method', 'request_method', 'source.address', 'client.address', 'source.ip', 'client.ip', 'remote_addr',
  'user_agent.original', 'http.user_agent', 'http_user_agent', 'msg', 'MESSAGE', 'body', 'short_message', 'log.file.path', 'severity',
  'severity_text', 'severityText', 'levelname', 'log.level', 'severityNumber', 'severity_number', 'priority', 'PRIORITY', 'service.name',
  'service_name', 'traceId', 'trace.id', 'spanId', 'span.id',
])

const shadowedSet = new Set([...columnSet, ...fieldAliases])

/**
 * The name q reads back as the attribute at `path` (lib/query/field-ref.ts attributeFieldName):
 * the path, or `attrs.<path>` when a column's name or alias shadows it or it starts with `attrs.`.
 * @param {string} path
 */
export const attributeName = (path) => shadowedSet.has(path) || path.startsWith('attrs.') ? 'attrs.' + path : path

/** Explore's columns when the events are application logs. */
export const appColumns = ['ts', 'level', 'service', 'message']
/** Explore's columns when most events are access logs (time, level, the request, message). */
export const accessColumns = ['ts', 'level', 'status', 'method', 'host', 'path', 'rt', 'message']

/**
 * An access-log event: it has a status or a method and path. Application logs have a message and
 * a level instead (and now and then a status among their attributes, which does not count).
 * @param {SluiceEvent} event
 */
function isAccessEvent (event) {
  return event.status != null || (event.path != null && event.method != null)
}

/**
 * Whether most of these events (a stream's newest) are access logs; none: null (no evidence).
 * @param {readonly SluiceEvent[]} events
 * @returns {boolean | null}
 */
export function isMostlyAccessLog (events) {
  if (events.length === 0) return null
  let access = 0
  for (const event of events) if (isAccessEvent(event)) access++
  return access * 2 > events.length
}

/**
 * The default columns for a page of events.
 * @param {readonly SluiceEvent[]} events
 */
export function defaultColumns (events) {
  return isMostlyAccessLog(events) ? accessColumns : appColumns
}

/**
 * The attrs object of an event (a JSON string for rows nested past the depth limit: parsed).
 * @param {SluiceEvent} event
 * @returns {Record<string, unknown>}
 */
function attrsOf (event) {
  const attrs = event.attrs
  if (attrs && typeof attrs === 'object') return attrs
  if (typeof attrs === 'string') {
    try {
      const parsed = parseJson(attrs)
      if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) return parsed
    } catch { /* not JSON: no attributes to show */ }
  }
  return {}
}

/**
 * Every attribute at its dotted path, as storage flattens them (docs/api.md section 6.4): nested
 * objects walked, arrays and scalars as leaves, an empty object gives nothing; each named as q
 * reads it (section 7.6).
 * @param {SluiceEvent} event
 * @returns {Array<[string, unknown]>}
 */
export function flatAttrs (event) {
  /** @type {Array<[string, unknown]>} */
  const out = []
  /**
   * @param {Record<string, unknown>} object
   * @param {string} prefix
   * @param {number} depth
   */
  const walk = (object, prefix, depth) => {
    for (const [key, value] of Object.entries(object)) {
      const path = prefix + key
      if (value !== null && typeof value === 'object' && !Array.isArray(value) && !isRawNumber(value) && depth < 64) walk(/** @type {Record<string, unknown>} */ (value), path + '.', depth + 1)
      // Named as q and /fields name it: a path a column's name or alias shadows (an invalid
      // `level`, a `hostname` beside `host`), or one starting with `attrs.`, is `attrs.<path>`.
      else out.push([attributeName(path), value])
    }
  }
  walk(attrsOf(event), '', 0)
  return out
}

/**
 * A field's value in an event: a column's member, else the attribute at that dotted path
 * (`attrs.<path>` always the attribute); undefined when the event does not have it.
 * @param {SluiceEvent} event
 * @param {string} name
 * @returns {unknown}
 */
export function fieldValue (event, name) {
  if (isColumn(name)) {
    const value = /** @type {Record<string, unknown>} */ (/** @type {unknown} */ (event))[name]
    return value === null ? undefined : value
  }
  const path = name.startsWith('attrs.') ? name.slice(6) : name
  const attrs = attrsOf(event)
  if (Object.hasOwn(attrs, path)) return attrs[path]
  // A nested object, or a mix of dotted keys and nesting: try every split of the path.
  /**
   * @param {unknown} node
   * @param {string} rest
   * @returns {unknown}
   */
  const find = (node, rest) => {
    if (node === null || typeof node !== 'object' || Array.isArray(node) || isRawNumber(node)) return undefined
    const object = /** @type {Record<string, unknown>} */ (node)
    if (Object.hasOwn(object, rest)) return object[rest]
    for (let dot = rest.indexOf('.'); dot !== -1; dot = rest.indexOf('.', dot + 1)) {
      const head = rest.slice(0, dot)
      if (Object.hasOwn(object, head)) {
        const found = find(object[head], rest.slice(dot + 1))
        if (found !== undefined) return found
      }
    }
    return undefined
  }
  return find(attrs, path)
}

/**
 * A value as the filter and the table show it: a string as is, anything else as its JSON text
 * (as storage writes an attribute's text).
 * @param {unknown} value
 */
export function valueText (value) {
  return typeof value === 'string' ? value : JSON.stringify(value) ?? ''
}
