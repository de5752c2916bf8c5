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
//
// Regular expressions have a budget, since matching runs on the ingest path and their cost is the
// text's length times the automaton's states (filter-regex.ts): the filters with one may take,
// together, regexBaseSteps plus, per row of the task, regexStepsPerRow and regexStepsPerChar per
// character of its message and attrs (as parsing the row costs more for a longer one), shared
// equally (docs/api.md section 7.5). A filter past its share is matched against sampled rows only, one in
// `sampleEvery`, then in twice as many each time it is past its share again, each match standing
// for that many (delivered while under its cap, the rest counted as dropped); an automaton is
// stopped past the steps its filter's share has left, and that row does not match. One
// 1,000-state pattern over 2 KB messages took 20 ms a row: two such tails held a 10 MB body for 60 s
// until it failed with 408, storing nothing (explore16 F1). Steps, not time: the same rows are
// matched the same way on a loaded machine. The other filters cost a scan of the text per term.
import type { EventRow } from '../events/event-row.ts'
import { PathCounter } from './path-counter.ts'
import type { LiveOutput, LiveRequest } from './live-protocol.ts'
import { parseFilter, someTerm } from '../query/filter-parser.ts'
import { compileMatcher } from '../query/filter-match.ts'
import { RegexStepLimit, regexStepsLeft, setRegexStepLimit } from '../query/filter-regex.ts'
import type { FilterNode } from '../query/filter-parser.ts'
import type { EventLike } from '../query/filter-match.ts'
import { LiveStats } from './live-stats.ts'
import { TailFrameWriter } from './tail-frames.ts'

/** null: matches everything; `regex`: it holds a regular expression (under the step budget). */
type Matcher = { match: (event: EventLike) => boolean, regex: boolean } | null

/** Past its cap, a filter is matched against one row in this many. */
export const sampleEvery = 16
const logMissed = Math.log(1 - 1 / sampleEvery)

/**
 * Automaton steps a task's regular expressions may take together: regexBaseSteps, plus per row
 * regexStepsPerRow and regexStepsPerChar per character of its message and attrs (a step is about
 * 10 ns here: 2 ms, 10 us, 40 ns). `message:~"time(out)?"` over a 200-character message takes
 * about 600, a pattern of 1,000 states over 2,000 characters 2 M.
 */
export const regexBaseSteps = 200_000
export const regexStepsPerRow = 1000
export const regexStepsPerChar = 4
/** Steps a filter past its share may still take on a sampled row. */
const minRegexSteps = 10_000
/** A filter past its share is matched against one row in at most this many. */
const maxEvery = 1 << 16

/** Rows from this one to the next sampled one (1: the next row): geometric, mean sampleEvery. */
function rowsToNextSample (): number {
  return 1 + Math.floor(Math.log(1 - Math.random()) / logMissed)
}

/** Paths of the task's rows, by their bytes; one per worker, cleared per task. */
const pathCounter = new PathCounter()
/** The tail frames of a task; one per worker, reset per task. */
const frames = new TailFrameWriter()

/**
 * Per worker: how thinly each regular expression's filter was sampled at the end of its last task
 * (its `every`), so a costly pattern stays thinned across tasks: a stream fed line by line gets a
 * task per request, and each new task's base budget would pay for another cut-off match (2 ms).
 * A filter matched within a quarter of its share is sampled twice as often in the next task.
 * Bounded as the matchers are.
 */
const everyOf = new Map<string, number>()

/** How thinly this worker samples filter `q` when its next task starts (1: every row); for tests. */
export function sampledEvery (q: string): number {
  return everyOf.get(q) ?? 1
}

/** Compiled filters by their text; bounded, since clients come and go. */
const matchers = new Map<string, Matcher>()
const maxCachedMatchers = 256

function matcherFor (q: string): Matcher {
  let m = matchers.get(q)
  if (m === undefined) {
    // The tail route parsed q already, so it is valid here.
    const node = parseFilter(q)
    m = node === null ? null : { match: compileMatcher(node), regex: hasRegex(node) }
    if (matchers.size >= maxCachedMatchers) matchers.clear()
    matchers.set(q, m)
  }
  return m
}

function textLength (value: string | number | null | undefined): number {
  return typeof value === 'string' ? value.length : 0
}

function hasRegex (node: FilterNode): boolean {
  return someTerm(node, (term) => term.kind === 'regex')
}

