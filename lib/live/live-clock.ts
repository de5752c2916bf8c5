// The time the live tail runs on: what "now" is (ms) and a repeating timer. The tail hub and its
// allowances take one, so tests move time by hand (test/helpers/manual-clock.ts) instead of waiting
// and never assert wall time.

export interface LiveClock {
  /** Milliseconds since the epoch. */
  now (): number
  /** Calls `fn` every `ms` milliseconds until the returned function is called; never holds the process open. */
  every (ms: number, fn: () => void): () => void
}

/** Wall time and Node's timers (unref'd). */
export const systemClock: LiveClock = {
  now: () => Date.now(),
  every (ms, fn) {
    const timer = setInterval(fn, ms)
    timer.unref()
    return () => clearInterval(timer)
  },
}
