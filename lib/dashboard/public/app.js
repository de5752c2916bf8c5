// The Sluice dashboard. State lives in one object; every change of stream, range or search starts
// a new "view" (an AbortController): Live opens the tail and moves the charts every second from its
// `stats` events over a rolling five-minute window; a historical range reads /stats and /events
// once. The PAT stays in sessionStorage (gone with the tab), the last stream in localStorage, and
// stream, range and search in the URL hash so a reload or a shared link shows the same view.
import { ApiError, createApi, isAbort, NetworkError, sleep } from './api.js'
import { $, codeBlock, el, replaceChildren, show } from './dom.js'
import { addTerms, formatAgo, formatBytes, formatCount, formatEventTime, formatRate, toDateTimeLocal } from './format.js'
import { createCharts } from './charts.js'
import { DetailDrawer, EventsTable, maxTailRows, renderTotals, TopLists } from './panels.js'

const tokenKey = 'sluice.token'
const streamKey = 'sluice.stream'
const liveWindowMs = 5 * 60_000
/** Top lists and unique sources in Live mode come from /stats, refreshed this often (ms). */
const liveTopRefreshMs = 10_000
/** The server sends stats every second and a heartbeat every 15 s; silence this long means a dead connection. */
const tailStallMs = 45_000
const pageSize = 100
const rangeMs = { '15m': 15 * 60_000, '1h': 3_600_000, '24h': 86_400_000, '7d': 7 * 86_400_000 }

const state = {
  token: sessionStorage.getItem(tokenKey) ?? '',
  streams: [],
  stream: null,
  /** 'live', a key of rangeMs, or 'custom'. */
  range: 'live',
  /** {from, to} in ms for 'custom'. */
  custom: null,
  q: '',
  /** AbortController of the running view. */
  view: null,
  /** Consecutive failed loads, for the retry backoff. */
  failures: 0,
}

const api = createApi(() => state.token)
let charts, topLists, table, detail
let live = null
let pastView = null

// --- start -----------------------------------------------------------------------------------

function boot () {
  readHash()
  charts = createCharts({ events: $('chart-events'), latency: $('chart-latency'), bytes: $('chart-bytes') }, { onZoom: zoomTo })
  topLists = new TopLists($('toplists'), applyFilterTerms)
  table = new EventsTable($('events-body'), (event) => detail.open(event))
  detail = new DetailDrawer($('detail'), applyFilterTerms)
  wireControls()
  if (state.token) void loadStreams()
  else showSignIn()
}

function wireControls () {
  $('signin-form').addEventListener('submit', (e) => { e.preventDefault(); void signIn($('token-input').value) })
  $('sign-out').addEventListener('click', signOut)
  $('stream-select').addEventListener('change', (e) => selectStream(e.target.value))
  for (const button of document.querySelectorAll('[data-range]')) {
    button.addEventListener('click', () => selectRange(button.dataset.range))
  }
  $('custom-range').addEventListener('submit', (e) => { e.preventDefault(); applyCustomRange() })
  $('custom-range').addEventListener('keydown', (e) => { if (e.key === 'Escape') show($('custom-range'), false) })
  document.addEventListener('click', (e) => {
    if (!$('custom-range').hidden && !e.target.closest('.range-wrap')) show($('custom-range'), false)
  })
  $('search-form').addEventListener('submit', (e) => { e.preventDefault(); applySearch($('q').value) })
  $('q').addEventListener('search', () => { if ($('q').value === '') applySearch('') })
  $('q').addEventListener('input', () => showQueryError(null))
  $('pause').addEventListener('click', togglePause)
  $('load-more').addEventListener('click', () => void loadMore())
  $('refresh').addEventListener('click', () => startView())
  $('streams-refresh').addEventListener('click', () => void loadStreams())
  document.addEventListener('keydown', (e) => {
    if (e.key === '/' && !/^(INPUT|TEXTAREA|SELECT)$/.test(document.activeElement?.tagName ?? '')) {
      e.preventDefault()
      $('q').focus()
    }
  })
  window.addEventListener('hashchange', () => {
    if (readHash() && state.stream && !$('screen-dashboard').hidden) {
      $('stream-select').value = state.stream
      startView()
    }
  })
}

