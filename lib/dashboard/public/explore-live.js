// @ts-check
// Explore's live mode: the tail's events (followed by tail-follow.js, as the panels' live view does); and
// the feed that hands its events to the page once per animation frame however fast they come,
// holding them while paused (the newest maxTailRows, the rest counted).
import { maxTailRows } from './panels.js'
import { followTail } from './tail-follow.js'
import { parseJson } from './json-digits.js'

/** @typedef {import('./types.js').SluiceEvent} SluiceEvent */

/**
 * @typedef {object} TailHandlers
 * @property {(event: SluiceEvent) => void} onEvent
 * @property {(count: number) => void} onDropped events the server left out for this client
 * @property {(count: number) => void} onStats the stream's events in the last second (all of them, whatever q)
 * @property {(state: 'live' | 'reconnecting', delayMs?: number) => void} onState
 * @property {(err: unknown) => void} onFatal a refusal a retry cannot fix (a bad q, a token problem)
 */

/**
 * Follows the tail until signal aborts, handing on its events and drop counts (tail-follow.js).
 * @param {import('./api.js').Api} api
 * @param {string} path /api/streams/{s}/tail?q=
 * @param {AbortSignal} signal
 * @param {TailHandlers} handlers
 */
export async function followEvents (api, path, signal, handlers) {
  await followTail(api, path, signal, {
    onOpen: () => handlers.onState('live'),
    onMessage: (type, data) => {
      if (type !== 'event' && type !== 'dropped' && type !== 'stats') return
      let payload
      try { payload = parseJson(data) } catch { return }
      if (type === 'event') handlers.onEvent(payload)
      else if (type === 'stats') handlers.onStats(Number(payload.count) || 0)
      else handlers.onDropped(Number(payload.count) || 0)
    },
    onRetry: (delayMs) => handlers.onState('reconnecting', delayMs),
    onFatal: handlers.onFatal,
  })
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
