// @ts-check
// A historical range (15 m, 1 h, 24 h, 7 d or custom): /stats and /events read once, shown as
// they arrive, more events a page at a time through next_cursor.
import { ApiError } from './api.js'
import { $, show } from './dom.js'
import { formatBytes, formatCount, formatEventTime, formatRate } from './format.js'
import { renderTotals } from './panels.js'
import { setConn, setLoading } from './status-bar.js'
import { rangeParams, rangeSpanMs } from './url-state.js'
import { fillSeries, readsInTurn, showEventsEmpty, streamPath, totalsOf } from './view-common.js'

/** @typedef {import('./types.js').StatsAnswer} StatsAnswer */
/** @typedef {import('./types.js').EventsAnswer} EventsAnswer */
/** @typedef {import('./view-common.js').ViewHost} ViewHost */

/** Events per /events page. */
const pageSize = 100

export class HistoryView {
  /** @type {ViewHost} */
  #host
  /** @type {AbortSignal} */
  #signal
  /** @type {{ from: string | number, to: string | number }} */
  #range
  /** The next page's cursor, null after the last. @type {string | null} */
  #cursor = null

  /**
   * @param {ViewHost} host
   * @param {AbortSignal} signal aborted when the view is left
   */
  constructor (host, signal) {
    this.#host = host
    this.#signal = signal
    this.#range = host.state.window ?? rangeParams(host.state)
  }

  async start () {
    const { api, state, table } = this.#host
    const signal = this.#signal
    table.clear({ withDate: rangeSpanMs(state) >= 86_400_000 })
    $('events-title').textContent = 'Events'
    $('events-count').textContent = ''
    show($('pause'), false)
    show($('load-more'), false)
    showEventsEmpty(this.#host, null)
    setConn('history', 'Loading…')
    // One after the other when each scans raw events (a q over more than an hour), the events first.
    const inTurn = readsInTurn(state)
    const eventsRead = inTurn(() => api.get(streamPath(state.stream, 'events', { ...this.#range, q: state.q, limit: pageSize }), { signal }))
    const statsRead = inTurn(() => api.get(streamPath(state.stream, 'stats', { ...this.#range, q: state.q }), { signal }))
    const [stats, events] = await Promise.allSettled([statsRead, eventsRead])
    if (signal.aborted) return
    // Show what arrived; report the failure that says most (a bad query or token before the rest).
    if (stats.status === 'fulfilled') this.#renderStats(stats.value)
    else this.#host.clearPanels()
    if (events.status === 'fulfilled') this.#showEvents(events.value)
    /** @type {unknown[]} */
    const errors = []
    for (const r of [stats, events]) if (r.status === 'rejected') errors.push(r.reason)
    if (errors.length > 0) {
      /** @param {unknown} e */
      const rank = (e) => (e instanceof ApiError ? (e.isTokenProblem ? 0 : e.code === 'invalid_query' ? 1 : 2) : 3)
      this.#host.handleFailure(errors.sort((a, b) => rank(a) - rank(b))[0], this.#host.restart)
      return
    }
    state.failures = 0
    setConn('history', `Updated ${formatEventTime(Date.now()).slice(0, 8)}`)
    setLoading(false)
  }

  /** The next page of events, if there is one. */
  async loadMore () {
    if (this.#signal.aborted || this.#cursor === null) return
    const { api, state } = this.#host
    const button = $('load-more', HTMLButtonElement)
    button.disabled = true
    try {
      /** @type {EventsAnswer} */
      const answer = await api.get(streamPath(state.stream, 'events', { ...this.#range, q: state.q, limit: pageSize, cursor: this.#cursor }), { signal: this.#signal })
      this.#showEvents(answer)
    } catch (err) {
      this.#host.handleFailure(err, () => void this.loadMore())
    } finally {
      button.disabled = false
    }
  }

  /** @param {StatsAnswer} stats */
  #renderStats (stats) {
    this.#host.charts.update(fillSeries(stats), { from: stats.from, to: stats.to, stepMs: stats.step_ms })
    const seconds = (stats.to - stats.from) / 1000
    const totals = totalsOf(stats)
    const count = totals.count ?? 0
    renderTotals(totals, {
      count: `${averageRate(count / seconds)} on average`,
      errors: `${formatCount(Math.round((totals.errorRate ?? 0) * count))} with status ≥ 400`,
      bytes: `${formatBytes((totals.bytes ?? 0) / seconds)}/s on average`,
      sources: 'distinct src values',
    })
    this.#host.topLists.update(stats.top)
  }

  /** @param {EventsAnswer} answer */
  #showEvents (answer) {
    if (this.#signal.aborted) return
    const table = this.#host.table
    table.append(answer.events)
    this.#cursor = answer.next_cursor ?? null
    show($('load-more'), this.#cursor !== null)
    $('events-count').textContent = `${formatCount(table.size)} shown · newest first`
    showEventsEmpty(this.#host, table.size === 0 ? 'history' : null)
  }
}

/**
 * Events per second as a person reads it: per minute or per hour when under one every ten seconds
 * (394 events over a day are 16/h, not 0/s).
 * @param {number} perSecond
 */
function averageRate (perSecond) {
  if (perSecond === 0 || perSecond >= 0.1) return `${formatRate(perSecond)}/s`
  if (perSecond * 60 >= 1) return `${formatRate(perSecond * 60)}/min`
  return `${formatRate(perSecond * 3600)}/h`
}
