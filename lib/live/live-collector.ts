// Runs in the parse worker while a stream has tail clients: for each stored row it adds to the
// task's live aggregates and, for the tail filters the row matches, writes its SSE frame once
// (tail-frames.ts; up to a cap per filter and task; the rest are counted as dropped). The
// worker's only extra work when nobody tails a stream is a null check.
//
// Past its cap a filter only counts what it drops, and a non-empty one counts by sampling: it is
// matched against one row in `sampleEvery`, drawn at random (every n-th row would alias with
// periodic logs, such as hosts taking turns), each match standing for that many. On a busy stream the
// caps are spent early in each second, so this keeps ten tails' filters from costing the workers
// a match per row and filter (bench/live.bench.ts); `dropped` is then an estimate. The sampled
// rows are drawn by geometric skips (the gap to the next one), which picks each row with the same
// 1-in-`sampleEvery` chance as a coin per row; so once every cap is spent, a row that is not
// sampled costs a counter, and an empty q's drops are added up when the task ends.
import type { EventRow } from '../events/event-row.ts'
import { PathCounter } from './path-counter.ts'
import type { LiveOutput, LiveRequest } from './live-protocol.ts'
import { parseFilter } from '../query/filter-parser.ts'
import { compileMatcher } from '../query/filter-match.ts'
import type { EventLike } from '../query/filter-match.ts'
import { LiveStats } from './live-stats.ts'
import { TailFrameWriter } from './tail-frames.ts'

type Matcher = ((event: EventLike) => boolean) | null // null: matches everything

/** Past its cap, a filter is matched against one row in this many. */
export const sampleEvery = 16
const logMissed = Math.log(1 - 1 / sampleEvery)

/** Rows from this one to the next sampled one (1: the next row): geometric, mean sampleEvery. */
function rowsToNextSample (): number {
  return 1 + Math.floor(Math.log(1 - Math.random()) / logMissed)
}

/** Paths of the task's rows, by their bytes; one per worker, cleared per task. */
const pathCounter = new PathCounter()
/** The tail frames of a task; one per worker, reset per task. */
const frames = new TailFrameWriter()

/** Compiled filters by their text; bounded, since clients come and go. */
const matchers = new Map<string, Matcher>()
const maxCachedMatchers = 256

function matcherFor (q: string): Matcher {
  let m = matchers.get(q)
  if (m === undefined) {
    // The tail route parsed q already, so it is valid here.
    const nodes = parseFilter(q)
    m = nodes.length === 0 ? null : compileMatcher(nodes)
    if (matchers.size >= maxCachedMatchers) matchers.clear()
    matchers.set(q, m)
  }
  return m
}

export class LiveCollector {
  readonly #matchers: Matcher[]
  readonly #caps: number[]
  readonly #receivedAt: number
  readonly #stats = new LiveStats()
  readonly #taken: number[]
  readonly #dropped: number[]
  readonly #masks: number[] = []
  /** Filters still under their cap. */
  #open: number
  /** Rows from the next one to the next sampled one (1: the next row is sampled). */
  #untilSample = rowsToNextSample()
  /** Rows passed over while every cap was spent: each is dropped by every empty q. */
  #passedOver = 0

  constructor (request: LiveRequest, receivedAt: number) {
    this.#matchers = request.filters.map(matcherFor)
    this.#caps = request.caps
    this.#receivedAt = receivedAt
    this.#taken = new Array(this.#matchers.length).fill(0)
    this.#dropped = new Array(this.#matchers.length).fill(0)
    this.#open = this.#caps.filter((cap) => cap > 0).length
    pathCounter.clear()
    frames.reset()
  }

  /** One stored row, with its `seq`: its strings are decoded only when a filter needs them. */
  add (row: EventRow, seq: number): void {
    this.#stats.add(row, pathCounter)
    const sampled = --this.#untilSample === 0
    if (sampled) this.#untilSample = rowsToNextSample()
    else if (this.#open === 0) { this.#passedOver++; return }
    let view: EventLike | null = null
    let mask = 0
    for (let i = 0; i < this.#matchers.length; i++) {
      const open = this.#taken[i] < this.#caps[i]
      const m = this.#matchers[i]
      if (m === null) { // an empty q matches every row, at no cost: counted exactly
        if (open) {
          if (++this.#taken[i] === this.#caps[i]) this.#open--
          mask |= 1 << i
        } else {
          this.#dropped[i]++
        }
        continue
      }
      if (!open && !sampled) continue
      view ??= row.toObject() as EventLike
      if (!m(view)) continue
      if (open) {
        if (++this.#taken[i] === this.#caps[i]) this.#open--
        mask |= 1 << i
      } else {
        this.#dropped[i] += sampleEvery
      }
    }
    if (mask !== 0) {
      frames.add(row, this.#receivedAt, seq)
      this.#masks.push(mask)
    }
  }

  finish (): LiveOutput {
    if (this.#passedOver > 0) {
      for (let i = 0; i < this.#matchers.length; i++) if (this.#matchers[i] === null) this.#dropped[i] += this.#passedOver
    }
    return {
      frames: frames.finish(), ends: [...frames.ends], masks: this.#masks, dropped: this.#dropped,
      stats: this.#stats.toPartial(pathCounter),
    }
  }
}
