// @ts-check
// The Live view: a backfill of the last five minutes from /stats and /events, then the tail (SSE
// read with fetch, reconnecting with backoff, a watchdog on silence) moving the charts every
// second from its `stats` events over a rolling five-minute window, events rendered once per
// animation frame however fast they come, pause/resume, and the top lists refreshed from /stats.
import { ApiError, sleep } from './api.js'
import { $, show } from './dom.js'
import { formatBytes, formatCount, formatCountOf, formatRate } from './format.js'
import { maxTailRows, renderTotals } from './panels.js'
import { setBanner, setConn, setLoading } from './status-bar.js'
import { followTail } from './tail-follow.js'
import { parseJson } from './json-digits.js'
import { fillSeries, showEventsEmpty, streamPath } from './view-common.js'

/** @typedef {import('./types.js').SluiceEvent} SluiceEvent */
/** @typedef {import('./types.js').StatsAnswer} StatsAnswer */
/** @typedef {import('./types.js').StatsPoint} StatsPoint */
/** @typedef {import('./types.js').EventsAnswer} EventsAnswer */
/** @typedef {import('./view-common.js').ViewHost} ViewHost */

const liveWindowMs = 5 * 60_000
/** Top lists and unique sources in Live mode come from /stats, refreshed this often (ms). */
const liveTopRefreshMs = 10_000

export class LiveView {
  /** @type {ViewHost} */
  #host
  /** Aborted when the view is left: every loop and request of the view ends. @type {AbortSignal} */
  #signal
  /** The rolling window's points, oldest first. @type {StatsPoint[]} */
  #points = []
  #paused = false
  /** Events that arrived while paused (the newest maxTailRows). @type {SluiceEvent[]} */
  #buffer = []
  #pausedArrived = 0
  #pausedLost = 0
  /** Events waiting for the next animation frame. @type {SluiceEvent[]} */
  #pending = []
  /** The requested animation frame, 0 when none. */
  #frame = 0
  /** @type {number | null} */
  #uniqueSources = null
  #received = 0
  #dropped = 0

  /**
   * @param {ViewHost} host
   * @param {AbortSignal} signal
   */
  constructor (host, signal) {
    this.#host = host
    this.#signal = signal
  }

