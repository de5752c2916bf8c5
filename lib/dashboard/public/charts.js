// @ts-check
// The three uPlot charts: events/s stacked by status class, latency p50/p95/p99 and bytes/s. They
// take points shaped like a /stats series entry or a tail `stats` event ({t, count,
// status_2xx..status_5xx, bytes, rt_p50, rt_p95, rt_p99}; t in ms), or {t, gap: true} where data
// is missing. Colours come from CSS custom properties, so the charts follow the light/dark theme.
// uPlot is the global of /assets/uplot.js (a classic script loaded before this module); its types
// come from the uplot package (lib/dashboard/tsconfig.json).
import { formatBytes, formatEventTime, formatRate, formatSeconds } from './format.js'

/** @typedef {import('./types.js').StatsPoint} StatsPoint */
/** @typedef {{ from: number, to: number, stepMs: number }} ChartView ms */
/** @typedef {(value: number) => string} Format */

const plotHeight = 150
const statusKeys = /** @type {const} */ (['status_2xx', 'status_3xx', 'status_4xx', 'status_5xx'])

function themeColors () {
  const style = getComputedStyle(document.documentElement)
  /** @param {string} name */
  const v = (name) => style.getPropertyValue(name).trim()
  return {
    axis: v('--chart-axis'),
    grid: v('--chart-grid'),
    status: ['--c-2xx', '--c-3xx', '--c-4xx', '--c-5xx'].map(v),
    latency: ['--c-p50', '--c-p95', '--c-p99'].map(v),
    bytes: v('--c-bytes'),
  }
}

/**
 * #rrggbb with an alpha, as rgba().
 * @param {string} hex
 * @param {number} alpha 0..1
 */
function fade (hex, alpha) {
  const n = Number.parseInt(hex.replace('#', ''), 16)
  return `rgba(${(n >> 16) & 255}, ${(n >> 8) & 255}, ${n & 255}, ${alpha})`
}

/**
 * @param {ReturnType<typeof themeColors>} colors
 * @param {Format} formatValue
 * @returns {uPlot.Axis[]}
 */
function axes (colors, formatValue) {
  const font = '11px system-ui, -apple-system, "Segoe UI", Roboto, sans-serif'
  const grid = { stroke: colors.grid, width: 1 }
  return [
    { stroke: colors.axis, grid, ticks: { stroke: colors.grid, width: 1, size: 4 }, font, space: 64, size: 30, gap: 4, values: timeTicks },
    { stroke: colors.axis, grid, ticks: { show: false }, font, size: 54, gap: 4, space: 30, values: (_u, splits) => splits.map(formatValue) },
  ]
}

const months = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec']
/** @param {number} n */
const two = (n) => String(n).padStart(2, '0')

/**
 * Time ticks in local 24-hour time: 14:05:30 under a minute apart, 14:05, or Nov 21 for days and midnights.
 * @type {uPlot.Axis.DynamicValues}
 */
export function timeTicks (_u, splits, _axisIdx, _space, incr) {
  return splits.map((s) => {
    const d = new Date(s * 1000)
    const day = `${months[d.getMonth()]} ${d.getDate()}`
    if (incr >= 86400) return day
    if (d.getHours() === 0 && d.getMinutes() === 0 && d.getSeconds() === 0 && incr >= 3600) return day
    const hm = `${two(d.getHours())}:${two(d.getMinutes())}`
    return incr < 60 ? `${hm}:${two(d.getSeconds())}` : hm
  })
}

/** y from zero; an empty chart still gets a scale. */
/** @type {uPlot.Range.Function} */
const fromZero = (_u, _min, max) => [0, max > 0 ? max * 1.12 : 1]

/**
 * @typedef {object} ChartTargets
 * @property {HTMLElement} events
 * @property {HTMLElement} latency
 * @property {HTMLElement} bytes
 */

/**
 * @typedef {object} Charts
 * @property {(points: StatsPoint[], view: ChartView) => void} update
 * @property {() => void} clear
 */

