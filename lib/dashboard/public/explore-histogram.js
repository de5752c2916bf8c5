// @ts-check
// Explore's hits histogram: events per bucket of a /stats?by=<field> answer (docs/api.md section
// 7.4), stacked by the group values (levels in their order and colours, other fields in the
// Okabe-Ito palette, a value keeping its colour from one search to the next), plus "(other
// values)" for events outside the listed values or without the field.
// Dragging across it selects a time range (onZoom). uPlot is the global of /assets/uplot.js.
import { timeTicks, zoomOnSelect } from './charts.js'
import { formatCount, formatEventTime } from './format.js'

/** @typedef {import('./types.js').StatsAnswer} StatsAnswer */

const plotHeight = 130
const levelOrder = ['trace', 'debug', 'info', 'warn', 'error', 'fatal']
/** Groups /stats lists by default (docs/api.md section 7.4, `top`): a shorter list holds every value. */
const groupsListed = 10
/** Colours for values of other fields, colour-blind safe (Okabe-Ito, then two more). */
/**
 * The series of the events in no listed group (values past the listed ones, or without the
 * field): a key no value can be, drawn grey and named so that a value called `other` is told
 * apart from it (explore34c H8: both read `other`, in the same grey).
 */
const remainder = '\u0000other'
const remainderLabel = '(other values)'
const palette = ['#0072b2', '#e69f00', '#009e73', '#cc79a7', '#56b4e9', '#d55e00', '#9467bd', '#f0e442', '#8c564b', '#17becf']

/**
 * @typedef {object} Histogram
 * @property {(stats: StatsAnswer, by: string) => void} update
 * @property {(ts: number, value: string | null) => void} count one live event into its bucket
 * @property {() => void} clear
 */

/**
 * @param {HTMLElement} target
 * @param {{ onZoom: (from: number, to: number) => void }} options onZoom gets a dragged range, ms
 * @returns {Histogram}
 */
