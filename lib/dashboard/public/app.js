// @ts-check
// The Sluice dashboard's wiring. State lives in one object (state.js); every change of stream,
// range or search starts a new view with its own AbortController: Explore (explore-view.js), or
// the access-log panels, Live (live-view.js) or a historical range (history-view.js). Which one a
// stream opens in follows its newest events (explore-columns.js isMostlyAccessLog) unless the URL
// or a click says. This file connects the controls, the sign-in (sign-in.js), the URL hash
// (url-state.js) and the one place where failures meet the user.
import { ApiError, createApi, isAbort, NetworkError, sleep } from './api.js'
import { $, $$, el, replaceChildren, show, targetOf } from './dom.js'
import { addTerms, formatAgo, formatBytes, formatCountOf, toDateTimeLocal } from './format.js'
import { createCharts } from './charts.js'
import { DetailDrawer, EventsTable, renderTotals, TopLists } from './panels.js'
import { forgetToken, keepToken, showNoStreams, showScreen, showSignIn, showSignInError, storedToken, wireSignIn } from './sign-in.js'
import { state, streamKey } from './state.js'
import { retryDelayMs, setBanner, setConn, setLoading, showQueryError } from './status-bar.js'
import { defaultBy, formatRange, readHash, resolveWindow, writeHash } from './url-state.js'
import { Explore, firstPagePath } from './explore-view.js'
import { isMostlyAccessLog } from './explore-columns.js'
import { streamPath } from './view-common.js'
import { HistoryView } from './history-view.js'
import { LiveView } from './live-view.js'

/** @typedef {import('./view-common.js').ViewHost} ViewHost */
/** @typedef {import('./types.js').StreamInfo} StreamInfo */

state.token = storedToken()
const api = createApi(() => state.token)
const qInput = $('q', HTMLInputElement)
const streamSelect = $('stream-select', HTMLSelectElement)
const customRange = $('custom-range', HTMLFormElement)
const customFrom = $('custom-from', HTMLInputElement)
const customTo = $('custom-to', HTMLInputElement)

const charts = createCharts({ events: $('chart-events'), latency: $('chart-latency'), bytes: $('chart-bytes') }, { onZoom: zoomTo })
const detail = new DetailDrawer($('detail'), applyFilterTerms)
const topLists = new TopLists($('toplists'), applyFilterTerms)
const table = new EventsTable($('events-body', HTMLTableSectionElement), (event) => detail.open(event))
/** What the views may use of the app. @type {ViewHost} */
const host = { api, state, charts, topLists, table, handleFailure, restart: () => startView(), applySearch, clearPanels, countLive }
const explore = new Explore({ api, state, handleFailure, restart: () => startView(), applySearch, zoomTo, writeHash: () => writeHash(state), countLive })
/** The running panels view (null in Explore). @type {LiveView | HistoryView | null} */
let view = null
/** The view each stream's newest events called for, this session. @type {Map<string, 'explore' | 'panels'>} */
const detectedModes = new Map()

// --- start -----------------------------------------------------------------------------------

function boot () {
  setInterval(renderStreamMeta, 15_000) // "last event N min ago" ages
  readHashIntoPage()
  wireControls()
  if (state.token) void loadStreams()
  else signInAgain()
}