/**
 * What the legends show: x in seconds, and per series its values per point (per second), null in gaps.
 * @typedef {{ xs: number[], status: (number | null)[][], latency: (number | null)[][], bytes: (number | null)[] }} ChartData
 */

/**
 * A uPlot setSelect hook: a drag across a chart (5 px or more) is a time range, handed to
 * onZoom in ms, and the selection box is cleared. The range is widened to the chart's bucket
 * edges (its points' step): the server's buckets are whole steps from the epoch, and the step it
 * picks for the narrower range divides this one, so the zoomed view's histogram and its exact
 * counts (hits, /fields) cover the same events (explore26 F2: 729 hits beside a legend of 735).
 * @param {(from: number, to: number) => void} onZoom
 * @returns {(u: uPlot) => void}
 */
export function zoomOnSelect (onZoom) {
  return (u) => {
    if (u.select.width < 5) return
    let from = u.posToVal(u.select.left, 'x') * 1000
    let to = u.posToVal(u.select.left + u.select.width, 'x') * 1000
    u.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false)
    const xs = u.data[0]
    const stepMs = xs.length > 1 ? Math.round((xs[1] - xs[0]) * 1000) : 0
    if (stepMs > 0) {
      from = Math.floor(from / stepMs) * stepMs
      to = Math.ceil(to / stepMs) * stepMs
    }
    onZoom(Math.round(from), Math.round(to))
  }
}

/**
 * @param {ChartTargets} targets
 * @param {{ onZoom: (from: number, to: number) => void }} options onZoom gets a dragged range, ms
 * @returns {Charts}
 */
