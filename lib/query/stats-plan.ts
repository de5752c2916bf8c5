// Which table answers a stats request, at which step, over exactly which range.
//
// Contract:
// - Ranges are half-open [from, to) in ms since the epoch. The plan widens them to whole steps
//   counted from the epoch (from down, to up; a 1d step starts at 00:00 UTC), so every series
//   point covers a full step and totals and top lists cover exactly the series' range; the
//   response reports the widened range.
// - Series source: raw `events` when a filter `q` is present (rollups keep no per-event fields to
//   filter on) or the range is at most rawMaxRangeMs; `events_1m` up to minuteMaxRangeMs;
//   `events_1h` beyond. A step that is not a whole number of the source's buckets is raised to
//   the next one (a minute rollup cannot split a minute); the response's step_ms says so. Raw
//   rows also while a deleted stream of the same name may still have rows in the rollups
//   (rollupsPurged false: its deletion's mutations are running).
// - Top lists follow the series source: raw rows, or the hourly per-dimension rollups for the
//   whole hours of the range plus the partial hours at either end from raw rows (or from their
//   hourly rows when nothing lies in the rest of the hour; see stats-query.ts).
// - At most maxPoints series points; more is SluiceError('invalid_query').
import { SluiceError } from '../errors.ts'
import type { GroupBy } from './stats-groups.ts'
import { sql } from '../storage/sql.ts'
import type { SqlFragment } from '../storage/sql.ts'

export type StatsSource = 'events' | 'events_1m' | 'events_1h'

const second = 1000
const minute = 60 * second
const hour = 60 * minute
const day = 24 * hour

/** Bucket of each source in ms; any step is a multiple of it. */
export const sourceBucketMs: Readonly<Record<StatsSource, number>> = {
  events: 1,
  events_1m: minute,
  events_1h: hour,
}

/**
 * 1 h: past this rollups answer sooner. A rollup-served request still reads the partial hours at
 * both ends from raw rows (1 h of rows for a range of whole hours), so a shorter range gains
 * nothing; at 2 h the rollup path took half the time of raw rows in bench/stats.bench.ts. The 30 s
 * step chooseStep picks for 60-70 min ranges becomes 1 min there.
 */
export const rawMaxRangeMs = hour
/**
 * 1 day: by=level over this or more (without q) is counted from the hourly levels rollup at whole
 * hours (24 points or more); shorter ranges scan raw rows at their finer steps.
 */
export const levelRollupMinRangeMs = day
/** 3 days: up to 4,320 minute rows per stream; beyond, the hourly table (24 rows a day). */
export const minuteMaxRangeMs = 3 * day
/** The most series points one request may ask for; Prometheus draws the same line at 11,000. */
export const maxPoints = 11_000
/**
 * Events a `by=` from raw rows counts exactly by default (`sample=`); a range holding more is
 * sampled (stats-groups.ts). A by= of an attribute over 30 M events read 10 GB of attribute arrays
 * in 12-31 s; over slices holding about this many it read 180 MB (bench/README.md, "Find anything").
 */
export const groupSampleRows = 500_000
/** The most a caller may ask to count exactly (`sample=`), besides 0 (never sample). */
export const maxGroupSampleRows = 100_000_000

/** Default number of entries per top list (docs/api.md section 7.4). */
export const defaultTopN = 10
/**
 * The most entries a top list may ask for. It is also how many of the busiest paths slowest_paths
 * ranks (stats-query.ts), so every path of the top paths list has its rt p95.
 */
export const maxTopN = 100

/** Steps a chart reads well at; chooseStep picks one. */
const niceStepsMs = [
  second, 5 * second, 10 * second, 30 * second,
  minute, 5 * minute, 10 * minute, 30 * minute,
  hour, 3 * hour, 6 * hour, 12 * hour, day,
]
/** About this many points per series when no step is given. */
const targetPoints = 100

/** The nice step closest (by ratio) to the one giving about 100 points over [from, to). */
export function chooseStep (from: number, to: number): number {
  const ideal = Math.max(1, to - from) / targetPoints
  let best = niceStepsMs[0]
  for (const step of niceStepsMs) {
    if (Math.abs(Math.log(step / ideal)) < Math.abs(Math.log(best / ideal))) best = step
  }
  return best
}

const unitMs: Readonly<Record<string, number>> = { s: second, m: minute, h: hour, d: day }
const stepPattern = /^([1-9][0-9]{0,5})([smhd])$/

/** '10s', '1m', '1h', '1d' ... to milliseconds; anything else is SluiceError('invalid_query'). */
export function parseStep (text: string): number {
  const match = stepPattern.exec(text)
  if (!match) {
    throw new SluiceError('invalid_query', `step: expected a positive number and a unit s, m, h or d, like 10s or 1h (got ${JSON.stringify(text)})`, { details: { parameter: 'step' } })
  }
  return Number(match[1]) * unitMs[match[2]]
}

