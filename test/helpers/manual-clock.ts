// A LiveClock that moves only when a test says so: advance(ms) runs every timer that falls due on
// the way, in time order, so a test states "250 ms later" instead of sleeping.
import type { LiveClock } from '../../lib/live/live-clock.ts'

interface Timer { every: number, due: number, fn: () => void, stopped: boolean }

export class ManualClock implements LiveClock {
  #now: number
  readonly #timers: Timer[] = []

  /** start: the clock's first reading, ms. */
  constructor (start = 0) {
    this.#now = start
  }

  now (): number {
    return this.#now
  }

  every (ms: number, fn: () => void): () => void {
    const timer: Timer = { every: ms, due: this.#now + ms, fn, stopped: false }
    this.#timers.push(timer)
    return () => { timer.stopped = true }
  }

  /** Moves time forward by ms, firing each due timer at its own time. */
  advance (ms: number): void {
    const end = this.#now + ms
    for (;;) {
      let next: Timer | undefined
      for (const timer of this.#timers) if (!timer.stopped && timer.due <= end && (next === undefined || timer.due < next.due)) next = timer
      if (next === undefined) break
      this.#now = next.due
      next.due += next.every
      next.fn()
    }
    this.#now = end
  }
}