export function createHistogram (target, { onZoom }) {
  /** @type {uPlot | null} */
  let chart = null
  /** @type {{ xs: number[], labels: string[], counts: number[][], from: number, to: number, stepMs: number, complete: boolean } | null} */
  let data = null
  /**
   * The colour each value of a field was drawn in, so a value keeps it while the tab is open: by
   * rank, checkout turned from green to amber when a search left another service out
   * (explore32c F11), and a value first seen live moved the colours of those after it.
   * @type {Map<string, Map<string, string>>}
   */
  const drawnIn = new Map()

  /**
   * Live: the series a value first seen in an arriving event goes into, made for it when it may
   * have one (a level always, another value while the groups listed every value and there is
   * room), else "other" (made when missing); and whether a series was made.
   * @param {string | null} value
   * @returns {{ k: number, made: boolean }}
   */
  function seriesOf (value) {
    const d = /** @type {NonNullable<typeof data>} */ (data)
    if (value !== null) {
      const known = d.labels.indexOf(value)
      if (known !== -1) return { k: known, made: false }
      const named = d.labels.filter((l) => l !== remainder)
      if (lastBy === 'level' ? levelOrder.includes(value) : d.complete && named.length < groupsListed) {
        const at = lastBy === 'level' ? named.filter((l) => levelOrder.indexOf(l) < levelOrder.indexOf(value)).length : named.length
        return { k: insertSeries(d, at, value), made: true }
      }
    }
    const other = d.labels.indexOf(remainder)
    if (other !== -1) return { k: other, made: false }
    return { k: insertSeries(d, d.labels.length, remainder), made: true }
  }

  /**
   * @param {string[]} labels
   * @param {string} by
   */
  function colorsOf (labels, by) {
    const style = getComputedStyle(document.documentElement)
    const field = drawnIn.get(by) ?? new Map()
    drawnIn.set(by, field)
    /** @type {(string | undefined)[]} */
    const colors = labels.map((label, i) => {
      if (label === remainder) return style.getPropertyValue('--border-strong').trim() || '#cfd4dc'
      if (by === 'level' && levelOrder.includes(label)) return style.getPropertyValue(`--c-lvl-${label}`).trim() || palette[i % palette.length]
      return undefined
    })
    // A value drawn before keeps its colour; a new one takes the first colour no value here has,
    // one no value of the field had before when there is one.
    const used = new Set()
    labels.forEach((label, i) => {
      const before = field.get(label)
      if (colors[i] === undefined && before !== undefined && !used.has(before)) {
        colors[i] = before
        used.add(before)
      }
    })
    const held = new Set(field.values())
    labels.forEach((label, i) => {
      if (colors[i] !== undefined) return
      const color = palette.find((c) => !used.has(c) && !held.has(c)) ?? palette.find((c) => !used.has(c)) ?? palette[i % palette.length]
      colors[i] = color
      used.add(color)
      field.set(label, color)
    })
    return colors.map((c) => c ?? palette[0])
  }

  /** @param {string} by */
  function build (by) {
    chart?.destroy()
    chart = null
    if (data === null) return
    const style = getComputedStyle(document.documentElement)
    const axis = style.getPropertyValue('--chart-axis').trim()
    const grid = { stroke: style.getPropertyValue('--chart-grid').trim(), width: 1 }
    const font = '11px system-ui, -apple-system, "Segoe UI", Roboto, sans-serif'
    const colors = colorsOf(data.labels, by)
    const barsBuilder = uPlot.paths.bars
    if (barsBuilder === undefined) throw new Error('this uPlot build has no bars paths')
    const bars = barsBuilder({ size: [0.9, Infinity], gap: 0, align: 1 })
    const current = data
    // Stacked: series k is drawn from zero to the sum of series 0..k, the tallest first.
    const order = current.labels.map((_, i) => i).reverse()
    /** @type {uPlot.Options} */
    const options = {
      width: Math.max(200, target.clientWidth),
      height: plotHeight,
      padding: [8, 24, 0, 0], // right: room for the last time label (explore32c F12)
      scales: { x: { time: true, range: () => [current.from / 1000, current.to / 1000] }, y: { range: (_u, _min, max) => [0, max > 0 ? max * 1.1 : 1] } },
      axes: [
        { stroke: axis, grid, ticks: { stroke: grid.stroke, width: 1, size: 4 }, font, space: 70, size: 28, gap: 4, values: timeTicks },
        { stroke: axis, grid, ticks: { show: false }, font, size: 50, gap: 4, space: 28, values: (_u, splits) => splits.map((v) => (Number.isInteger(v) ? formatCount(v, { short: v >= 1e4 }) : '')) },
      ],
      cursor: { drag: { x: true, y: false, setScale: false }, points: { show: false } },
      legend: { live: true },
      hooks: { setSelect: [zoomOnSelect(onZoom)] },
      series: [
        { value: (_u, v) => (v == null ? '' : formatEventTime(v * 1000).slice(0, 8)) },
        ...order.map((k) => ({
          label: current.labels[k] === remainder ? remainderLabel : current.labels[k],
          stroke: colors[k],
          fill: colors[k],
          width: 0,
          paths: bars,
          points: { show: false },
          /** @type {uPlot.Series.Value} */
          value: (_u, _v, _si, idx) => (idx == null ? formatCount(sum(current.counts[k])) : formatCount(current.counts[k][idx])),
        })),
      ],
    }
    const stacked = stack(current.counts)
    chart = new uPlot(options, [current.xs, ...order.map((k) => stacked[k])], target)
  }

  let lastBy = 'level'
  const resize = new ResizeObserver(() => {
    if (chart && target.clientWidth > 0 && target.clientWidth !== chart.width) chart.setSize({ width: target.clientWidth, height: plotHeight })
  })
  resize.observe(target)
  matchMedia('(prefers-color-scheme: dark)').addEventListener('change', () => build(lastBy))

  return {
    update (stats, by) {
      lastBy = by
      const values = (stats.groups ?? []).map((g) => g.value)
      if (by === 'level') values.sort((a, b) => levelOrder.indexOf(a) - levelOrder.indexOf(b))
      const step = stats.step_ms
      const byT = new Map(stats.series.map((p) => [p.t, p]))
      /** @type {number[]} */
      const xs = []
      /** @type {number[][]} */
      const counts = [...values, remainder].map(() => [])
      for (let t = Math.floor(stats.from / step) * step; t < stats.to && xs.length < 10_000; t += step) {
        const point = byT.get(t)
        xs.push(t / 1000)
        let grouped = 0
        values.forEach((value, k) => {
          const n = point?.groups?.[value] ?? 0
          grouped += n
          counts[k].push(n)
        })
        counts[values.length].push(Math.max(0, (point?.count ?? 0) - grouped))
      }
      const labels = [...values, remainder]
      // No "other" series when every event is in a group.
      if (sum(counts[values.length]) === 0) { labels.pop(); counts.pop() }
      data = { xs, labels, counts, from: stats.from, to: stats.to, stepMs: step, complete: values.length < groupsListed }
      build(by)
    },
    count (ts, value) {
      if (data === null || chart === null) return
      // Live: a bucket past the end moves the window on (the oldest buckets fall off).
      while (data.xs.length > 0 && ts >= (data.xs[data.xs.length - 1] * 1000) + data.stepMs && ts - data.to < 3_600_000) {
        data.xs.push(data.xs[data.xs.length - 1] + data.stepMs / 1000)
        data.xs.shift()
        for (const row of data.counts) { row.push(0); row.shift() }
        data.from += data.stepMs
        data.to += data.stepMs
      }
      const i = Math.floor((ts - data.xs[0] * 1000) / data.stepMs)
      if (i < 0 || i >= data.xs.length) return
      const { k, made } = seriesOf(value)
      data.counts[k][i]++
      if (made) { build(lastBy); return }
      const order = data.labels.map((_, j) => j).reverse()
      const stacked = stack(data.counts)
      chart.setData([data.xs, ...order.map((j) => stacked[j])], true)
    },
    clear () {
      data = null
      build(lastBy)
    },
  }
}

/** @param {number[]} list */
function sum (list) {
  let total = 0
  for (const n of list) total += n
  return total
}

/**
 * Running totals: row k is the sum of rows 0..k.
 * @param {number[][]} counts
 */
function stack (counts) {
  /** @type {number[][]} */
  const out = []
  for (const row of counts) {
    const below = out.at(-1)
    out.push(below === undefined ? row.slice() : row.map((n, i) => n + below[i]))
  }
  return out
}

/**
 * Adds an empty series `label` at index `at`; returns `at`.
 * @param {{ xs: number[], labels: string[], counts: number[][] }} data
 * @param {number} at
 * @param {string} label
 */
function insertSeries (data, at, label) {
  data.labels.splice(at, 0, label)
  data.counts.splice(at, 0, data.xs.map(() => 0))
  return at
}