export function createCharts (targets, { onZoom }) {
  /** @type {uPlot[]} */
  let charts = []
  /** @type {ChartData | null} */
  let raw = null
  let latest = -1
  /** @type {[number, number]} seconds */
  let xRange = [0, 1]
  /** @type {{ points: StatsPoint[], view: ChartView } | null} */
  let last = null

  /**
   * Legend value: the hovered point, or the latest one when the cursor is away.
   * @param {(raw: ChartData, i: number) => number | null} pick
   * @param {(value: number | null) => string} format
   * @returns {uPlot.Series.Value}
   */
  const legendValue = (pick, format) => (_u, _v, _si, idx) => {
    const i = idx ?? latest
    return raw === null || i < 0 ? '–' : format(pick(raw, i))
  }
  /** @type {uPlot.Series.Value} */
  const timeValue = (_u, _v, _si, idx) => {
    const i = idx ?? latest
    return raw === null || i < 0 ? '' : formatEventTime(raw.xs[i] * 1000).slice(0, 8)
  }

  /**
   * @param {HTMLElement} target
   * @param {ReturnType<typeof themeColors>} colors
   * @param {Format} formatValue
   * @returns {Omit<uPlot.Options, 'series'>}
   */
  function baseOptions (target, colors, formatValue) {
    return {
      width: Math.max(200, target.clientWidth),
      height: plotHeight,
      padding: [10, 24, 0, 0], // right: room for the last time label
      scales: { x: { time: true, range: () => xRange }, y: { range: fromZero } },
      axes: axes(colors, formatValue),
      cursor: { sync: { key: 'sluice' }, drag: { x: true, y: false, setScale: false }, points: { size: 6 } },
      legend: { live: true },
      hooks: { setSelect: [zoomOnSelect(onZoom)] },
    }
  }

  function build () {
    for (const c of charts) c.destroy()
    const colors = themeColors()
    const line = { width: 1.5, points: { show: false } }

    // Stacked bars, one per bucket: each series is drawn from zero to its running total, the
    // tallest (5xx on top of everything) first, so every class shows as its own segment.
    const barsBuilder = uPlot.paths.bars
    if (barsBuilder === undefined) throw new Error('this uPlot build has no bars paths')
    const bars = barsBuilder({ size: [1, Infinity], gap: 0, align: 1 })
    /** @type {uPlot.Options} */
    const events = {
      ...baseOptions(targets.events, colors, formatRate),
      series: [
        { value: timeValue },
        ...[3, 2, 1, 0].map((k) => ({
          label: ['2xx', '3xx', '4xx', '5xx'][k],
          stroke: colors.status[k],
          fill: fade(colors.status[k], 0.85),
          width: 0,
          paths: bars,
          points: { show: false },
          value: legendValue((r, i) => r.status[k][i], formatRate),
        })),
      ],
    }
    /** @type {uPlot.Options} */
    const latency = {
      ...baseOptions(targets.latency, colors, formatSeconds),
      series: [
        { value: timeValue },
        ...['p50', 'p95', 'p99'].map((label, k) => ({
          ...line,
          label,
          stroke: k === 2 ? fade(colors.latency[2], 0.75) : colors.latency[k],
          width: [1.5, 2, 1.25][k],
          value: legendValue((r, i) => r.latency[k][i], formatSeconds),
        })),
      ],
    }
    /** @type {uPlot.Options} */
    const bytes = {
      ...baseOptions(targets.bytes, colors, (v) => (Number.isInteger(v) ? formatBytes(v) : '')),
      series: [
        { value: timeValue },
        { ...line, label: 'bytes/s', stroke: colors.bytes, fill: fade(colors.bytes, 0.22), value: legendValue((r, i) => r.bytes[i], formatBytes) },
      ],
    }
    charts = [
      new uPlot(events, [[], [], [], [], []], targets.events),
      new uPlot(latency, [[], [], [], []], targets.latency),
      new uPlot(bytes, [[], []], targets.bytes),
    ]
    if (last) update(last.points, last.view)
  }

  /**
   * Points → uPlot data; view: {from, to, stepMs} in ms.
   * @param {StatsPoint[]} points
   * @param {ChartView} view
   */
  function update (points, view) {
    last = { points, view }
    const stepS = view.stepMs / 1000
    const xs = points.map((p) => p.t / 1000)
    /** @param {'status_2xx' | 'status_3xx' | 'status_4xx' | 'status_5xx' | 'bytes'} key */
    const rate = (key) => points.map((p) => (p.gap ? null : (p[key] ?? 0) / stepS))
    const status = statusKeys.map(rate)
    /** @type {(number | null)[][]} */
    const stacked = []
    for (const series of status) {
      /** @type {(number | null)[] | undefined} */
      const below = stacked.at(-1)
      stacked.push(below === undefined ? series.slice() : below.map((s, i) => (s === null ? null : s + (series[i] ?? 0))))
    }
    const latency = /** @type {const} */ (['rt_p50', 'rt_p95', 'rt_p99']).map((key) => points.map((p) => (p.gap ? null : p[key] ?? null)))
    raw = { xs, status, latency, bytes: rate('bytes') }
    // The legend's resting values: the newest bucket that has events (the current one is often still empty).
    latest = xs.length - 1
    while (latest > 0 && (points[latest].gap || !points[latest].count)) latest--
    xRange = [view.from / 1000, view.to / 1000]
    charts[0].setData([xs, ...stacked.slice().reverse()])
    charts[1].setData([xs, ...latency])
    charts[2].setData([xs, raw.bytes])
  }

  const resize = new ResizeObserver(() => {
    charts.forEach((chart, i) => {
      const target = [targets.events, targets.latency, targets.bytes][i]
      if (target.clientWidth > 0 && target.clientWidth !== chart.width) chart.setSize({ width: target.clientWidth, height: plotHeight })
    })
  })
  for (const target of [targets.events, targets.latency, targets.bytes]) resize.observe(target)
  matchMedia('(prefers-color-scheme: dark)').addEventListener('change', build)
  build()

  return {
    update,
    clear () {
      last = null
      raw = null
      latest = -1
      build()
    },
  }
}
