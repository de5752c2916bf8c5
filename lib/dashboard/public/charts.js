// The three uPlot charts: events/s stacked by status class, latency p50/p95/p99 and bytes/s. They
// take points shaped like a /stats series entry or a tail `stats` event ({t, count,
// status_2xx..status_5xx, bytes, rt_p50, rt_p95, rt_p99}; t in ms), or {t, gap: true} where data
// is missing. Colours come from CSS custom properties, so the charts follow the light/dark theme.
/* global uPlot */
import { formatBytes, formatEventTime, formatRate, formatSeconds } from './format.js'

const plotHeight = 150
const statusKeys = ['status_2xx', 'status_3xx', 'status_4xx', 'status_5xx']

function themeColors () {
  const style = getComputedStyle(document.documentElement)
  const v = (name) => style.getPropertyValue(name).trim()
  return {
    axis: v('--chart-axis'),
    grid: v('--chart-grid'),
    status: ['--c-2xx', '--c-3xx', '--c-4xx', '--c-5xx'].map(v),
    latency: ['--c-p50', '--c-p95', '--c-p99'].map(v),
    bytes: v('--c-bytes'),
  }
}

/** #rrggbb with an alpha, as rgba(). */
function fade (hex, alpha) {
  const n = Number.parseInt(hex.replace('#', ''), 16)
  return `rgba(${(n >> 16) & 255}, ${(n >> 8) & 255}, ${n & 255}, ${alpha})`
}

function axes (colors, formatValue) {
  const font = '11px system-ui, -apple-system, "Segoe UI", Roboto, sans-serif'
  const grid = { stroke: colors.grid, width: 1 }
  return [
    { stroke: colors.axis, grid, ticks: { stroke: colors.grid, width: 1, size: 4 }, font, space: 64, size: 30, gap: 4, values: timeTicks },
    { stroke: colors.axis, grid, ticks: { show: false }, font, size: 54, gap: 4, space: 30, values: (u, splits) => splits.map(formatValue) },
  ]
}

const months = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec']
const two = (n) => String(n).padStart(2, '0')

/** Time ticks in local 24-hour time: 14:05:30 under a minute apart, 14:05, or Nov 21 for days and midnights. */
function timeTicks (u, splits, axisIdx, space, incr) {
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
const fromZero = (u, min, max) => [0, max > 0 ? max * 1.12 : 1]

export function createCharts (targets, { onZoom }) {
  let charts = []
  let raw = null
  let latest = -1
  let xRange = [0, 1]
  let last = null

  /** Legend value: the hovered point, or the latest one when the cursor is away. */
  const legendValue = (pick, format) => (u, v, si, idx) => {
    const i = idx ?? latest
    return raw === null || i < 0 ? '–' : format(pick(i))
  }
  const timeValue = (u, v, si, idx) => {
    const i = idx ?? latest
    return raw === null || i < 0 ? '' : formatEventTime(raw.xs[i] * 1000).slice(0, 8)
  }

  function baseOptions (target, colors, formatValue) {
    return {
      width: Math.max(200, target.clientWidth),
      height: plotHeight,
      padding: [10, 12, 0, 0],
      scales: { x: { time: true, range: () => xRange }, y: { range: fromZero } },
      axes: axes(colors, formatValue),
      cursor: { sync: { key: 'sluice' }, drag: { x: true, y: false, setScale: false }, points: { size: 6 } },
      legend: { live: true },
      hooks: { setSelect: [onSelect] },
    }
  }

  function onSelect (u) {
    if (u.select.width < 5) return
    const from = u.posToVal(u.select.left, 'x') * 1000
    const to = u.posToVal(u.select.left + u.select.width, 'x') * 1000
    u.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false)
    onZoom(Math.round(from), Math.round(to))
  }

  function build () {
    for (const c of charts) c.destroy()
    const colors = themeColors()
    const line = { width: 1.5, points: { show: false } }

    // Stacked bars, one per bucket: each series is drawn from zero to its running total, the
    // tallest (5xx on top of everything) first, so every class shows as its own segment.
    const bars = uPlot.paths.bars({ size: [1, Infinity], gap: 0, align: 1 })
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
          value: legendValue((i) => raw.status[k][i], formatRate),
        })),
      ],
    }
    const latency = {
      ...baseOptions(targets.latency, colors, formatSeconds),
      series: [
        { value: timeValue },
        ...['p50', 'p95', 'p99'].map((label, k) => ({
          ...line,
          label,
          stroke: k === 2 ? fade(colors.latency[2], 0.75) : colors.latency[k],
          width: [1.5, 2, 1.25][k],
          value: legendValue((i) => raw.latency[k][i], formatSeconds),
        })),
      ],
    }
    const bytes = {
      ...baseOptions(targets.bytes, colors, (v) => (Number.isInteger(v) ? formatBytes(v) : '')),
      series: [
        { value: timeValue },
        { ...line, label: 'bytes/s', stroke: colors.bytes, fill: fade(colors.bytes, 0.22), value: legendValue((i) => raw.bytes[i], formatBytes) },
      ],
    }
    const empty = () => [[]]
    charts = [
      new uPlot(events, [...empty(), [], [], [], []], targets.events),
      new uPlot(latency, [...empty(), [], [], []], targets.latency),
      new uPlot(bytes, [...empty(), []], targets.bytes),
    ]
    if (last) update(last.points, last.view)
  }

  /** Points → uPlot data; view: {from, to, stepMs} in ms. */
  function update (points, view) {
    last = { points, view }
    const stepS = view.stepMs / 1000
    const xs = points.map((p) => p.t / 1000)
    const rate = (key) => points.map((p) => (p.gap ? null : (p[key] ?? 0) / stepS))
    const status = statusKeys.map(rate)
    const stacked = []
    let sum = null
    for (const series of status) {
      sum = sum === null ? series.slice() : sum.map((s, i) => (s === null ? null : s + series[i]))
      stacked.push(sum)
    }
    const latency = ['rt_p50', 'rt_p95', 'rt_p99'].map((key) => points.map((p) => (p.gap ? null : p[key] ?? null)))
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
