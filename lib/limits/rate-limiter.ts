// Per-org request rate: a token bucket per org holding `requestsPerMinute` tokens, refilled
// continuously at requestsPerMinute / 60 per second. A bucket rather than a fixed window because
// the answer to "when may I retry?" is then a second or two, not "at the next minute", which keeps
// log shippers flowing at the limit instead of in bursts.
//
// Headers (IETF RateLimit draft style, delta seconds): X-RateLimit-Limit = requests per minute,
// X-RateLimit-Remaining = whole tokens left, X-RateLimit-Reset = seconds until the bucket is full.

export interface RateDecision {
  allowed: boolean
  limit: number
  remaining: number
  /** Seconds until the bucket is full again. */
  resetS: number
  /** Seconds until one request is allowed (only when refused); at least 1. */
  retryAfterS: number
}

interface Bucket { tokens: number, updatedAt: number, limit: number }

/** Buckets idle this long are full again and are forgotten, so memory follows active orgs only. */
const idleBucketMs = 120_000

export class RateLimiter {
  #buckets = new Map<string, Bucket>()
  #now: () => number
  #lastSweep = 0

  constructor (now: () => number = Date.now) {
    this.#now = now
  }

  take (key: string, perMinute: number): RateDecision {
    const now = this.#now()
    this.#sweep(now)
    let b = this.#buckets.get(key)
    if (!b || b.limit !== perMinute) {
      b = { tokens: perMinute, updatedAt: now, limit: perMinute }
      this.#buckets.set(key, b)
    }
    b.tokens = Math.min(perMinute, b.tokens + (now - b.updatedAt) * perMinute / 60_000)
    b.updatedAt = now
    const allowed = b.tokens >= 1
    if (allowed) b.tokens -= 1
    return decisionOf(b, allowed)
  }

  /**
   * Gives back the token of a request take() allowed that was then refused for another reason
   * (the org's concurrency, the server's bytes): it stored nothing. Returns the decision as it
   * stands after the refund, for the refusal's headers.
   */
  refund (key: string, decision: RateDecision): RateDecision {
    const b = this.#buckets.get(key)
    if (b === undefined || !decision.allowed) return decision
    b.tokens = Math.min(b.limit, b.tokens + 1)
    return decisionOf(b, true)
  }

  #sweep (now: number): void {
    if (now - this.#lastSweep < idleBucketMs) return
    this.#lastSweep = now
    for (const [key, b] of this.#buckets) if (now - b.updatedAt > idleBucketMs) this.#buckets.delete(key)
  }
}

/** A bucket's state as a decision (`allowed`: whether the request that took from it may run). */
function decisionOf (b: Bucket, allowed: boolean): RateDecision {
  const perMs = b.limit / 60_000
  return {
    allowed,
    limit: b.limit,
    remaining: Math.floor(b.tokens),
    resetS: Math.ceil((b.limit - b.tokens) / perMs / 1000),
    retryAfterS: allowed ? 0 : Math.max(1, Math.ceil((1 - b.tokens) / perMs / 1000)),
  }
}