function wireControls () {
  wireSignIn({ onToken: signIn, onSignOut: signOut })
  streamSelect.addEventListener('change', () => selectStream(streamSelect.value))
  for (const button of document.querySelectorAll('[data-range]')) {
    if (button instanceof HTMLElement) button.addEventListener('click', () => selectRange(button.dataset.range ?? 'live'))
  }
  customRange.addEventListener('submit', (e) => { e.preventDefault(); applyCustomRange() })
  // An end before the start marks the end invalid; any edit clears it, else the browser would
  // refuse every later submit of the form.
  for (const input of [customFrom, customTo]) input.addEventListener('input', () => customTo.setCustomValidity(''))
  customRange.addEventListener('keydown', (e) => { if (e.key === 'Escape') show(customRange, false) })
  document.addEventListener('click', (e) => {
    if (!customRange.hidden && !targetOf(e)?.closest('.range-wrap')) show(customRange, false)
  })
  $('search-form').addEventListener('submit', (e) => { e.preventDefault(); applySearch(qInput.value) })
  // The clear button (and Esc) of a search field: a new view without the search. Enter fires this
  // event too, before the submit: deferred, it finds the submit has applied the empty search.
  qInput.addEventListener('search', () => setTimeout(() => { if (qInput.value === '' && state.q !== '') applySearch('') }))
  qInput.addEventListener('input', () => showQueryError(null))
  // Esc leaves the box with the applied search back in it (j, k and Esc's own keys then work): a
  // search field's native Esc cleared it and ran the view unfiltered, losing a hand-written query
  // (explore34c H7). The clear button still clears; an open suggestion list takes Esc first.
  qInput.addEventListener('keydown', (e) => {
    if (e.key !== 'Escape' || e.defaultPrevented || !$('q-suggest').hidden) return
    e.preventDefault()
    qInput.value = state.q
    qInput.blur()
  })
  $('pause').addEventListener('click', () => { if (view instanceof LiveView) view.togglePause() })
  $('load-more').addEventListener('click', () => { if (view instanceof HistoryView) void view.loadMore() })
  $('refresh').addEventListener('click', () => startView())
  $('streams-refresh').addEventListener('click', () => void loadStreams())
  for (const button of document.querySelectorAll('[data-mode]')) {
    if (button instanceof HTMLElement) button.addEventListener('click', () => selectMode(button.dataset.mode === 'panels' ? 'panels' : 'explore'))
  }
  document.addEventListener('keydown', (e) => {
    if (e.key === '/' && !/^(INPUT|TEXTAREA|SELECT)$/.test(document.activeElement?.tagName ?? '')) {
      e.preventDefault()
      qInput.focus()
    }
  })
  window.addEventListener('hashchange', () => {
    if (readHashIntoPage() && state.stream && !$('screen-dashboard').hidden) {
      streamSelect.value = state.stream
      if (streamSelect.value !== state.stream) void refreshStreamOptions() // a stream made since the list was read
      startView()
    }
  })
  streamSelect.addEventListener('focus', () => void refreshStreamOptions())
}

/** The URL hash into state and the search box; true when it changed the view. */
function readHashIntoPage () {
  const changed = readHash(state, location.hash)
  qInput.value = state.q
  return changed
}

// --- signing in, streams -----------------------------------------------------------------------

/** @param {string} problem */
function signInAgain (problem = '') {
  stopView()
  showSignIn(problem || null)
}

/** @param {string} token */
async function signIn (token) {
  state.token = token
  await loadStreams({ fromSignIn: true })
}

function signOut () {
  forgetToken()
  state.token = ''
  signInAgain()
}

/**
 * The picker's streams read again (when it gets the focus, or a link names a stream it lacks), so
 * that one created since sign-in can be picked without a reload (explore32c F8). The view is left
 * as it is; a failure leaves the list as it was.
 */
async function refreshStreamOptions () {
  /** @type {{ streams: StreamInfo[] }} */
  let answer
  try {
    answer = await api.get('/api/streams')
  } catch {
    return
  }
  const names = (/** @type {StreamInfo[]} */ list) => list.map((s) => s.name).join('\n')
  if (names(answer.streams) === names(state.streams) || answer.streams.length === 0) return
  state.streams = answer.streams
  fillStreamSelect()
  streamSelect.value = state.stream ?? ''
}

/** The picker's options: the streams of state.streams. */
function fillStreamSelect () {
  replaceChildren(streamSelect, state.streams.map((s) => el('option', { value: s.name, title: s.description || null }, s.name)))
}

/**
 * GET /api/streams, then the dashboard or the "create a stream" screen. gone: the stream that was
 * open and was just found deleted.
 * @param {{ fromSignIn?: boolean, gone?: string | null }} [options]
 */
async function loadStreams ({ fromSignIn = false, gone = null } = {}) {
  /** @type {{ streams: StreamInfo[] }} */
  let answer
  try {
    answer = await api.get('/api/streams')
  } catch (err) {
    if (fromSignIn) showSignInError(err)
    else handleFailure(err, () => void loadStreams())
    return
  }
  keepToken(state.token)
  state.failures = 0
  setBanner(null)
  state.streams = answer.streams
  if (state.streams.length === 0) {
    stopView()
    showNoStreams()
    return
  }
  const names = state.streams.map((s) => s.name)
  const remembered = localStorage.getItem(streamKey)
  // A stream named by the link (or just deleted) that is not there: say so, beside the one shown.
  const missing = gone ?? (state.stream !== null && !names.includes(state.stream) ? state.stream : null)
  if (state.stream === null || !names.includes(state.stream)) state.stream = remembered !== null && names.includes(remembered) ? remembered : names[0]
  fillStreamSelect()
  streamSelect.value = state.stream
  showScreen('dashboard')
  startView()
  if (missing !== null) setBanner(`Stream "${missing}" ${gone !== null ? 'no longer exists' : 'does not exist'}: showing "${state.stream}".`, 'warn')
}

// --- controls --------------------------------------------------------------------------------

/** @param {string} name */
function selectStream (name) {
  state.stream = name
  state.mode = null
  state.columns = null
  state.by = defaultBy
  state.event = null
  state.context = null
  localStorage.setItem(streamKey, name)
  startView()
}

