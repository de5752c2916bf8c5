// @ts-check
// The Explore view: search any field, see the hits over time, the fields of the matching events,
// the events themselves, one event in its context, and follow the same search live.
//
// Contract: the parts (histogram, sidebar, table, context panel, search suggestions) are made
// once; each start() reads one view (stream, range, q, columns, grouping, open event) under the
// signal app.js aborts when anything changes. The first render is three parallel reads, whatever
// the range: /fields (sampled by the server past 200,000 events), /stats?by=<grouping> and one
// page of /events, each part drawn as its read answers (bench/README.md, "Explore: first
// render", has their times over 30 M events). Live mode (range "live") reads the
// last 15 minutes the same way, then prepends the tail's events (same q) once per animation frame
// and counts them into the histogram. Column, grouping and open-event changes touch only what they
// change and go into the URL hash at once.
import { ApiError, isAbort } from './api.js'
import { $, el, replaceChildren, show } from './dom.js'
import { formatCount, formatCountOf, formatEventTime } from './format.js'
import { defaultColumns, fieldValue, valueText } from './explore-columns.js'
import { ContextView } from './explore-context.js'
import { createHistogram } from './explore-histogram.js'
import { followEvents, LiveFeed } from './explore-live.js'
import { dropTerm, emptySearchHints, setFilter, toggleFilter } from './explore-query.js'
import { FieldSidebar } from './explore-sidebar.js'
import { SearchSuggestions } from './explore-suggest.js'
import { ExploreTable } from './explore-table.js'
import { maxTailRows } from './panels.js'
import { setBanner, setConn, setLoading } from './status-bar.js'
import { defaultBy, rangeParams, rangeSpanMs } from './url-state.js'
import { rangeMs } from './state.js'
import { readsInTurn, streamPath } from './view-common.js'

/** @typedef {import('./types.js').SluiceEvent} SluiceEvent */
/** @typedef {import('./types.js').StatsAnswer} StatsAnswer */
/** @typedef {import('./types.js').EventsAnswer} EventsAnswer */
/** @typedef {import('./types.js').FieldsAnswer} FieldsAnswer */
/** @typedef {import('./types.js').ContextAnswer} ContextAnswer */
/** @typedef {import('./types.js').FieldInfo} FieldInfo */

/** Events per /events page. */
const pageSize = 100
/** Top values per field in the sidebar and the suggestions. */
const topValues = 10
/**
 * Events /fields counts exactly; past it, evenly spread slices of the range holding about this
 * many: the sidebar needs shares and top values, and a quarter of the server's default reads a
 * quarter of the rows (bench/README.md, "Explore: first render").
 */
const fieldsSample = 50_000
/**
 * Past this many events an export is streamed to a file instead of held in memory as a Blob
 * (about 50 MB of NDJSON at 500 bytes an event).
 */
const blobMaxEvents = 100_000
/** Live mode's histogram, sidebar and backfill cover this much time before the tail (ms). */
const liveSpan = '15m'
/** Live mode: how long after events arrive the sidebar is read again (ms). */
const liveFieldsMs = 5000
/**
 * Live mode: how often the sidebar and the hits are read again when nothing arrives (ms), so that
 * events leaving the 15 minutes leave the hits too: read only after arrivals, a quiet stream's
 * hits stayed where they were.
 */
const liveQuietMs = 60_000

/**
 * The range Explore reads for a state: live mode's last 15 minutes, else the chosen range.
 * @param {import('./state.js').AppState} state
 */
function readRange (state) {
  return state.range === 'live' ? { from: `now-${liveSpan}`, to: 'now' } : state.window ?? rangeParams(state)
}

/**
 * The first /events page Explore reads for a state; app.js reads the same one to choose the view
 * and hands the answer on (a read saved).
 * @param {import('./state.js').AppState} state
 */
export function firstPagePath (state) {
  return streamPath(state.stream, 'events', { ...readRange(state), q: state.q, limit: pageSize })
}

