// @ts-check
// The tail for Explore's live mode: /tail?q= read with fetch (the token goes in Authorization),
// reconnecting with backoff, a watchdog on silence (the server sends a heartbeat every 15 s).
// Events go to onEvent as they come; explore-view.js renders them once per animation frame.
import { ApiError, sleep } from './api.js'
import { retryDelayMs } from './status-bar.js'

/** @typedef {import('./types.js').SluiceEvent} SluiceEvent */

/** Silence this long means a dead connection (ms): three missed heartbeats. */
const tailStallMs = 45_000

/**
 * @typedef {object} TailHandlers
 * @property {(event: SluiceEvent) => void} onEvent
 * @property {(count: number) => void} onDropped events the server left out for this client
 * @property {(state: 'live' | 'reconnecting', delayMs?: number) => void} onState
 * @property {(err: unknown) => void} onFatal a refusal a retry cannot fix (a bad q, a token problem)
 */

/**
 * Follows the tail until signal aborts.
 * @param {import('./api.js').Api} api
 * @param {string} path /api/streams/{s}/tail?q=
 * @param {AbortSignal} signal
 * @param {TailHandlers} handlers
 */
export async function followTail (api, path, signal, handlers) {
  let failures = 0
  /** @type {unknown} */
  let lastError = null
  while (!signal.aborted) {
    const connection = new AbortController()
    const abort = () => connection.abort()
    signal.addEventListener('abort', abort, { once: true })
    /** @type {ReturnType<typeof setTimeout> | undefined} */
    let stall
    const watch = () => {
      clearTimeout(stall)
      stall = setTimeout(() => connection.abort(new DOMException('No data from the tail', 'TimeoutError')), tailStallMs)
    }
    try {
      await api.stream(path, {
        signal: connection.signal,
        onOpen: () => { failures = 0; handlers.onState('live'); watch() },
        onActivity: watch,
        onMessage: (type, data) => {
          if (signal.aborted || (type !== 'event' && type !== 'dropped')) return
          let payload
          try { payload = JSON.parse(data) } catch { return }
          if (type === 'event') handlers.onEvent(payload)
          else handlers.onDropped(Number(payload.count) || 0)
        },
      })
      lastError = null
    } catch (err) {
      if (signal.aborted) return
      if (err instanceof ApiError && err.status < 500 && err.status !== 429) { handlers.onFatal(err); return }
      lastError = err
    } finally {
      clearTimeout(stall)
      signal.removeEventListener('abort', abort)
    }
    failures++
    const delay = retryDelayMs(failures, lastError instanceof ApiError ? lastError.retryAfterS : null)
    handlers.onState('reconnecting', delay)
    try { await sleep(delay, signal) } catch { return }
  }
}