/** @param {string} range 'live', a key of rangeMs, or 'custom' (opens the custom range form) */
function selectRange (range) {
  if (range === 'custom') {
    const to = state.custom?.to ?? Date.now()
    const from = state.custom?.from ?? to - 3_600_000
    customFrom.value = toDateTimeLocal(from)
    customTo.value = toDateTimeLocal(to)
    customTo.setCustomValidity('')
    show(customRange)
    customFrom.focus()
    return
  }
  show(customRange, false)
  state.range = range
  startView()
}

function applyCustomRange () {
  const from = new Date(customFrom.value).getTime()
  const to = new Date(customTo.value).getTime()
  if (!(from < to)) {
    customTo.setCustomValidity('The end must be after the start')
    customTo.reportValidity()
    return
  }
  customTo.setCustomValidity('')
  show(customRange, false)
  zoomTo(from, to)
}

/**
 * @param {number} from ms
 * @param {number} to ms
 */
function zoomTo (from, to) {
  state.range = 'custom'
  state.custom = { from, to }
  startView()
}

/** @param {string} q */
function applySearch (q) {
  state.q = q.trim()
  state.event = null
  state.context = null
  qInput.value = state.q
  startView()
}

/** @param {string[]} terms */
function applyFilterTerms (terms) {
  detail.close()
  applySearch(addTerms(qInput.value, terms))
}

/** @param {'explore' | 'panels'} mode */
function selectMode (mode) {
  if (state.mode === mode) return
  state.mode = mode
  state.event = null
  state.context = null
  startView()
}

function renderRangeButtons () {
  for (const button of document.querySelectorAll('[data-mode]')) button.setAttribute('aria-pressed', String(button instanceof HTMLElement && button.dataset.mode === state.mode))
  for (const button of document.querySelectorAll('[data-range]')) {
    if (button instanceof HTMLElement) button.setAttribute('aria-pressed', String(button.dataset.range === state.range))
  }
  $$('[data-range="custom"]').textContent = state.range === 'custom' && state.custom ? formatRange(state.custom.from, state.custom.to) : 'Custom'
}

// --- failures ----------------------------------------------------------------------------------

/**
 * One place where failures meet the user: a token problem goes back to the sign-in screen, a bad
 * query next to the search box, a missing stream back to the stream list, anything transient
 * (network, 429, 5xx) to a banner and a retry with backoff.
 * @param {unknown} err
 * @param {() => void} retry
 */
function handleFailure (err, retry) {
  if (isAbort(err)) return
  setLoading(false)
  if (err instanceof ApiError) {
    if (err.isTokenProblem) {
      forgetToken()
      state.token = ''
      signInAgain(`Sluice rejected your token (${err.message}). Paste a valid one.`)
      return
    }
    if (err.code === 'invalid_query') {
      stopView()
      clearPanels()
      showQueryError(err.message, err.position)
      setConn('history', 'Fix the search')
      return
    }
    if (err.code === 'insufficient_ability') {
      setBanner(`This token cannot do that: ${err.message}. Sign in with a token that has streams:read and data:read.`, 'error', { label: 'Sign out', run: signOut })
      return
    }
    if (err.code === 'not_found' && state.stream) {
      void checkStreamExists(err)
      return
    }
    if (err.status < 429 || err.status === 501) {
      setBanner(`${err.message} (${err.code}, request ${err.requestId ?? 'unknown'})`)
      return
    }
  } else if (!(err instanceof NetworkError)) {
    console.error(err)
    setBanner(`Something went wrong in the page: ${err instanceof Error ? err.message : String(err)}`)
    return
  }
  state.failures++
  const delay = retryDelayMs(state.failures, err instanceof ApiError ? err.retryAfterS : null)
  const reason = err instanceof ApiError ? err.message : 'Cannot reach Sluice'
  setBanner(`${reason}. Retrying in ${Math.round(delay / 1000)} s…`, 'warn', { label: 'Retry now', run: () => { setBanner(null); retry() } })
  const signal = state.view?.signal
  sleep(delay, signal).then(() => { setBanner(null); retry() }, () => {})
}

/**
 * After a 404: the stream was deleted (back to the list), or this server lacks the route.
 * @param {ApiError} err
 */
async function checkStreamExists (err) {
  try {
    await api.get(`/api/streams/${encodeURIComponent(state.stream ?? '')}`)
    setBanner(`${err.message} (${err.code}, request ${err.requestId ?? 'unknown'})`)
  } catch (again) {
    if (!(again instanceof ApiError && again.code === 'not_found')) { handleFailure(again, () => startView()); return }
    const gone = state.stream
    state.stream = null
    void loadStreams({ gone })
  }
}

// --- views -----------------------------------------------------------------------------------