// --- URL hash: #stream=web&range=1h&q=status:5xx ----------------------------------------------

/** Reads the hash into state; true when it changed something. */
function readHash () {
  const params = new URLSearchParams(location.hash.slice(1))
  const before = JSON.stringify([state.stream, state.range, state.custom, state.q])
  if (params.has('stream')) state.stream = params.get('stream')
  const range = params.get('range')
  if (range === 'custom' && Number(params.get('from')) < Number(params.get('to'))) {
    state.range = 'custom'
    state.custom = { from: Number(params.get('from')), to: Number(params.get('to')) }
  } else if (range === 'live' || rangeMs[range]) {
    state.range = range
  }
  state.q = params.get('q') ?? ''
  $('q').value = state.q
  return JSON.stringify([state.stream, state.range, state.custom, state.q]) !== before
}

function writeHash () {
  const params = new URLSearchParams({ stream: state.stream, range: state.range })
  if (state.range === 'custom') { params.set('from', state.custom.from); params.set('to', state.custom.to) }
  if (state.q) params.set('q', state.q)
  window.history.replaceState(null, '', '#' + params)
}

// --- screens ---------------------------------------------------------------------------------

function showScreen (name) {
  for (const screen of ['signin', 'nostreams', 'dashboard']) show($(`screen-${screen}`), name === screen)
  show($('controls'), name === 'dashboard')
  show($('sign-out'), name !== 'signin')
  show($('conn'), name === 'dashboard')
}

function showSignIn (problem = null) {
  stopView()
  showScreen('signin')
  setBanner(null)
  const error = $('signin-error')
  error.textContent = problem ?? ''
  show(error, problem !== null)
  $('token-input').value = ''
  $('token-input').focus()
  $('token-curl').textContent = `curl -s -X POST ${location.origin}/api/tokens \\\n  -H "Authorization: Bearer $(cat data/admin-token)" \\\n  -H 'Content-Type: application/json' \\\n  -d '{"name":"dashboard","abilities":["streams:read","data:read"]}'`
}

async function signIn (token) {
  state.token = token.trim()
  if (!state.token) return
  $('signin-submit').disabled = true
  try {
    await loadStreams({ fromSignIn: true })
  } finally {
    $('signin-submit').disabled = false
  }
}

function signOut () {
  sessionStorage.removeItem(tokenKey)
  state.token = ''
  showSignIn()
}

/** GET /api/streams, then the dashboard or the "create a stream" screen. */
async function loadStreams ({ fromSignIn = false } = {}) {
  let answer
  try {
    answer = await api.get('/api/streams')
  } catch (err) {
    if (fromSignIn) {
      const error = $('signin-error')
      error.textContent = err instanceof ApiError
        ? (err.isTokenProblem ? `Sluice rejected this token: ${err.message}.` : err.message)
        : 'Cannot reach Sluice. Is the server running?'
      show(error)
      return
    }
    handleFailure(err, () => loadStreams())
    return
  }
  sessionStorage.setItem(tokenKey, state.token)
  state.failures = 0
  setBanner(null)
  state.streams = answer.streams
  if (state.streams.length === 0) {
    showNoStreams()
    return
  }
  const names = state.streams.map((s) => s.name)
  if (!names.includes(state.stream)) state.stream = names.includes(localStorage.getItem(streamKey)) ? localStorage.getItem(streamKey) : names[0]
  replaceChildren($('stream-select'), state.streams.map((s) => el('option', { value: s.name, title: s.description || null }, s.name)))
  $('stream-select').value = state.stream
  showScreen('dashboard')
  startView()
}

function showNoStreams () {
  stopView()
  showScreen('nostreams')
  const origin = location.origin
  replaceChildren($('nostreams-help'),
    el('p', {}, 'Create one with curl:'),
    codeBlock(`export SLUICE_TOKEN=$(cat data/admin-token)\ncurl -s -X POST ${origin}/api/streams \\\n  -H "Authorization: Bearer $SLUICE_TOKEN" \\\n  -H 'Content-Type: application/json' -d '{"name":"web"}'`),
    el('p', {}, 'or with the CLI, on the Sluice host:'),
    codeBlock('npx sluice stream create web'))
}

