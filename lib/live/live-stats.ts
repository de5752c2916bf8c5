// Live aggregates of a stream, one window at a time (the tail's `stats` event, every second).
// Workers fill a LiveStats per task from the rows they parse; the main thread merges the tasks'
// partials into the stream's current window and emits it once a second. Everything merges by
// addition, so the order tasks finish in does not matter.
//
// Response-time percentiles come from a log-bucketed histogram (DDSketch-like): bucket i holds
// values in (γ^(i-1), γ^i] seconds above a 1 µs floor, γ = 1.02, so any percentile is within 2%
// of the true value, with a fixed 1,100 counters instead of keeping and sorting values.
// Top paths are counted per task and the task's 32 most frequent kept: a path that is frequent
// overall is frequent in most tasks, so the merged top 10 is right for the paths that matter,
// and counts are lower bounds.
import type { EventRow } from '../events/event-row.ts'
import { fBytes, fPath, fRt, fStatus } from '../events/fields.ts'
import type { SeriesPoint } from '../query/stats-query.ts'
import type { PathCounter } from './path-counter.ts'

const gamma = 1.02
const logGamma = Math.log(gamma)
const minRtS = 1e-6
/** Buckets from 1 µs to about 1e4 s (γ^1100 ≈ 2.9e9 × 1 µs); above, the last bucket. */
const bucketCount = 1100
/** Paths a task reports; see the note above. */
const pathsPerTask = 32
/** Paths an emitted window lists. */
export const topPathsListed = 10

/** What a worker sends for one task (structured-clone friendly: arrays and numbers). */
export interface LiveStatsPartial {
  count: number
  status: [number, number, number, number] // 2xx, 3xx, 4xx, 5xx
  bytes: number
  /** Sparse histogram: [bucket, count, bucket, count, ...]. */
  rt: number[]
  paths: Array<[string, number]>
}

/** The `stats` event's data: a series point of the stats API over one second, plus its top paths. */
export interface LiveStatsSnapshot extends SeriesPoint {
  top_paths: Array<{ path: string, count: number }>
}

function bucketOf (rtS: number): number {
  if (rtS <= minRtS) return 0
  const i = Math.ceil(Math.log(rtS / minRtS) / logGamma)
  return i >= bucketCount ? bucketCount - 1 : i
}

/** The bucket's representative value: the geometric middle of its bounds. */
function valueOf (bucket: number): number {
  if (bucket === 0) return minRtS
  return minRtS * Math.pow(gamma, bucket - 0.5)
}

export class LiveStats {
  count = 0
  readonly status: [number, number, number, number] = [0, 0, 0, 0]
  bytes = 0
  readonly #rt = new Uint32Array(bucketCount)
  #rtCount = 0
  #paths = new Map<string, number>()

  /** One stored event; its path is counted by its bytes in `paths` (the task's counter, given to toPartial). */
  add (row: EventRow, paths: PathCounter): void {
    const numbers = row.number
    this.count++
    const status = numbers[fStatus]
    if (status >= 200 && status < 600) this.status[Math.floor(status / 100) - 2]++
    const bytes = numbers[fBytes]
    if (bytes >= 0) this.bytes += bytes
    const rtS = numbers[fRt]
    if (rtS >= 0) {
      this.#rt[bucketOf(rtS)]++
      this.#rtCount++
    }
    const path = row.source[fPath]
    if (path !== null) paths.add(path, row.start[fPath], row.end[fPath])
  }

  /** The task's partial; `counted` holds the paths of the events added by add(). */
  toPartial (counted?: PathCounter): LiveStatsPartial {
    if (counted !== undefined && counted.size > 0) {
      for (const [path, n] of counted.frequent(pathsPerTask)) this.#paths.set(path, (this.#paths.get(path) ?? 0) + n)
    }
    const rt: number[] = []
    if (this.#rtCount > 0) for (let i = 0; i < bucketCount; i++) if (this.#rt[i] > 0) rt.push(i, this.#rt[i])
    return { count: this.count, status: [...this.status], bytes: this.bytes, rt, paths: frequentOf(this.#paths, pathsPerTask) }
  }

  merge (p: LiveStatsPartial): void {
    this.count += p.count
    for (let i = 0; i < 4; i++) this.status[i] += p.status[i]
    this.bytes += p.bytes
    for (let i = 0; i < p.rt.length; i += 2) {
      this.#rt[p.rt[i]] += p.rt[i + 1]
      this.#rtCount += p.rt[i + 1]
    }
    for (const [path, n] of p.paths) this.#paths.set(path, (this.#paths.get(path) ?? 0) + n)
  }

  /** The rt value below which `q` (0..1) of the events' response times lie; null without any. */
  quantile (q: number): number | null {
    if (this.#rtCount === 0) return null
    const rank = Math.max(1, Math.ceil(q * this.#rtCount))
    let seen = 0
    for (let i = 0; i < bucketCount; i++) {
      seen += this.#rt[i]
      if (seen >= rank) return valueOf(i)
    }
    return valueOf(bucketCount - 1)
  }

  snapshot (t: number): LiveStatsSnapshot {
    return {
      t,
      count: this.count,
      status_2xx: this.status[0],
      status_3xx: this.status[1],
      status_4xx: this.status[2],
      status_5xx: this.status[3],
      bytes: this.bytes,
      rt_p50: this.quantile(0.5),
      rt_p95: this.quantile(0.95),
      rt_p99: this.quantile(0.99),
      top_paths: topOf(this.#paths, topPathsListed).map(([path, count]) => ({ path, count })),
    }
  }
}

/**
 * A task's `n` most frequent paths, in no particular order, without sorting every path: most of
 * a task's paths occur once (ids in paths), and only those seen more than once are ranked; paths
 * seen once fill what is left, in the order they came (any of them is as good for the merge).
 */
function frequentOf (counts: Map<string, number>, n: number): Array<[string, number]> {
  const repeated: Array<[string, number]> = []
  counts.forEach((count, path) => { if (count > 1) repeated.push([path, count]) })
  if (repeated.length >= n) return repeated.sort((a, b) => b[1] - a[1]).slice(0, n)
  for (const [path, count] of counts) {
    if (repeated.length === n) break
    if (count === 1) repeated.push([path, count])
  }
  return repeated
}

function topOf (counts: Map<string, number>, n: number): Array<[string, number]> {
  return [...counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).slice(0, n)
}