export class LiveCollector {
  readonly #matchers: Matcher[]
  readonly #caps: number[]
  readonly #receivedAt: number
  readonly #stats = new LiveStats()
  readonly #taken: number[]
  readonly #dropped: number[]
  readonly #masks: number[] = []
  /** Per filter: automaton steps taken, and the rows it is matched against one in (1: every row). */
  readonly #spent: number[]
  readonly #every: number[]
  /** Per filter: the rows its regular expression was run on in this task. */
  readonly #evaluated: number[]
  readonly #filters: readonly string[]
  /** Filters with a regular expression: they share the task's steps. */
  readonly #costly: number
  /** Automaton steps the task's regular expressions may take together, so far. */
  #steps = regexBaseSteps
  /** Filters matched against every row: under their cap and their share of the time. */
  #open: number
  /** Rows from the next one to the next sampled one (1: the next row is sampled). */
  #untilSample = rowsToNextSample()
  /** Rows passed over while every cap was spent: each is dropped by every empty q. */
  #passedOver = 0

  constructor (request: LiveRequest, receivedAt: number) {
    this.#matchers = request.filters.map(matcherFor)
    this.#filters = request.filters
    this.#spent = new Array(this.#matchers.length).fill(0)
    this.#evaluated = new Array(this.#matchers.length).fill(0)
    this.#every = request.filters.map((q, i) => this.#matchers[i]?.regex === true ? everyOf.get(q) ?? 1 : 1)
    this.#costly = this.#matchers.filter((m) => m !== null && m.regex).length
    this.#caps = request.caps
    this.#receivedAt = receivedAt
    this.#taken = new Array(this.#matchers.length).fill(0)
    this.#dropped = new Array(this.#matchers.length).fill(0)
    this.#open = this.#caps.filter((cap, i) => cap > 0 && this.#every[i] === 1).length
    pathCounter.clear()
    frames.reset()
  }

  /** One stored row, with its `seq`: its strings are decoded only when a filter needs them. */
  add (row: EventRow, seq: number): void {
    this.#stats.add(row, pathCounter)
    this.#steps += regexStepsPerRow
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
      // Every row while under its cap and its share of the steps; else the sampled rows, thinned
      // to one in `every` past its share.
      const every = this.#every[i]
      let weight = 1
      if (!open || every > 1) {
        if (!sampled || (every > sampleEvery && Math.random() * every >= sampleEvery)) continue
        weight = Math.max(every, sampleEvery)
      }
      if (view === null) {
        view = row.toObject() as EventLike
        this.#steps += regexStepsPerChar * (textLength(view.message) + textLength(view.attrs))
      }
      if (!(m.regex ? this.#matchesCounted(i, m.match, view) : m.match(view))) continue
      if (open) {
        if (++this.#taken[i] === this.#caps[i] && this.#every[i] === 1) this.#open--
        mask |= 1 << i
        this.#dropped[i] += weight - 1
      } else {
        this.#dropped[i] += weight
      }
    }
    if (mask !== 0) {
      frames.add(row, this.#receivedAt, seq)
      this.#masks.push(mask)
    }
  }

  /**
   * Whether filter i (with a regular expression) matches `view`, its automaton steps counted
   * against its share: past it, the filter is sampled more thinly. Stopped past the steps the
   * share has left (at least minRegexSteps), it does not match.
   */
  #matchesCounted (i: number, match: (event: EventLike) => boolean, view: EventLike): boolean {
    const share = this.#steps / this.#costly
    const limit = Math.max(minRegexSteps, share - this.#spent[i])
    let matched = false
    let cut = false
    setRegexStepLimit(limit)
    try {
      matched = match(view)
    } catch (err) {
      if (!(err instanceof RegexStepLimit)) throw err
      cut = true
    }
    this.#spent[i] += limit - Math.max(0, regexStepsLeft())
    this.#evaluated[i]++
    setRegexStepLimit(Infinity)
    if ((cut || this.#spent[i] > share) && this.#every[i] < maxEvery) {
      if (this.#every[i] === 1 && this.#taken[i] < this.#caps[i]) this.#open--
      this.#every[i] = this.#every[i] === 1 ? sampleEvery : this.#every[i] * 2
    }
    return matched
  }

  finish (): LiveOutput {
    const share = this.#steps / this.#costly
    for (let i = 0; i < this.#matchers.length; i++) {
      if (this.#matchers[i]?.regex !== true) continue
      let every = this.#every[i]
      if (every > 1 && this.#evaluated[i] > 0 && this.#spent[i] < share / 4) every = every > sampleEvery ? every / 2 : 1
      if (every === 1) {
        everyOf.delete(this.#filters[i])
      } else {
        if (everyOf.size >= maxCachedMatchers) everyOf.clear()
        everyOf.set(this.#filters[i], every)
      }
    }
    if (this.#passedOver > 0) {
      for (let i = 0; i < this.#matchers.length; i++) if (this.#matchers[i] === null) this.#dropped[i] += this.#passedOver
    }
    return {
      frames: frames.finish(), ends: [...frames.ends], masks: this.#masks, dropped: this.#dropped,
      stats: this.#stats.toPartial(pathCounter),
    }
  }
}