// --- controls --------------------------------------------------------------------------------

function selectStream (name) {
  state.stream = name
  localStorage.setItem(streamKey, name)
  startView()
}

function selectRange (range) {
  if (range === 'custom') {
    const to = state.custom?.to ?? Date.now()
    const from = state.custom?.from ?? to - 3_600_000
    $('custom-from').value = toDateTimeLocal(from)
    $('custom-to').value = toDateTimeLocal(to)
    show($('custom-range'))
    $('custom-from').focus()
    return
  }
  show($('custom-range'), false)
  state.range = range
  startView()
}

function applyCustomRange () {
  const from = new Date($('custom-from').value).getTime()
  const to = new Date($('custom-to').value).getTime()
  if (!(from < to)) {
    $('custom-to').setCustomValidity('The end must be after the start')
    $('custom-to').reportValidity()
    return
  }
  $('custom-to').setCustomValidity('')
  show($('custom-range'), false)
  zoomTo(from, to)
}

function zoomTo (from, to) {
  state.range = 'custom'
  state.custom = { from, to }
  startView()
}

function applySearch (q) {
  state.q = q.trim()
  $('q').value = state.q
  startView()
}

function applyFilterTerms (terms) {
  detail.close()
  applySearch(addTerms($('q').value, terms))
}

function showQueryError (message) {
  $('q-error').textContent = message ?? ''
  show($('q-error'), message !== null)
  $('q').classList.toggle('invalid', message !== null)
  if (message === null) $('q').removeAttribute('aria-invalid')
  else $('q').setAttribute('aria-invalid', 'true')
}

function renderRangeButtons () {
  for (const button of document.querySelectorAll('[data-range]')) {
    button.setAttribute('aria-pressed', String(button.dataset.range === state.range))
  }
  const custom = document.querySelector('[data-range="custom"]')
  custom.textContent = state.range === 'custom' ? formatRange(state.custom.from, state.custom.to) : 'Custom'
}

/** "Nov 21 21:26 → 22:26", with the second date only when it differs. */
function formatRange (from, to) {
  const day = (ms) => new Date(ms).toLocaleDateString(undefined, { month: 'short', day: 'numeric' })
  const time = (ms) => formatEventTime(ms).slice(0, 5)
  return day(from) === day(to) ? `${day(from)} ${time(from)} → ${time(to)}` : `${day(from)} ${time(from)} → ${day(to)} ${time(to)}`
}

// --- banner, connection state, failures ------------------------------------------------------

function setBanner (text, kind = 'error', action = null) {
  const banner = $('banner')
  if (text === null) { show(banner, false); return }
  banner.dataset.kind = kind
  replaceChildren(banner, el('span', {}, text),
    action ? el('button', { type: 'button', class: 'btn btn-small', onclick: action.run }, action.label) : null)
  show(banner)
}

/** conn: 'live', 'paused', 'connecting', 'reconnecting', 'history'. */
function setConn (conn, text) {
  const node = $('conn')
  node.dataset.state = conn
  $('conn-text').textContent = text ?? { live: 'Live', paused: 'Paused', connecting: 'Connecting…', reconnecting: 'Reconnecting…', history: '' }[conn]
  show($('refresh'), conn === 'history')
}

function retryDelayMs (failures, retryAfterS) {
  if (retryAfterS) return retryAfterS * 1000
  return Math.min(15_000, 1000 * 2 ** Math.min(failures - 1, 4)) * (0.8 + Math.random() * 0.4)
}

/**
 * One place where failures meet the user: a token problem goes back to the sign-in screen, a bad
 * query next to the search box, a missing stream back to the stream list, anything transient
 * (network, 429, 5xx) to a banner and a retry with backoff.
 */