function stopView () {
  state.view?.abort()
  state.view = null
  view = null
}

function clearPanels () {
  setLoading(false)
  renderTotals({ count: null, errorRate: null, bytes: null, uniqueSources: null })
  charts.clear()
  topLists.update(null)
  table.clear()
  show($('load-more'), false)
  show($('pause'), false)
  $('events-count').textContent = ''
}

function startView () {
  stopView()
  const controller = new AbortController()
  state.view = controller
  state.window = resolveWindow(state, Date.now())
  setLoading(true)
  showQueryError(null)
  setBanner(null)
  detail.close()
  delete $('screen-dashboard').dataset.explore
  void runView(controller.signal)
}

/**
 * Explore or the panels, once it is known which.
 * @param {AbortSignal} signal
 */
async function runView (signal) {
  /** @type {import('./explore-view.js').Prefetched | null} */
  let prefetched = null
  let mode = state.mode ?? detectedModes.get(state.stream ?? '')
  if (mode === undefined) ({ mode, prefetched } = await detectMode(signal))
  if (signal.aborted) return
  state.mode = mode
  writeHash(state)
  renderRangeButtons()
  show($('explore-view'), mode === 'explore')
  show($('panels-view'), mode === 'panels')
  show($('scope-note'), mode === 'panels' && state.range === 'live' && state.q !== '')
  if (mode === 'explore') {
    await explore.start(signal, prefetched)
  } else {
    view = state.range === 'live' ? new LiveView(host, signal) : new HistoryView(host, signal)
    await view.start()
  }
  // After the view's first reads: on a big stream its stats would take their CPU (2 s over 30 M events).
  if (!signal.aborted) void loadStreamMeta(signal)
}

/**
 * The view a stream's events call for: the panels when most are access logs, else Explore. It
 * reads the page of events Explore would show first (handed on, so Explore reads it once); when
 * that is empty, the stream's newest events of the last 7 days. A stream without events (or a
 * failed read) opens the panels, which show how to send one, and is asked again next time.
 * @param {AbortSignal} signal
 * @returns {Promise<{ mode: 'explore' | 'panels', prefetched: import('./explore-view.js').Prefetched | null }>}
 */
async function detectMode (signal) {
  const stream = state.stream ?? ''
  try {
    const path = firstPagePath(state)
    /** @type {import('./types.js').EventsAnswer} */
    const answer = await api.get(path, { signal })
    let access = isMostlyAccessLog(answer.events)
    if (access === null) access = isMostlyAccessLog((await api.get(streamPath(stream, 'events', { from: 'now-7d', to: 'now', limit: 50 }), { signal })).events)
    if (access === null) return { mode: 'panels', prefetched: null }
    const mode = access ? 'panels' : 'explore'
    detectedModes.set(stream, mode)
    return { mode, prefetched: { path, answer } }
  } catch {
    return { mode: 'panels', prefetched: null }
  }
}

/**
 * The line under the search box: retention, events stored, last event.
 * @param {AbortSignal} signal
 */
async function loadStreamMeta (signal) {
  try {
    /** @type {StreamInfo} */
    const s = await api.get(`/api/streams/${encodeURIComponent(state.stream ?? '')}`, { signal })
    streamMeta = {
      stream: state.stream ?? '', retentionDays: s.retention_days ?? 0, events: s.stats?.events ?? 0, bytes: s.stats?.bytes ?? 0,
      lastEventAt: s.stats?.last_event_at ? Date.parse(s.stats.last_event_at) : null, description: s.description ?? '',
    }
  } catch {
    streamMeta = null
  }
  renderStreamMeta()
}

/**
 * The stream's numbers as last read, moved on in Live by the tail's per-second stats (the whole
 * stream's events: reading the stream's stats again would cost a scan of it).
 * @type {{ stream: string, retentionDays: number, events: number, bytes: number, lastEventAt: number | null, description: string } | null}
 */
let streamMeta = null

function renderStreamMeta () {
  const meta = $('stream-meta')
  if (streamMeta === null) { meta.textContent = ''; return }
  const parts = [`${streamMeta.retentionDays}-day retention`, `${formatCountOf(streamMeta.events, 'event')} stored (${formatBytes(streamMeta.bytes)})`]
  if (streamMeta.lastEventAt !== null) parts.push(`last event ${formatAgo(streamMeta.lastEventAt)}`)
  meta.textContent = parts.join(' · ')
  meta.title = streamMeta.description
}

/** @param {number} count events the stream took in the last second (a tail's stats) */
function countLive (count) {
  if (streamMeta === null || streamMeta.stream !== state.stream || !(count > 0)) return
  streamMeta.events += count
  streamMeta.lastEventAt = Date.now()
  renderStreamMeta()
}

boot()