/** @typedef {{ path: string, answer: EventsAnswer }} Prefetched an /events answer read already */

/**
 * What Explore needs of the app.
 * @typedef {object} ExploreHost
 * @property {import('./api.js').Api} api
 * @property {import('./state.js').AppState} state
 * @property {(err: unknown, retry: () => void) => void} handleFailure
 * @property {() => void} restart
 * @property {(q: string) => void} applySearch
 * @property {(from: number, to: number) => void} zoomTo
 * @property {() => void} writeHash the state changed without a new view (columns, grouping, open event)
 * @property {(count: number) => void} countLive the stream took `count` events in the last second (Live)
 */

/**
 * Marks a panel (`x-hist`, `x-fields`) as showing an earlier answer while its read runs: its card
 * gets aria-busy, which app.css dims.
 * @param {string} id
 * @param {boolean} on
 */
function busy (id, on) {
  const card = $(id).closest('.card')
  if (card === null) return
  if (on) card.setAttribute('aria-busy', 'true')
  else card.removeAttribute('aria-busy')
}

export class Explore {
  /** @type {ExploreHost} */
  #host
  #histogram
  #sidebar
  #table
  #context
  #suggestions
  /** The running view's signal. @type {AbortSignal | null} */
  #signal = null
  /** @type {{ from: string | number, to: string | number }} */
  #range = { from: 'now-15m', to: 'now' }
  /** @type {string | null} */
  #cursor = null
  #live = false
  /**
   * Matching events over the range (/fields' exact total: /stats widens its range to whole
   * steps), for the hits line and the export; in live mode the tail's arrivals add to it.
   */
  #hits = 0
  /** The last load's failure (an invalid search...), until the next load: export says it rather than "nothing". @type {unknown} */
  #failure = null
  /** Live mode: the sidebar's next read, once events arrived (at most one per liveFieldsMs). */
  #fieldsTimer = 0
  /**
   * Every field the stream's /fields answers named this session (the latest answer's entry of
   * each), so that the search box suggests a field the current search does not match, also after
   * a search with no hits (explore26 F3).
   * @type {{ stream: string, byName: Map<string, FieldInfo> }}
   */
  #knownFields = { stream: '', byName: new Map() }
  /** Live mode's events (null in a range). @type {LiveFeed | null} */
  #feed = null

