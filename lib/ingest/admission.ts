// Admission control for ingest, decided before the body is read (SPEC.md section 6): the org's
// request rate, the org's concurrent requests, and the server's bytes accepted but not yet
// committed. Refusals are 429 with Retry-After and the reason's code; every ingest response after
// authentication carries the X-RateLimit-* headers.
import { SluiceError } from '../errors.ts'
import type { Config, OrgLimits } from '../config.ts'
import { RateLimiter } from '../limits/rate-limiter.ts'
import { ConcurrencyLimiter } from '../limits/concurrency-limiter.ts'

export type RejectReason = 'rate_limited' | 'too_many_concurrent_requests' | 'server_busy'

export interface AdmissionTicket {
  headers: Record<string, string>
  /** Counts decoded bytes of this request as accepted-not-committed. */
  addBytes (n: number): void
  /** Hands the request's bytes over to the writer's own accounting. */
  releaseBytes (): void
  /** Frees the concurrency slot and any bytes still counted; call once, when answered. */
  release (): void
}

export interface AdmissionOptions {
  limits: Config['limits']
  /** Bytes the batch writer holds (waiting and in flight). */
  writerPendingBytes: () => number
  /** The writer refuses more for now. */
  writerNeedsDrain: () => boolean
  now?: () => number
  onReject?: (reason: RejectReason) => void
}

/** Seconds a client waits after too_many_concurrent_requests or server_busy: requests finish fast. */
const busyRetryAfterS = 1

export class Admission {
  #limits: Config['limits']
  #rate: RateLimiter
  #concurrency = new ConcurrencyLimiter()
  #bodyBytes = 0
  #options: AdmissionOptions

  constructor (options: AdmissionOptions) {
    this.#options = options
    this.#limits = options.limits
    this.#rate = new RateLimiter(options.now)
  }

  /** Bytes accepted and not yet committed, server-wide. */
  get uncommittedBytes (): number {
    return this.#bodyBytes + this.#options.writerPendingBytes()
  }

  limitsFor (orgName: string): OrgLimits {
    const o = this.#limits.orgs[orgName] ?? {}
    return {
      requestsPerMinute: o.requestsPerMinute ?? this.#limits.requestsPerMinute,
      concurrentRequests: o.concurrentRequests ?? this.#limits.concurrentRequests,
    }
  }

  /**
   * Takes the request in, or throws the 429. `declaredBytes` (Content-Length, 0 when unknown) is
   * reserved at once, so that a burst of large requests is refused before their bodies are read.
   */
  admit (orgId: string, orgName: string, declaredBytes = 0): AdmissionTicket {
    const limits = this.limitsFor(orgName)
    const rate = this.#rate.take(orgId, limits.requestsPerMinute)
    const headers = {
      'x-ratelimit-limit': String(rate.limit),
      'x-ratelimit-remaining': String(rate.remaining),
      'x-ratelimit-reset': String(rate.resetS),
    }
    if (!rate.allowed) {
      throw this.#reject('rate_limited', `More than ${limits.requestsPerMinute} ingest requests per minute for this org`, rate.retryAfterS, headers)
    }
    if (!this.#concurrency.tryAcquire(orgId, limits.concurrentRequests)) {
      throw this.#reject('too_many_concurrent_requests', `More than ${limits.concurrentRequests} ingest requests at once for this org`, busyRetryAfterS, headers)
    }
    if (this.uncommittedBytes + declaredBytes > this.#limits.maxUncommittedBytes || this.#options.writerNeedsDrain()) {
      this.#concurrency.release(orgId)
      throw this.#reject('server_busy', 'The server has too much data waiting to be stored; retry shortly', busyRetryAfterS, headers)
    }
    // counted: bytes this request holds in #bodyBytes, the larger of the reservation and the
    // decoded bytes seen so far.
    let counted = declaredBytes
    let seen = 0
    let released = false
    this.#bodyBytes += declaredBytes
    return {
      headers,
      addBytes: (n) => {
        seen += n
        if (seen > counted) {
          this.#bodyBytes += seen - counted
          counted = seen
        }
      },
      releaseBytes: () => { this.#bodyBytes -= counted; counted = 0 },
      release: () => {
        if (released) return
        released = true
        this.#bodyBytes -= counted
        counted = 0
        this.#concurrency.release(orgId)
      },
    }
  }

  #reject (code: RejectReason, message: string, retryAfter: number, headers: Record<string, string>): SluiceError {
    this.#options.onReject?.(code)
    return new SluiceError(code, message, { retryAfter, headers })
  }
}
