// @ts-check
// Explore's live mode: the tail (/tail?q= read with fetch, as the token goes in Authorization),
// reconnecting with backoff, a watchdog on silence (the server sends a heartbeat every 15 s); and
// the feed that hands its events to the page once per animation frame however fast they come,
// holding them while paused (the newest maxTailRows, the rest counted).
import { ApiError, sleep } from './api.js'
import { maxTailRows } from './panels.js'
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

/**
 * @typedef {object} FeedHandlers
 * @property {(event: SluiceEvent) => void} onArrival every event as it arrives (the histogram counts it)
 * @property {(events: SluiceEvent[]) => void} onShow events to draw, oldest first, once per frame
 * @property {() => void} onChange the counts or the pause changed
 */

export class LiveFeed {
  /** @type {AbortSignal} */
  #signal
  /** @type {FeedHandlers} */
  #handlers
  #paused = false
  /** Events not drawn yet, oldest first. @type {SluiceEvent[]} */
  #pending = []
  /** Events held while paused, oldest first. @type {SluiceEvent[]} */
  #held = []
  /** Held events dropped for room (past maxTailRows). */
  #lost = 0
  #received = 0
  #frame = 0

  /**
   * @param {AbortSignal} signal the view's: nothing is drawn once it aborts
   * @param {FeedHandlers} handlers
   */
  constructor (signal, handlers) {
    this.#signal = signal
    this.#handlers = handlers
  }

  get paused () { return this.#paused }
  /** Events received, dropped ones included. */
  get received () { return this.#received }
  /** Events that arrived while paused. */
  get waiting () { return this.#held.length + this.#lost }

  /** @param {SluiceEvent} event */
  add (event) {
    this.#received++
    this.#handlers.onArrival(event)
    const queue = this.#paused ? this.#held : this.#pending
    queue.push(event)
    if (queue.length > maxTailRows) { queue.shift(); if (this.#paused) this.#lost++ }
    if (this.#paused) this.#handlers.onChange()
    else this.#frame ||= requestAnimationFrame(() => this.#flush())
  }

  /** @param {number} count events the server left out for this client */
  dropped (count) {
    this.#received += count
    this.#handlers.onChange()
  }

  /** Pauses or resumes; on resume, the number of held events that were dropped for room. */
  togglePause () {
    this.#paused = !this.#paused
    let lost = 0
    if (!this.#paused) {
      this.#pending.push(...this.#held)
      this.#held = []
      lost = this.#lost
      this.#lost = 0
      this.#flush()
    }
    this.#handlers.onChange()
    return lost
  }

  #flush () {
    this.#frame = 0
    if (this.#signal.aborted) return
    if (this.#pending.length > 0) {
      const events = this.#pending
      this.#pending = []
      this.#handlers.onShow(events)
    }
    this.#handlers.onChange()
  }
}