  /** @param {ExploreHost} host */
  constructor (host) {
    this.#host = host
    this.#histogram = createHistogram($('x-hist'), { onZoom: (from, to) => host.zoomTo(from, to) })
    this.#sidebar = new FieldSidebar($('x-fields'), $('x-fields-summary'), {
      onValue: (name, value, exclude) => this.#filter(name, value, exclude),
      onColumn: (name) => this.#toggleColumn(name),
      onGroup: (name) => this.#groupBy(name),
      onDrop: (term) => { host.state.event = null; host.applySearch(dropTerm(host.state.q, term)) },
    })
    this.#table = new ExploreTable($('x-table', HTMLTableElement), {
      onFilter: (name, value, exclude) => this.#filter(name, value, exclude, true),
      onContext: (event) => { if (event.id) this.#openContext(event.id) },
      onColumn: (name) => this.#toggleColumn(name),
      onOpen: (event) => { host.state.event = event?.id ?? null; host.writeHash() },
    })
    this.#context = new ContextView($('x-context'), {
      load: (id, before, after, signal) => host.api.get(streamPath(host.state.stream, `events/${encodeURIComponent(id)}/context`, { before, after }), { signal }),
      onError: (err) => { if (!isAbort(err)) host.handleFailure(err, () => {}) },
      onClose: () => { host.state.context = null; host.writeHash() },
      onFilter: (name, value, exclude) => { this.#context.close(); this.#filter(name, value, exclude, true) },
    })
    // Suggestions come from Explore's last /fields answer: in the panels there is none to offer.
    this.#suggestions = new SearchSuggestions($('q', HTMLInputElement), $('q-suggest'), () => ($('explore-view').hidden ? [] : this.#suggestable()))
    $('x-load-more').addEventListener('click', () => void this.loadMore())
    $('x-pause').addEventListener('click', () => this.togglePause())
    $('x-export').addEventListener('click', () => void this.export())
    $('search-form').addEventListener('submit', () => this.#suggestions.close())
    document.addEventListener('keydown', (e) => this.#onKey(e))
  }

  /**
   * @param {AbortSignal} signal aborted when the view is left
   * @param {Prefetched | null} [prefetched] the first page, when app.js read it to choose the view
   */
  async start (signal, prefetched = null) {
    const { api, state } = this.#host
    this.#signal = signal
    this.#live = state.range === 'live'
    this.#feed = this.#live ? new LiveFeed(signal, {
      onArrival: (event) => {
        const value = fieldValue(event, state.by)
        this.#histogram.count(event.ts, value === undefined ? null : valueText(value))
      },
      onShow: (events) => { this.#table.prepend(events); this.#showEmpty(null) },
      onChange: () => { this.#renderCount(); this.#renderPause(); this.#renderHits(); this.#refreshFieldsSoon(signal) },
    }) : null
    if (this.#live) {
      const quiet = window.setInterval(() => this.#refreshFieldsSoon(signal), liveQuietMs)
      signal.addEventListener('abort', () => clearInterval(quiet), { once: true })
    }
    this.#cursor = null
    this.#range = readRange(state)
    this.#hits = 0
    this.#failure = null
    clearTimeout(this.#fieldsTimer)
    this.#fieldsTimer = 0
    const withDate = !this.#live && rangeSpanMs(state) >= 86_400_000
    const q = state.q
    this.#table.reset(state.columns ?? this.#table.columns, { withDate })
    this.#context.close()
    $('x-events-title').textContent = this.#live ? 'Live' : 'Events'
    $('x-events-count').textContent = ''
    $('x-hits').textContent = ''
    $('x-grouped').textContent = `by ${state.by}`
    show($('x-pause'), this.#live)
    show($('x-load-more'), false)
    this.#renderPause()
    this.#showEmpty(null)
    setConn(this.#live ? 'connecting' : 'history', this.#live ? undefined : 'Loading…')
    // The histogram and the sidebar show the previous search until their reads answer: dimmed
    // and marked busy meanwhile (explore19 F5: the old counts stood beside the new results).
    busy('x-hist', true)
    busy('x-fields', true)

    // Each part is drawn as its read answers (the events page first: it is the cheapest read), so
    // a slow /fields or /stats over a long range holds back only its own part. The histogram
    // reads the series and the groups only (lists=none: the top lists, most of a raw range's
    // stats read, are the panels').
    /** @param {string} name */
    const mark = (name) => { if (!signal.aborted) performance.mark(`explore:${name}`) }
    for (const name of ['fields', 'histogram', 'events', 'rendered']) performance.clearMarks(`explore:${name}`)
    // With a q over more than an hour each read scans raw events and they go one after the other,
    // the events first (view-common.js readsInTurn); otherwise all three at once.
    const inTurn = readsInTurn(state)
    const events = inTurn(() => (prefetched?.path === firstPagePath(state) ? Promise.resolve(prefetched.answer) : api.get(firstPagePath(state), { signal }))
      .then((/** @type {EventsAnswer} */ answer) => {
        if (signal.aborted) return
        this.#showFirstPage(answer, withDate)
        this.#sidebar.refresh(this.#sidebarContext()) // the columns may have changed
        mark('events')
      }))
    const stats = inTurn(() => api.get(streamPath(state.stream, 'stats', { ...this.#range, q, by: state.by, lists: 'none' }), { signal })
      .then((/** @type {StatsAnswer} */ answer) => { if (!signal.aborted) { this.#showStats(answer); busy('x-hist', false); mark('histogram') } }))
    const fields = inTurn(() => api.get(streamPath(state.stream, 'fields', { ...this.#range, q, top: topValues, sample: fieldsSample }), { signal })
      .then((/** @type {FieldsAnswer} */ answer) => {
        if (signal.aborted) return
        this.#remember(answer)
        this.#sidebar.update(answer, this.#sidebarContext())
        busy('x-fields', false)
        this.#hits = answer.total
        this.#renderHits()
        mark('fields')
      }))
    const [fieldsRead, statsRead, eventsRead] = await Promise.allSettled([fields, stats, events])
    if (signal.aborted) return
    if (statsRead.status === 'rejected') this.#histogram.clear()
    if (fieldsRead.status === 'rejected') this.#sidebar.update(null, this.#sidebarContext())
    busy('x-hist', false)
    busy('x-fields', false)
    const failed = [fieldsRead, statsRead, eventsRead].flatMap((r) => (r.status === 'rejected' ? [r.reason] : []))
    if (failed.length > 0) {
      /** @param {unknown} e */
      const rank = (e) => (e instanceof ApiError ? (e.isTokenProblem ? 0 : e.code === 'invalid_query' ? 1 : 2) : 3)
      this.#failure = failed.sort((a, b) => rank(a) - rank(b))[0]
      this.#host.handleFailure(this.#failure, this.#host.restart)
      return
    }
    state.failures = 0
    setLoading(false)
    $('screen-dashboard').dataset.explore = 'ready'
    // For bench/explore.bench.ts: the first render is done once the frame after it is drawn.
    requestAnimationFrame(() => setTimeout(() => { if (!signal.aborted) performance.mark('explore:rendered') }))
    if (state.event) await this.#restoreEvent(state.event, signal)
    if (state.context && !signal.aborted) this.#openContext(state.context)
    if (this.#live) void this.#follow(signal)
    else setConn('history', `Updated ${formatEventTime(Date.now()).slice(0, 8)}`)
  }

  /** The next page of events, if there is one. */
  async loadMore () {
    const signal = this.#signal
    if (signal === null || signal.aborted || this.#cursor === null) return
    const { api, state } = this.#host
    const button = $('x-load-more', HTMLButtonElement)
    button.disabled = true
    try {
      /** @type {EventsAnswer} */
      const answer = await api.get(streamPath(state.stream, 'events', { ...this.#range, q: state.q, limit: pageSize, cursor: this.#cursor }), { signal })
      this.#table.append(answer.events)
      this.#setCursor(answer.next_cursor ?? null)
      this.#renderCount()
    } catch (err) {
      this.#host.handleFailure(err, () => void this.loadMore())
    } finally {
      button.disabled = false
    }
  }

  togglePause () {
    const feed = this.#feed
    if (feed === null || this.#signal?.aborted) return
    const lost = feed.togglePause()
    if (lost > 0) setBanner(`${formatCountOf(lost, 'event')} that arrived while paused are not shown (only the last ${maxTailRows} are kept).`, 'warn')
    setConn(feed.paused ? 'paused' : 'live')
  }

  /**
   * Downloads every event of the current search over the range as NDJSON (/export). The API
   * wants the token in a header, so the page fetches the body and saves it from a blob: URL; past
   * blobMaxEvents it streams the body into a file the user picks (File System Access API), or,
   * where the browser has none, says how to fetch it with curl.
   */
  async export () {
    const { api, state } = this.#host
    const button = $('x-export', HTMLButtonElement)
    const path = streamPath(state.stream, 'export', { ...this.#range, q: state.q })
    // Named by its range as the API's Content-Disposition names it (live: the range up to now).
    const range = state.window ?? { from: Date.now() - rangeMs[liveSpan], to: Date.now() }
    const name = `${state.stream}-${new Date(range.from).toISOString()}-${new Date(range.to).toISOString()}.ndjson`.replace(/:/g, '')
    /** @type {((options: object) => Promise<any>) | undefined} the File System Access API (Chromium) */
    const savePicker = /** @type {any} */ (window).showSaveFilePicker
    const hits = this.#totalHits
    if (this.#failure instanceof ApiError && this.#failure.code === 'invalid_query') {
      setBanner('The search is not valid (its mark in the search box says where): correct it to export.', 'warn')
      return
    }
    if (hits === 0) {
      setBanner('No events match the search over this range: nothing to export.', 'warn')
      return
    }
    const big = hits > blobMaxEvents
    if (big && savePicker === undefined) {
      setBanner(`${formatCountOf(hits, 'event')} are too many to export in this browser: narrow the search or the range, or run ` +
        `curl -H "Authorization: Bearer $SLUICE_TOKEN" "${location.origin}${path}" > ${name}`, 'warn')
      return
    }
    button.disabled = true
    const label = button.textContent
    button.textContent = 'Exporting…'
    try {
      if (big && savePicker !== undefined) {
        // Streamed to a file the user picks: memory stays flat however many events there are.
        const file = await savePicker.call(window, { suggestedName: name, types: [{ description: 'NDJSON', accept: { 'application/x-ndjson': ['.ndjson'] } }] })
        const res = await api.response(path, { accept: 'application/x-ndjson' })
        if (res.body !== null) await res.body.pipeTo(await file.createWritable())
        return
      }
      const blob = await api.blob(path, { accept: 'application/x-ndjson' })
      const url = URL.createObjectURL(blob)
      const link = el('a', { href: url, download: name, hidden: true })
      document.body.append(link)
      link.click()
      link.remove()
      setTimeout(() => URL.revokeObjectURL(url), 60_000)
    } catch (err) {
      if (!(err instanceof DOMException && err.name === 'AbortError')) this.#host.handleFailure(err, () => void this.export())
    } finally {
      button.disabled = false
      button.textContent = label
    }
  }

  /** The fields the suggestions offer (the last /fields answer). */
  get fields () { return this.#sidebar.fields }

  // --- rendering -----------------------------------------------------------------------------

  /**
   * @param {EventsAnswer} answer
   * @param {boolean} withDate
   */
  #showFirstPage (answer, withDate) {
    const columns = this.#host.state.columns ?? defaultColumns(answer.events)
    this.#table.reset(columns, { withDate })
    this.#table.append(answer.events)
    this.#setCursor(answer.next_cursor ?? null)
    this.#renderCount()
    this.#showEmpty(answer.events.length === 0 ? (this.#live ? 'live' : 'history') : null)
  }

  /** @param {StatsAnswer} stats */
  #showStats (stats) {
    this.#histogram.update(stats, this.#host.state.by)
    // A sampled grouping is an estimate (docs/api.md section 7.4): said beside the legend.
    const grouped = $('x-grouped')
    grouped.textContent = `by ${this.#host.state.by}${stats.sampled === true ? ' · sampled' : ''}`
    grouped.title = stats.sampled === true ? 'The values were found over slices of the range: their counts are scaled up from the slices, or counted exactly where few, and a rare value may be missing (docs/api.md section 7.4)' : ''
  }

  /** The matching events: over the range, plus those the tail brought since (live mode). */
  get #totalHits () { return this.#hits + (this.#feed?.received ?? 0) }

  #renderHits () {
    const hits = this.#totalHits
    $('x-hits').textContent = formatCountOf(hits, 'hit')
  }

  /**
   * Live mode: reads the sidebar's fields again a while after events arrived, so that it counts
   * them too (one read per liveFieldsMs at most, however fast they come), and once per
   * liveQuietMs when none did.
   * @param {AbortSignal} signal
   */
  #refreshFieldsSoon (signal) {
    if (this.#fieldsTimer !== 0 || signal.aborted) return
    const { api, state } = this.#host
    this.#fieldsTimer = window.setTimeout(() => {
      this.#fieldsTimer = 0
      if (signal.aborted) return
      // The read counts the last 15 minutes as of now, the tail's arrivals so far included: the
      // hits become its total plus what arrives after it, so that events leaving the window leave
      // the hits too (explore32c F1: the hits grew by every arrival and never fell).
      const arrived = this.#feed?.received ?? 0
      api.get(streamPath(state.stream, 'fields', { ...readRange(state), q: state.q, top: topValues, sample: fieldsSample }), { signal })
        .then((/** @type {FieldsAnswer} */ answer) => {
          if (signal.aborted) return
          this.#remember(answer)
          this.#sidebar.update(answer, this.#sidebarContext())
          this.#hits = answer.total - arrived
          this.#renderHits()
        })
        .catch(() => {}) // the next arrival (or the next minute) tries again; the tail goes on either way
    }, liveFieldsMs)
  }

  /** @param {FieldsAnswer} answer a /fields answer of the current stream */
  #remember (answer) {
    const stream = this.#host.state.stream ?? ''
    if (this.#knownFields.stream !== stream) this.#knownFields = { stream, byName: new Map() }
    for (const f of answer.fields) this.#knownFields.byName.set(f.name, f)
  }

  /** The fields the search box suggests: the current search's, then the stream's others known. */
  #suggestable () {
    const current = this.#sidebar.fields
    if (this.#knownFields.stream !== (this.#host.state.stream ?? '')) return current
    const names = new Set(current.map((f) => f.name))
    return [...current, ...[...this.#knownFields.byName.values()].filter((f) => !names.has(f.name))]
  }

  /** @param {string | null} cursor */
  #setCursor (cursor) {
    this.#cursor = cursor
    show($('x-load-more'), cursor !== null && !this.#live)
  }

  #renderCount () {
    const size = this.#table.size
    $('x-events-count').textContent = this.#feed
      ? `${formatCount(this.#feed.received)} received · newest on top`
      : `${formatCount(size)} shown · newest first`
  }

  #renderPause () {
    const button = $('x-pause')
    const paused = this.#feed?.paused ?? false
    const waiting = this.#feed?.waiting ?? 0
    button.setAttribute('aria-pressed', String(paused))
    button.textContent = !paused ? 'Pause' : waiting > 0 ? `Resume · ${formatCount(waiting)} new` : 'Resume'
  }

  /** @param {'live' | 'history' | null} kind */
  #showEmpty (kind) {
    const box = $('x-empty')
    if (kind === null) { show(box, false); return }
    const q = this.#host.state.q
    const hints = q ? emptySearchHints(q) : []
    replaceChildren(box,
      el('p', { class: 'empty-title' }, q ? `No events match “${q}”${kind === 'live' ? ' yet' : ' in this range'}.` : kind === 'live' ? 'Waiting for events…' : 'No events in this range.'),
      ...hints.map((hint) => el('p', { class: 'x-hint' }, hint.text, ' ',
        el('button', { type: 'button', class: 'btn', onclick: () => this.#host.applySearch(hint.q) }, `Search ${hint.q}`))),
      q ? el('button', { type: 'button', class: 'btn', onclick: () => this.#host.applySearch('') }, 'Clear the search') : null)
    show(box)
  }

  #sidebarContext () {
    const { state } = this.#host
    return { q: state.q, columns: this.#table.columns, by: state.by }
  }

  // --- actions -------------------------------------------------------------------------------

  /**
   * A sidebar click cycles the value (for, against, dropped: toggleFilter); a row's + or − sets it
   * (set: setFilter).
   * @param {string} name
   * @param {string} value
   * @param {boolean} exclude
   * @param {boolean} [set]
   */
  #filter (name, value, exclude, set = false) {
    this.#host.state.event = null
    const q = this.#host.state.q
    this.#host.applySearch(set ? setFilter(q, name, value, exclude) : toggleFilter(q, name, value, { exclude }))
  }

  /** @param {string} name */
  #toggleColumn (name) {
    const current = this.#table.columns
    const columns = current.includes(name) ? current.filter((c) => c !== name) : [...current, name]
    if (columns.length === 0) return
    this.#host.state.columns = columns
    this.#host.writeHash()
    this.#table.setColumns(columns)
    this.#sidebar.refresh(this.#sidebarContext())
  }

  /**
   * Groups the histogram by another field, or by level again when it is grouped by this one
   * (the group button toggles): only /stats is read again.
   * @param {string} field
   */
  async #groupBy (field) {
    const { api, state } = this.#host
    const signal = this.#signal
    const name = state.by === field ? defaultBy : field
    if (signal === null || state.by === name) return
    state.by = name
    this.#host.writeHash()
    this.#sidebar.refresh(this.#sidebarContext())
    $('x-grouped').textContent = `by ${name}`
    busy('x-hist', true)
    try {
      this.#showStats(await api.get(streamPath(state.stream, 'stats', { ...this.#range, q: state.q, by: name, lists: 'none' }), { signal }))
    } catch (err) {
      this.#host.handleFailure(err, () => {})
    } finally {
      if (!signal.aborted) busy('x-hist', false)
    }
  }

  /** @param {string} id */
  #openContext (id) {
    this.#host.state.context = id
    this.#host.writeHash()
    void this.#context.open(id, this.#table.columns)
  }

  /**
   * A link's open event: its row when it is on the first page, else read alone and pinned on top.
   * @param {string} id
   * @param {AbortSignal} signal
   */
  async #restoreEvent (id, signal) {
    if (this.#table.openById(id)) return
    const { api, state } = this.#host
    try {
      /** @type {ContextAnswer} */
      const answer = await api.get(streamPath(state.stream, `events/${encodeURIComponent(id)}/context`, { before: 0, after: 0 }), { signal })
      if (!signal.aborted) this.#table.pin(answer.event)
    } catch (err) {
      if (signal.aborted) return
      if (err instanceof ApiError && err.code === 'not_found') { state.event = null; this.#host.writeHash(); return }
      this.#host.handleFailure(err, () => {})
    }
  }

  // --- live ----------------------------------------------------------------------------------

  /** @param {AbortSignal} signal */
  async #follow (signal) {
    const { api, state } = this.#host
    const feed = this.#feed
    if (feed === null) return
    await followEvents(api, streamPath(state.stream, 'tail', { q: state.q }), signal, {
      onEvent: (event) => feed.add(event),
      onDropped: (count) => feed.dropped(count),
      onStats: (count) => this.#host.countLive(count),
      onState: (conn, delayMs) => setConn(conn === 'live' && feed.paused ? 'paused' : conn, conn === 'reconnecting' ? `Reconnecting in ${Math.round((delayMs ?? 0) / 1000)} s` : undefined),
      onFatal: (err) => this.#host.handleFailure(err, this.#host.restart),
    })
  }

  // --- keyboard ------------------------------------------------------------------------------

  /**
   * j/k move the cursor row, Enter opens it, Esc closes the context, then the open row.
   * (`/` focuses the search: app.js.)
   * @param {KeyboardEvent} e
   */
  #onKey (e) {
    if ($('explore-view').hidden || $('screen-dashboard').hidden || e.ctrlKey || e.metaKey || e.altKey) return
    const active = document.activeElement
    const typing = active !== null && /^(INPUT|TEXTAREA|SELECT)$/.test(active.tagName)
    if (e.key === 'Escape') {
      if (this.#context.isOpen) { this.#context.close(); e.preventDefault(); return }
      if (!typing && this.#table.close()) e.preventDefault()
      return
    }
    if (typing || this.#context.isOpen) return
    if (e.key === 'j' || e.key === 'k') {
      e.preventDefault()
      this.#table.move(e.key === 'j' ? 1 : -1)
    } else if (e.key === 'Enter' && (active === null || active === document.body || active.matches('tr.event'))) {
      e.preventDefault()
      this.#table.openCursor()
    }
  }
}
