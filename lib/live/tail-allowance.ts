// How many tail events may be serialized and sent, per second: `tail.eventsPerSecond` (README,
// configuration), counted on an injected clock (live-clock.ts).
//
// Contract:
// - FilterAllowance, one per tailed stream: per filter and clock second (windows [k*1000,
//   (k+1)*1000) ms), the events the workers may serialize. A request is charged at its start what
//   requests matched of late (a moving average of matches per request) and capped at what is left,
//   so requests in flight at once do not each see the whole allowance; once it commits, what it
//   serialized replaces that charge if it is still the same second, and only what went beyond the
//   charge counts if a new second began meanwhile (the old second's charge stays there). Charging
//   only at commit let every request in flight see the whole allowance: at 256 concurrent requests
//   the workers serialized 25,000-93,000 events a second for 12,000 sendable (bench/README.md,
//   "Real-time views"; serializing costs them 2 µs a line). A selective filter's average is small,
//   so its matches are not cut short by the requests in flight.
// - TokenBucket, one per client: holds at most eventsPerSecond tokens, starts full, refills
//   continuously at eventsPerSecond; each event sent takes one. What finds no token is the
//   caller's to count as dropped.
import type { LiveClock } from './live-clock.ts'

/** Length of one allowance window, ms. */
const windowMs = 1000

/** Weight of the newest request in the moving average of matches per request. */
const averageWeight = 0.25

/** What a request was charged at its start, per filter (in its filters' order), and in which window. */
export interface AllowanceCharge {
  /** What the workers may serialize for the request, per filter. */
  caps: number[]
  charged: number[]
  window: number
}

/** What the workers did for one filter of a committed request. */
export interface FilterOutcome {
  /** Events serialized (frames made). */
  serialized: number
  /** Events matched but not serialized: past the cap. */
  dropped: number
}

export class FilterAllowance {
  readonly #perSecond: number
  readonly #clock: LiveClock
  /** Per filter: events the workers may still serialize in the current window. */
  readonly #left = new Map<string, number>()
  /** Per filter: matching events per request, a moving average (what a request is charged at its start). */
  readonly #matchesPerRequest = new Map<string, number>()
  #window = Number.NaN

  /** perSecond: events per filter and second the workers may serialize. */
  constructor (perSecond: number, clock: LiveClock) {
    this.#perSecond = perSecond
    this.#clock = clock
  }

  /** Caps for a request starting now, which is charged for them at once. */
  start (filters: readonly string[]): AllowanceCharge {
    this.#roll()
    const caps = filters.map((q) => this.left(q))
    const charged = filters.map((q, i) => Math.min(caps[i], Math.ceil(this.#matchesPerRequest.get(q) ?? 0)))
    filters.forEach((q, i) => { this.#left.set(q, caps[i] - charged[i]) })
    return { caps, charged, window: this.#window }
  }

  /**
   * Settles a committed request: `outcomes[i]` is filter i's. `charge` is what start() returned
   * for it, or undefined when it was charged elsewhere (the stream's tail was closed and opened
   * again meanwhile): then everything it serialized counts now.
   */
  settle (filters: readonly string[], charge: AllowanceCharge | undefined, outcomes: readonly FilterOutcome[]): void {
    this.#roll()
    filters.forEach((q, i) => {
      const { serialized, dropped } = outcomes[i]
      const matched = serialized + dropped
      const average = this.#matchesPerRequest.get(q)
      this.#matchesPerRequest.set(q, average === undefined ? matched : average + (matched - average) * averageWeight)
      const charged = charge === undefined ? 0 : charge.charged[i]
      const delta = charge !== undefined && charge.window === this.#window ? serialized - charged : Math.max(0, serialized - charged)
      this.#left.set(q, Math.max(0, this.left(q) - delta))
    })
  }

  /** Events filter `q` may still serialize in the current window. */
  left (q: string): number {
    this.#roll()
    return this.#left.get(q) ?? this.#perSecond
  }

  /** A new window starts with the whole allowance for every filter. */
  #roll (): void {
    const window = Math.floor(this.#clock.now() / windowMs)
    if (window === this.#window) return
    this.#window = window
    this.#left.clear()
  }
}

export class TokenBucket {
  readonly #perSecond: number
  readonly #clock: LiveClock
  #tokens: number
  #refilledAt: number

  /** perSecond: the refill rate (tokens a second) and the most it holds; it starts full. */
  constructor (perSecond: number, clock: LiveClock) {
    this.#perSecond = perSecond
    this.#clock = clock
    this.#tokens = perSecond
    this.#refilledAt = clock.now()
  }

  /** Tokens there now (fractional while refilling). */
  available (): number {
    const now = this.#clock.now()
    this.#tokens = Math.min(this.#perSecond, this.#tokens + ((now - this.#refilledAt) / 1000) * this.#perSecond)
    this.#refilledAt = now
    return this.#tokens
  }

  /** Takes `count` tokens if all are there; false (and nothing taken) if not. */
  take (count: number): boolean {
    if (this.available() < count) return false
    this.#tokens -= count
    return true
  }
}