function handleFailure (err, retry) {
  if (isAbort(err)) return
  setLoading(false)
  if (err instanceof ApiError) {
    if (err.isTokenProblem) {
      sessionStorage.removeItem(tokenKey)
      state.token = ''
      showSignIn(`Sluice rejected your token (${err.message}). Paste a valid one.`)
      return
    }
    if (err.code === 'invalid_query') {
      stopView()
      clearPanels()
      showQueryError(err.message)
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
    setBanner(`Something went wrong in the page: ${err.message}`)
    return
  }
  state.failures++
  const delay = retryDelayMs(state.failures, err.retryAfterS)
  const reason = err instanceof NetworkError ? 'Cannot reach Sluice' : err.message
  setBanner(`${reason}. Retrying in ${Math.round(delay / 1000)} s…`, 'warn', { label: 'Retry now', run: () => { setBanner(null); retry() } })
  const signal = state.view?.signal
  sleep(delay, signal).then(() => { setBanner(null); retry() }, () => {})
}

/** After a 404: the stream was deleted (back to the list), or this server lacks the route. */
async function checkStreamExists (err) {
  try {
    await api.get(`/api/streams/${encodeURIComponent(state.stream)}`)
    setBanner(`${err.message} (${err.code}, request ${err.requestId ?? 'unknown'})`)
  } catch (again) {
    if (!(again instanceof ApiError && again.code === 'not_found')) { handleFailure(again, () => startView()); return }
    setBanner(`Stream "${state.stream}" no longer exists.`, 'warn')
    state.stream = null
    void loadStreams()
  }
}

// --- views -----------------------------------------------------------------------------------

function stopView () {
  state.view?.abort()
  state.view = null
  live = null
  pastView = null
}

/** Dims the panels while a new view loads, so old numbers are not read as new ones. */
function setLoading (loading) {
  $('screen-dashboard').classList.toggle('loading', loading)
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
  const view = new AbortController()
  state.view = view
  setLoading(true)
  showQueryError(null)
  setBanner(null)
  writeHash()
  renderRangeButtons()
  detail.close()
  void loadStreamMeta(view.signal)
  show($('scope-note'), state.range === 'live' && state.q !== '')
  if (state.range === 'live') void startLive(view.signal)
  else void loadHistory(view.signal)
}

function streamPath (suffix, params) {
  const search = new URLSearchParams(Object.entries(params).filter(([, v]) => v !== undefined && v !== null && v !== ''))
  return `/api/streams/${encodeURIComponent(state.stream)}/${suffix}?${search}`
}

async function loadStreamMeta (signal) {
  try {
    const s = await api.get(`/api/streams/${encodeURIComponent(state.stream)}`, { signal })
    const parts = [`${s.retention_days}-day retention`, `${formatCount(s.stats.events)} events stored (${formatBytes(s.stats.bytes)})`]
    if (s.stats.last_event_at) parts.push(`last event ${formatAgo(Date.parse(s.stats.last_event_at))}`)
    $('stream-meta').textContent = parts.join(' · ')
    $('stream-meta').title = s.description ?? ''
  } catch {
    $('stream-meta').textContent = ''
  }
}

/** A /stats series with the empty buckets filled in (zero counts, no percentiles). */
function fillSeries (stats) {
  const byT = new Map(stats.series.map((p) => [p.t, p]))
  const step = stats.step_ms
  const out = []
  const first = Math.floor(stats.from / step) * step
  for (let t = first; t < stats.to && out.length < 10_000; t += step) {
    out.push(byT.get(t) ?? { t, count: 0, status_2xx: 0, status_3xx: 0, status_4xx: 0, status_5xx: 0, bytes: 0, rt_p50: null, rt_p95: null, rt_p99: null })
  }
  return out
}

function totalsOf (stats) {
  return {
    count: stats.totals.count,
    errorRate: stats.totals.error_rate,
    bytes: stats.totals.bytes,
    uniqueSources: stats.totals.unique_sources,
  }
}

function showEventsEmpty (kind) {
  const box = $('events-empty')
  if (kind === null) { show(box, false); return }
  const origin = location.origin
  const s = state.stream
  const send = '# an ingest token for this stream (the answer\'s "token" is shown once)\n' +
    `curl -s -X POST ${origin}/api/streams/${s}/ingest-token -H "Authorization: Bearer $SLUICE_TOKEN" \\\n  -H 'Content-Type: application/json' -d '{}'\n` +
    '# send an event with it\n' +
    `curl -s -X POST ${origin}/api/ingest/${s} -H "Authorization: Bearer $INGEST_TOKEN" \\\n  -H 'Content-Type: application/x-ndjson' \\\n` +
    `  --data-binary '{"host":"web-1","method":"GET","path":"/","status":200,"rt":0.012,"bytes":512}'`
  const title = state.q
    ? `No events match “${state.q}”${kind === 'live' ? ' yet' : ' in this range'}.`
    : kind === 'live' ? 'Waiting for events…' : 'No events in this range.'
  replaceChildren(box,
    el('p', { class: 'empty-title' }, title),
    state.q
      ? el('button', { type: 'button', class: 'btn', onclick: () => applySearch('') }, 'Clear the search')
      : [el('p', {}, `Send one to “${s}” with an ingest token:`), codeBlock(send)])
  show(box)
}

// --- live ------------------------------------------------------------------------------------

async function startLive (signal) {
  live = {
    signal, points: [], paused: false, buffer: [], pausedArrived: 0, pausedLost: 0, pending: [], frame: 0,
    uniqueSources: null, received: 0, dropped: 0,
  }
  const current = live
  table.clear()
  charts.clear()
  topLists.update(null)
  $('events-title').textContent = 'Live tail'
  show($('pause'))
  show($('load-more'), false)
  renderPause()
  setConn('connecting')
  showEventsEmpty(null)
  try {
    // The tail's stats count every event of the stream, whatever q is, so the backfill does too.
    const [stats, events] = await Promise.all([
      api.get(streamPath('stats', { from: 'now-5m', to: 'now', step: '1s' }), { signal }),
      api.get(streamPath('events', { from: 'now-5m', to: 'now', limit: 50, q: state.q }), { signal }),
    ])
    current.points = fillSeries(stats).map((p) => ({ ...p, backfill: true }))
    current.uniqueSources = stats.totals.unique_sources
    topLists.update(stats.top)
    table.prepend(events.events.slice().reverse(), { fresh: false })
  } catch (err) {
    if (signal.aborted) return
    if (err instanceof ApiError && (err.isTokenProblem || err.code === 'invalid_query' || err.code === 'insufficient_ability')) {
      handleFailure(err, () => startView())
      return
    }
    // The backfill is a nicety: the tail below reports lasting trouble (a deleted stream included).
  }
  setLoading(false)
  renderLive(current)
  void runTail(current)
  void refreshLiveTop(current)
}

async function runTail (current) {
  const { signal } = current
  let failures = 0
  let lastError = null
  while (!signal.aborted) {
    const connection = new AbortController()
    const abort = () => connection.abort()
    signal.addEventListener('abort', abort, { once: true })
    let stall = null
    const watch = () => {
      clearTimeout(stall)
      stall = setTimeout(() => connection.abort(new DOMException('No data from the tail', 'TimeoutError')), tailStallMs)
    }
    try {
      await api.stream(streamPath('tail', { q: state.q }), {
        signal: connection.signal,
        onOpen: () => {
          if (failures > 0) table.notice('Reconnected. Events sent while the tail was away are not shown here; pick a time range to see them.')
          failures = 0
          setBanner(null)
          setConn(current.paused ? 'paused' : 'live')
          watch()
        },
        onActivity: watch,
        onMessage: (type, data) => onTailMessage(current, type, data),
      })
      lastError = null
    } catch (err) {
      if (signal.aborted) return
      if (err instanceof ApiError && err.status < 500 && err.status !== 429) { handleFailure(err, () => startView()); return }
      lastError = err
    } finally {
      clearTimeout(stall)
      signal.removeEventListener('abort', abort)
    }
    failures++
    const delay = retryDelayMs(failures, lastError?.retryAfterS)
    const why = lastError instanceof ApiError ? lastError.message : lastError ? 'Cannot reach Sluice' : 'The tail ended'
    setConn('reconnecting', `Reconnecting in ${Math.round(delay / 1000)} s`)
    if (failures >= 2) setBanner(`${why}. Retrying in ${Math.round(delay / 1000)} s…`, 'warn')
    try { await sleep(delay, signal) } catch { return }
  }
}

function onTailMessage (current, type, data) {
  if (current !== live) return
  let payload
  try { payload = JSON.parse(data) } catch { return }
  if (type === 'event') onTailEvent(current, payload)
  else if (type === 'stats') { addLivePoint(current, payload); renderLive(current) }
  else if (type === 'dropped') {
    current.dropped += payload.count
    if (!current.paused) current.frame ||= requestAnimationFrame(() => flushTail(current))
  }
}

function onTailEvent (current, event) {
  current.received++
  if (current.paused) {
    current.pausedArrived++
    current.buffer.push(event)
    if (current.buffer.length > maxTailRows) { current.buffer.shift(); current.pausedLost++ }
    renderPause()
    return
  }
  current.pending.push(event)
  if (current.pending.length > maxTailRows) current.pending.shift()
  current.frame ||= requestAnimationFrame(() => flushTail(current))
}

/** Renders the events that arrived since the last frame: one DOM update per frame, however fast they come. */
function flushTail (current) {
  current.frame = 0
  if (current !== live) return
  if (current.pending.length > 0) {
    table.prepend(current.pending)
    current.pending = []
    showEventsEmpty(null)
  }
  if (current.dropped > 0) {
    table.noticeDropped(current.dropped)
    current.dropped = 0
  }
  renderTailCount(current)
}

function renderTailCount (current) {
  $('events-count').textContent = `${formatCount(current.received)} received · newest on top`
}

function togglePause () {
  const current = live
  if (!current) return
  current.paused = !current.paused
  if (!current.paused) {
    if (current.pausedLost > 0) table.notice(`${formatCount(current.pausedLost)} events that arrived while paused are not shown (only the last ${maxTailRows} are kept).`)
    current.pending.push(...current.buffer)
    current.buffer = []
    current.pausedArrived = 0
    current.pausedLost = 0
    flushTail(current)
  }
  setConn(current.paused ? 'paused' : 'live')
  renderPause()
}

function renderPause () {
  const current = live
  const button = $('pause')
  if (!current?.paused) {
    button.textContent = 'Pause'
    button.setAttribute('aria-pressed', 'false')
    return
  }
  button.textContent = current.pausedArrived > 0 ? `Resume · ${formatCount(current.pausedArrived)} new` : 'Resume'
  button.setAttribute('aria-pressed', 'true')
}

/**
 * Adds a tail `stats` event to the rolling window. The server stamps it with the time it was sent
 * (the end of the second it covers); the point is placed at the start of that second, like a
 * /stats bucket. Backfilled buckets it overlaps give way to it; a missed second shows as a gap;
 * points older than the window fall off.
 */
function addLivePoint (current, stats) {
  const points = current.points
  const point = { ...stats, t: stats.t - 1000 }
  while (points.length > 0 && points.at(-1).backfill && points.at(-1).t > point.t - 1000) points.pop()
  const last = points.at(-1)
  if (last && point.t <= last.t) return
  if (last && point.t - last.t > 2500) points.push({ t: last.t + 1000, gap: true })
  points.push(point)
  const oldest = point.t - liveWindowMs
  while (points.length > 0 && points[0].t <= oldest) points.shift()
}

function renderLive (current) {
  const points = current.points
  const to = (points.at(-1)?.t ?? Date.now()) + 1000
  charts.update(points, { from: to - liveWindowMs, to, stepMs: 1000 })
  let count = 0
  let errors = 0
  let bytes = 0
  for (const p of points) {
    if (p.gap) continue
    count += p.count
    errors += (p.status_4xx ?? 0) + (p.status_5xx ?? 0)
    bytes += p.bytes ?? 0
  }
  const now = points.findLast((p) => !p.gap)
  renderTotals(
    { count, errorRate: count > 0 ? errors / count : 0, bytes, uniqueSources: current.uniqueSources },
    {
      count: `${formatRate(now?.count ?? 0)}/s now · last 5 min`,
      errors: `${formatCount(errors)} with status ≥ 400`,
      bytes: `${formatBytes(now?.bytes ?? 0)}/s now`,
      sources: 'last 5 min',
    })
  if (table.size === 0 && current.pending.length === 0) showEventsEmpty('live')
  renderTailCount(current)
}

async function refreshLiveTop (current) {
  const { signal } = current
  while (!signal.aborted) {
    try {
      await sleep(liveTopRefreshMs, signal)
      const stats = await api.get(streamPath('stats', { from: 'now-5m', to: 'now' }), { signal })
      current.uniqueSources = stats.totals.unique_sources
      topLists.update(stats.top)
    } catch (err) {
      if (signal.aborted) return
      if (err instanceof ApiError && err.isTokenProblem) { handleFailure(err, () => startView()); return }
    }
  }
}

// --- history ---------------------------------------------------------------------------------

function rangeParams () {
  if (state.range === 'custom') return { from: state.custom.from, to: state.custom.to }
  return { from: `now-${state.range}`, to: 'now' }
}

async function loadHistory (signal) {
  const range = rangeParams()
  pastView = { signal, range, cursor: null }
  const current = pastView
  const spanMs = state.range === 'custom' ? state.custom.to - state.custom.from : rangeMs[state.range]
  table.clear({ withDate: spanMs >= 86_400_000 })
  $('events-title').textContent = 'Events'
  $('events-count').textContent = ''
  show($('pause'), false)
  show($('load-more'), false)
  showEventsEmpty(null)
  setConn('history', 'Loading…')
  const [stats, events] = await Promise.allSettled([
    api.get(streamPath('stats', { ...range, q: state.q }), { signal }),
    api.get(streamPath('events', { ...range, q: state.q, limit: pageSize }), { signal }),
  ])
  if (signal.aborted) return
  // Show what arrived; report the failure that says most (a bad query or token before the rest).
  if (stats.status === 'fulfilled') renderHistoryStats(stats.value)
  else clearPanels()
  if (events.status === 'fulfilled') showEvents(current, events.value)
  const errors = [stats, events].filter((r) => r.status === 'rejected').map((r) => r.reason)
  if (errors.length > 0) {
    const rank = (e) => (e instanceof ApiError ? (e.isTokenProblem ? 0 : e.code === 'invalid_query' ? 1 : 2) : 3)
    handleFailure(errors.sort((a, b) => rank(a) - rank(b))[0], () => startView())
    return
  }
  state.failures = 0
  setConn('history', `Updated ${formatEventTime(Date.now()).slice(0, 8)}`)
  setLoading(false)
}

function renderHistoryStats (stats) {
  charts.update(fillSeries(stats), { from: stats.from, to: stats.to, stepMs: stats.step_ms })
  const seconds = (stats.to - stats.from) / 1000
  const totals = totalsOf(stats)
  renderTotals(totals, {
    count: `${formatRate(totals.count / seconds)}/s on average`,
    errors: `${formatCount(Math.round(totals.errorRate * totals.count))} with status ≥ 400`,
    bytes: `${formatBytes(totals.bytes / seconds)}/s on average`,
    sources: 'distinct src values',
  })
  topLists.update(stats.top)
}

function showEvents (current, answer) {
  if (current !== pastView) return
  table.append(answer.events)
  current.cursor = answer.next_cursor ?? null
  show($('load-more'), current.cursor !== null)
  $('events-count').textContent = `${formatCount(table.size)} shown · newest first`
  showEventsEmpty(table.size === 0 ? 'history' : null)
}

async function loadMore () {
  const current = pastView
  if (!current?.cursor) return
  $('load-more').disabled = true
  try {
    const answer = await api.get(streamPath('events', { ...current.range, q: state.q, limit: pageSize, cursor: current.cursor }), { signal: current.signal })
    showEvents(current, answer)
  } catch (err) {
    handleFailure(err, () => void loadMore())
  } finally {
    $('load-more').disabled = false
  }
}

boot()
