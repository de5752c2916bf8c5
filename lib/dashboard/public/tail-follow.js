// @ts-check
// The one loop that follows a tail (/tail?q= read with fetch, as the token goes in
// Authorization) for both views: reconnects with backoff (Retry-After honoured), a watchdog on
// silence (the server sends a heartbeat every 15 s), and a stop on a refusal a retry cannot fix.
import { ApiError, sleep } from './api.js'
import { retryDelayMs } from './status-bar.js'

/** Silence this long means a dead connection (ms): three missed heartbeats. */
const tailStallMs = 45_000

/**
 * @typedef {object} TailConnection
 * @property {(reconnected: boolean) => void} onOpen the tail answered (after a failure: reconnected)
 * @property {(type: string, data: string) => void} onMessage an SSE event, its type and data
 * @property {(delayMs: number, failures: number, err: unknown) => void} onRetry the tail failed or ended; the next try is in delayMs
 * @property {(err: unknown) => void} onFatal a refusal a retry cannot fix (a bad q, a token problem)
 */

/**
 * Follows the tail at `path` until signal aborts.
 * @param {import('./api.js').Api} api
 * @param {string} path /api/streams/{s}/tail?q=
 * @param {AbortSignal} signal
 * @param {TailConnection} handlers
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
        onOpen: () => { handlers.onOpen(failures > 0); failures = 0; watch() },
        onActivity: watch,
        onMessage: (type, data) => { if (!signal.aborted) handlers.onMessage(type, data) },
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
    handlers.onRetry(delay, failures, lastError)
    try { await sleep(delay, signal) } catch { return }
  }
}
