// A clock that moves only when the test moves it, for components that take a clock: the batch
// writer and admission (`now` and `setTimer`), the tail hub (a LiveClock: `now()` and `every`).
// A test states at which clock time something is due and makes it happen, instead of sleeping
// and measuring wall time.
import type { LiveClock } from '../../lib/live/live-clock.ts'

interface Timer { at: number, fn: () => void, every: number }

export class ManualClock implements LiveClock {
  #now: number
  readonly #timers = new Set<Timer>()

  /** Starts at `start` ms. */
  constructor (start = 0) {
    this.#now = start
  }

  /** The clock, in ms: pass as `now` (a bound function, so it may be passed alone). */
  readonly now = (): number => this.#now

  /** Runs `fn` once the clock reaches now + ms; returns its cancel: pass as `setTimer`. */
  readonly setTimer = (fn: () => void, ms: number): (() => void) => {
    const timer: Timer = { at: this.#now + Math.max(0, ms), fn, every: 0 }
    this.#timers.add(timer)
    return () => { this.#timers.delete(timer) }
  }

  /** Runs `fn` every `ms` (LiveClock); returns its stop. */
  readonly every = (ms: number, fn: () => void): (() => void) => {
    const timer: Timer = { at: this.#now + ms, fn, every: ms }
    this.#timers.add(timer)
    return () => { this.#timers.delete(timer) }
  }

  /** When the earliest timer is due (Infinity: none is set). */
  get nextDueAt (): number {
    let next = Infinity
    for (const timer of this.#timers) next = Math.min(next, timer.at)
    return next
  }

  /** When each timer set is due, earliest first. */
  get dueTimes (): number[] {
    return [...this.#timers].map((timer) => timer.at).sort((a, b) => a - b)
  }

  /** Moves the clock to `to` ms, running each timer due by then in due order, at its due time. */
  advanceTo (to: number): void {
    for (;;) {
      let due: Timer | undefined
      for (const timer of this.#timers) if (timer.at <= to && (due === undefined || timer.at < due.at)) due = timer
      if (due === undefined) break
      this.#now = Math.max(this.#now, due.at)
      if (due.every > 0) due.at += due.every
      else this.#timers.delete(due)
      due.fn()
    }
    this.#now = Math.max(this.#now, to)
  }

  /** Moves the clock forward by `ms`, as advanceTo. */
  advance (ms: number): void {
    this.advanceTo(this.#now + ms)
  }

  /**
   * Moves the clock to `to` ms without running the timers due meanwhile: as when the event loop
   * is busy and a timer fires late. They run at the next advanceTo.
   */
  jumpTo (to: number): void {
    this.#now = Math.max(this.#now, to)
  }
}