  async start () {
    const { api, state, table, charts, topLists } = this.#host
    const signal = this.#signal
    table.clear()
    charts.clear()
    topLists.update(null)
    $('events-title').textContent = 'Live tail'
    show($('pause'))
    show($('load-more'), false)
    this.#renderPause()
    setConn('connecting')
    showEventsEmpty(this.#host, null)
    try {
      // The tail's stats count every event of the stream, whatever q is, so the backfill does too.
      const [stats, events] = /** @type {[StatsAnswer, EventsAnswer]} */ (await Promise.all([
        api.get(streamPath(state.stream, 'stats', { from: 'now-5m', to: 'now', step: '1s' }), { signal }),
        api.get(streamPath(state.stream, 'events', { from: 'now-5m', to: 'now', limit: 50, q: state.q }), { signal }),
      ]))
      this.#points = fillSeries(stats).map((p) => ({ ...p, backfill: true }))
      this.#uniqueSources = stats.totals.unique_sources
      topLists.update(stats.top)
      table.prepend(events.events.slice().reverse(), { fresh: false })
    } catch (err) {
      if (signal.aborted) return
      if (err instanceof ApiError && (err.isTokenProblem || err.code === 'invalid_query' || err.code === 'insufficient_ability')) {
        this.#host.handleFailure(err, this.#host.restart)
        return
      }
      // The backfill is a nicety: the tail below reports lasting trouble (a deleted stream included).
    }
    setLoading(false)
    this.#render()
    void this.#runTail()
    void this.#refreshTop()
  }

  togglePause () {
    if (this.#signal.aborted) return
    this.#paused = !this.#paused
    if (!this.#paused) {
      if (this.#pausedLost > 0) this.#host.table.notice(`${formatCountOf(this.#pausedLost, 'event')} that arrived while paused are not shown (only the last ${maxTailRows} are kept).`)
      this.#pending.push(...this.#buffer)
      this.#buffer = []
      this.#pausedArrived = 0
      this.#pausedLost = 0
      this.#flush()
    }
    setConn(this.#paused ? 'paused' : 'live')
    this.#renderPause()
  }

  async #runTail () {
    const { api, state, table } = this.#host
    await followTail(api, streamPath(state.stream, 'tail', { q: state.q }), this.#signal, {
      onOpen: (reconnected) => {
        // Only a reconnect has a retry banner of the tail's to take down (not, say, the notice
        // that the stream asked for is gone).
        if (reconnected) {
          table.notice('Reconnected. Events sent while the tail was away are not shown here; pick a time range to see them.')
          setBanner(null)
        }
        setConn(this.#paused ? 'paused' : 'live')
      },
      onMessage: (type, data) => this.#onMessage(type, data),
      onRetry: (delay, failures, err) => {
        const why = err instanceof ApiError ? err.message : err ? 'Cannot reach Sluice' : 'The tail ended'
        setConn('reconnecting', `Reconnecting in ${Math.round(delay / 1000)} s`)
        if (failures >= 2) setBanner(`${why}. Retrying in ${Math.round(delay / 1000)} s…`, 'warn')
      },
      onFatal: (err) => this.#host.handleFailure(err, this.#host.restart),
    })
  }

  /**
   * @param {string} type the SSE event type
   * @param {string} data its JSON
   */
  #onMessage (type, data) {
    if (this.#signal.aborted) return
    /** @type {unknown} */
    let payload
    try { payload = parseJson(data) } catch { return }
    if (type === 'event') {
      this.#onEvent(/** @type {SluiceEvent} */ (payload))
    } else if (type === 'stats') {
      this.#host.countLive(/** @type {StatsPoint} */ (payload).count ?? 0)
      this.#addPoint(/** @type {StatsPoint} */ (payload))
      this.#render()
    } else if (type === 'dropped') {
      this.#dropped += /** @type {{ count: number }} */ (payload).count
      if (!this.#paused) this.#frame ||= requestAnimationFrame(() => this.#flush())
    }
  }

  /** @param {SluiceEvent} event */
  #onEvent (event) {
    this.#received++
    if (this.#paused) {
      this.#pausedArrived++
      this.#buffer.push(event)
      if (this.#buffer.length > maxTailRows) { this.#buffer.shift(); this.#pausedLost++ }
      this.#renderPause()
      return
    }
    this.#pending.push(event)
    if (this.#pending.length > maxTailRows) this.#pending.shift()
    this.#frame ||= requestAnimationFrame(() => this.#flush())
  }

  /** Renders the events that arrived since the last frame: one DOM update per frame, however fast they come. */
  #flush () {
    this.#frame = 0
    if (this.#signal.aborted) return
    if (this.#pending.length > 0) {
      this.#host.table.prepend(this.#pending)
      this.#pending = []
      showEventsEmpty(this.#host, null)
    }
    if (this.#dropped > 0) {
      this.#host.table.noticeDropped(this.#dropped)
      this.#dropped = 0
    }
    this.#renderCount()
  }

  #renderCount () {
    $('events-count').textContent = `${formatCount(this.#received)} received · newest on top`
  }

  #renderPause () {
    const button = $('pause')
    if (!this.#paused) {
      button.textContent = 'Pause'
      button.setAttribute('aria-pressed', 'false')
      return
    }
    button.textContent = this.#pausedArrived > 0 ? `Resume · ${formatCount(this.#pausedArrived)} new` : 'Resume'
    button.setAttribute('aria-pressed', 'true')
  }

  /**
   * Adds a tail `stats` event to the rolling window. The server stamps it with the time it was sent
   * (the end of the second it covers); the point is placed at the start of that second, like a
   * /stats bucket. Backfilled buckets it overlaps give way to it; a missed second shows as a gap;
   * points older than the window fall off.
   * @param {StatsPoint} stats
   */
  #addPoint (stats) {
    const points = this.#points
    const point = { ...stats, t: stats.t - 1000 }
    for (let newest = points.at(-1); newest?.backfill && newest.t > point.t - 1000; newest = points.at(-1)) points.pop()
    const last = points.at(-1)
    if (last && point.t <= last.t) return
    if (last && point.t - last.t > 2500) points.push({ t: last.t + 1000, gap: true })
    points.push(point)
    const oldest = point.t - liveWindowMs
    while (points.length > 0 && points[0].t <= oldest) points.shift()
  }

  #render () {
    const points = this.#points
    const to = (points.at(-1)?.t ?? Date.now()) + 1000
    this.#host.charts.update(points, { from: to - liveWindowMs, to, stepMs: 1000 })
    let count = 0
    let errors = 0
    let bytes = 0
    for (const p of points) {
      if (p.gap) continue
      count += p.count ?? 0
      errors += (p.status_4xx ?? 0) + (p.status_5xx ?? 0)
      bytes += p.bytes ?? 0
    }
    const now = points.findLast((p) => !p.gap)
    renderTotals(
      { count, errorRate: count > 0 ? errors / count : 0, bytes, uniqueSources: this.#uniqueSources },
      {
        count: `${formatRate(now?.count ?? 0)}/s now · last 5 min`,
        errors: `${formatCount(errors)} with status ≥ 400`,
        bytes: `${formatBytes(now?.bytes ?? 0)}/s now`,
        sources: 'last 5 min',
      })
    if (this.#host.table.size === 0 && this.#pending.length === 0) showEventsEmpty(this.#host, 'live')
    this.#renderCount()
  }

  async #refreshTop () {
    const signal = this.#signal
    const { api, state, topLists } = this.#host
    while (!signal.aborted) {
      try {
        await sleep(liveTopRefreshMs, signal)
        /** @type {StatsAnswer} */
        const stats = await api.get(streamPath(state.stream, 'stats', { from: 'now-5m', to: 'now' }), { signal })
        this.#uniqueSources = stats.totals.unique_sources
        topLists.update(stats.top)
      } catch (err) {
        if (signal.aborted) return
        if (err instanceof ApiError && err.isTokenProblem) { this.#host.handleFailure(err, this.#host.restart); return }
      }
    }
  }
}
