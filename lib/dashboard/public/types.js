// @ts-check
// The API's JSON shapes the page reads (docs/api.md sections 5.1 and 7), as JSDoc types for tsc.
// Types only: the other modules import them in JSDoc comments, so the browser never loads this file.

/**
 * An event of /events and of the tail (docs/api.md section 7.3).
 * @typedef {object} SluiceEvent
 * @property {string} [id] `<ts>-<seq>`, what the context route takes (absent from servers before it)
 * @property {number} ts ms
 * @property {string | null} host
 * @property {string | null} path
 * @property {number | null} status
 * @property {number | null} rt seconds
 * @property {number | null} bytes
 * @property {string | null} method
 * @property {string | null} src
 * @property {string | null} user_agent
 * @property {string | null} message
 * @property {string | null} filename
 * @property {LogLevel | null} [level] absent from servers before the level column
 * @property {string | null} [service]
 * @property {string | null} [trace_id]
 * @property {string | null} [span_id]
 * @property {Record<string, unknown> | string | null} attrs
 * @property {number | null} [received_at] ms
 */

/** @typedef {'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal'} LogLevel */

/**
 * @typedef {object} EventsAnswer
 * @property {SluiceEvent[]} events
 * @property {string | null} [next_cursor]
 */

/**
 * One bucket of a /stats series, or a tail `stats` event (t in ms); `gap` marks a missing second
 * and `backfill` a bucket read from /stats before the tail's own seconds arrived.
 * @typedef {object} StatsPoint
 * @property {number} t
 * @property {number} [count]
 * @property {number} [status_2xx]
 * @property {number} [status_3xx]
 * @property {number} [status_4xx]
 * @property {number} [status_5xx]
 * @property {number} [bytes]
 * @property {number | null} [rt_p50]
 * @property {number | null} [rt_p95]
 * @property {number | null} [rt_p99]
 * @property {boolean} [gap]
 * @property {boolean} [backfill]
 * @property {Record<string, number>} [groups] with `by`: count per listed value
 */

/** A row of a top list: its key field (path, host, status, level, ...) and numbers. @typedef {Record<string, string | number | null>} TopRow */

/**
 * @typedef {object} StatsAnswer
 * @property {number} from
 * @property {number} to
 * @property {number} step_ms
 * @property {StatsPoint[]} series
 * @property {{ count: number, error_rate: number, bytes: number, unique_sources: number }} totals
 * @property {Record<string, TopRow[]>} top
 * @property {Array<{ value: string, count: number }>} [groups] with `by`: the field's most frequent values
 * @property {boolean} [sampled] with `by`: the groups were counted over slices and scaled (docs/api.md section 7.4)
 */

/**
 * A field of /fields (docs/api.md section 7.6).
 * @typedef {object} FieldInfo
 * @property {string} name
 * @property {'column' | 'attribute'} kind
 * @property {'string' | 'number' | 'boolean'} type
 * @property {number} count events that have it
 * @property {Array<{ value: string | number, count: number }>} top
 */

/**
 * @typedef {object} FieldsAnswer
 * @property {FieldInfo[]} fields
 * @property {boolean} sampled
 * @property {number} total
 */

/**
 * /events/{id}/context (docs/api.md section 7.7), both lists in ascending time.
 * @typedef {object} ContextAnswer
 * @property {SluiceEvent[]} before
 * @property {SluiceEvent} event
 * @property {SluiceEvent[]} after
 */

/**
 * @typedef {object} StreamInfo
 * @property {string} name
 * @property {string | null} [description]
 * @property {number} [retention_days]
 * @property {{ events: number, bytes: number, last_event_at: string | null }} [stats]
 */

export {}