export interface StatsParams {
  orgId: string
  stream: string
  /** Start of the range, ms since the epoch, inclusive. */
  from: number
  /** End of the range, ms since the epoch, exclusive. */
  to: number
  /** Series step in ms; default chooseStep(from, to). */
  stepMs?: number
  /** The compiled `q` (a condition on `events` columns); absent or rawSql('1') means none. */
  filter?: SqlFragment
  /** A pre-filter of `q` for PREWHERE (filter-sql.ts valuesPrefilterSql); `filter` then stays in WHERE. */
  prewhere?: SqlFragment
  /** Entries per top list, 1..maxTopN; default 10. */
  topN?: number
  /** Forces the series source, to compare sources in tests and benchmarks. */
  source?: StatsSource
  /** Raw rows received at or before this time (ms) belong to a deleted stream of the same name. 0: none. */
  hiddenBefore?: number
  /** false while a deleted stream of the same name may still have rows in the rollups: raw rows only. */
  rollupsPurged?: boolean
  /** `by=`: the field to group by (stats-groups.ts); absent: no groups. */
  by?: GroupBy
  /**
   * `sample=`: events a by= counts exactly; over more it samples (stats-groups.ts). 0: never.
   * Absent: groupSampleRows, and a range whose slices would read about as many rows as it holds
   * is counted exactly (stats-groups.ts groupSlices).
   */
  groupSample?: number
  /** Count exactly up to what the slices would read, as without `sample=` (default: groupSample not given). */
  groupSampleAuto?: boolean
  /**
   * `lists=none`: false, and the top lists' statements are not run (the answer's lists are empty,
   * `unique_sources` null): a histogram's read, which needs the series and the groups only.
   */
  lists?: boolean
}

export interface StatsPlan {
  orgId: string
  stream: string
  source: StatsSource
  /** Aligned range, ms: a multiple of stepMs, so of the source's bucket too. */
  from: number
  to: number
  stepMs: number
  topN: number
  /** null when there is no filter. */
  filter: SqlFragment | null
  /** ` PREWHERE <pre-filter>` for a read of raw rows that scans the range with the filter; empty when none. */
  prewhere: SqlFragment
  /** Raw rows received at or before this (ms) are not read; 0: none. */
  hiddenBefore: number
  /** `by` groups come from the hourly levels rollup (by=level, no q, a day or more; see below). */
  groupsFromRollup: boolean
  /** Events a by= from raw rows counts exactly; over more it samples. 0: never. */
  groupSample: number
  /** `sample` was not given: a range the slices would read nearly whole is counted exactly too. */
  groupSampleAuto: boolean
}

function isWholeMs (value: number): boolean {
  return Number.isSafeInteger(value) && value >= 0
}

export function planStats (params: StatsParams): StatsPlan {
  const { from, to } = params
  if (!isWholeMs(from) || !isWholeMs(to)) throw new SluiceError('invalid_query', 'from and to must be whole milliseconds since the epoch')
  if (from >= to) throw new SluiceError('invalid_query', 'from must be before to', { details: { parameter: 'from' } })
  const topN = params.topN ?? defaultTopN
  if (!Number.isInteger(topN) || topN < 1 || topN > maxTopN) {
    throw new SluiceError('invalid_query', `top lists hold 1 to ${maxTopN} entries (got ${topN})`, { details: { parameter: 'top' } })
  }
  const requestedStep = params.stepMs ?? chooseStep(from, to)
  if (!Number.isSafeInteger(requestedStep) || requestedStep < 1) throw new SluiceError('invalid_query', 'step must be a positive number of milliseconds', { details: { parameter: 'step' } })
  const filter = params.filter && params.filter.text.trim() !== '1' ? params.filter : null

  let source = params.source
  if (source === undefined) {
    if (filter || to - from <= rawMaxRangeMs || params.rollupsPurged === false) source = 'events'
    else source = to - from <= minuteMaxRangeMs ? 'events_1m' : 'events_1h'
  } else if (filter && source !== 'events') {
    // A caller bug, not a user error: no rollup can answer a filtered request.
    throw new TypeError(`source ${source} cannot apply a filter`)
  }

  // by=level over a day or more without q: the groups come from the hourly levels rollup, so the
  // step is whole hours (24 points or more). Shorter ranges keep their finer steps from raw rows.
  const groupsFromRollup = params.by?.isLevel === true && source !== 'events' && to - from >= levelRollupMinRangeMs
  const bucket = groupsFromRollup ? Math.max(hour, sourceBucketMs[source]) : sourceBucketMs[source]
  const stepMs = Math.ceil(requestedStep / bucket) * bucket
  const alignedFrom = Math.floor(from / stepMs) * stepMs
  const alignedTo = Math.ceil(to / stepMs) * stepMs
  const points = (alignedTo - alignedFrom) / stepMs
  if (points > maxPoints) {
    // Said as asked: a step the rollup raised names both (explore34d J8: `step=1m` over ten years
    // was refused as "step 3600000 ms").
    const step = stepMs === requestedStep ? `step ${stepMs} ms` : `step ${requestedStep} ms (raised to ${stepMs} ms, the bucket of the rollup this range is read from)`
    throw new SluiceError('invalid_query', `${step} gives ${points} points over this range; at most ${maxPoints}: use a larger step`, { details: { parameter: 'step' } })
  }
  const prewhere = filter !== null && params.prewhere !== undefined ? sql` PREWHERE ${params.prewhere}` : sql``
  return { orgId: params.orgId, stream: params.stream, source, from: alignedFrom, to: alignedTo, stepMs, topN, filter, prewhere, hiddenBefore: params.hiddenBefore ?? 0, groupsFromRollup, groupSample: params.groupSample ?? groupSampleRows, groupSampleAuto: params.groupSampleAuto ?? params.groupSample === undefined }
}
