// @ts-check
// The dashboard's state: one object that every change of stream, range or search updates before a
// new view starts (app.js). The PAT lives in sessionStorage (sign-in.js), the last stream in
// localStorage, and stream, range, search and Explore's columns, grouping and open event in the URL
// hash (url-state.js).

/** The fixed time ranges, ms. @type {Readonly<Record<string, number>>} */
export const rangeMs = { '15m': 15 * 60_000, '1h': 3_600_000, '24h': 86_400_000, '7d': 7 * 86_400_000 }

/** Where the last stream picked is remembered (localStorage). */
export const streamKey = 'sluice.stream'

/**
 * @typedef {object} AppState
 * @property {string} token the PAT, '' when signed out
 * @property {import('./types.js').StreamInfo[]} streams
 * @property {string | null} stream
 * @property {string} range 'live', a key of rangeMs, or 'custom'
 * @property {{ from: number, to: number } | null} custom the range in ms for 'custom'
 * @property {{ from: number, to: number } | null} window the historical range as the view
 *   started reading it, in ms (a preset's `now` taken once), so its reads and its export count
 *   the same events; null live
 * @property {string} q
 * @property {'explore' | 'panels' | null} mode the view asked for (URL or a click); null: by the stream's events
 * @property {string[] | null} columns Explore's chosen columns, null for the default
 * @property {string} by the field Explore's histogram groups by
 * @property {string | null} event the id of the event opened in Explore
 * @property {string | null} context the id of the event whose context is shown
 * @property {AbortController | null} view the running view's controller
 * @property {number} failures consecutive failed loads, for the retry backoff
 */

/** @type {AppState} */
export const state = {
  token: '',
  streams: [],
  stream: null,
  range: 'live',
  custom: null,
  window: null,
  q: '',
  mode: null,
  columns: null,
  by: 'level',
  event: null,
  context: null,
  view: null,
  failures: 0,
}
