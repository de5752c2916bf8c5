// Admission control for ingest, decided before the body is read (SPEC.md section 6): the org's
// request rate, the org's concurrent requests, and the server's bytes accepted but not yet
// committed. Refusals are 429 with Retry-After and the reason's code; every ingest response after
// authentication carries the X-RateLimit-* headers.
//
// An admitted request then waits for one of `maxReadingRequests` reading slots before its body is
// read (ticket.startReading), and hands the slot back once its rows are with the writer, so a
// request waiting for its commit holds none. This bounds the memory of bodies in progress (split
// lines, parse tasks) when thousands of clients upload at once: a waiting request's socket stays
// paused, its body in the kernel's buffers. Slots turn over in milliseconds; a request that waits
// `maxReadingWaitMs` for one gets 429 server_busy (VictoriaLogs' -maxConcurrentInserts and
// -insert.maxQueueDuration work the same way).
import { SluiceError } from '../errors.ts'
import type { Config, OrgLimits } from '../config.ts'
import { RateLimiter } from '../limits/rate-limiter.ts'
import { ConcurrencyLimiter } from '../limits/concurrency-limiter.ts'

export type RejectReason = 'rate_limited' | 'too_many_concurrent_requests' | 'server_busy'

export interface AdmissionTicket {
  headers: Record<string, string>
  /** Counts decoded bytes of this request as accepted-not-committed. */
  addBytes (n: number): void
  /** Resolves once the request may read its body; throws 429 server_busy after maxReadingWaitMs. */
  startReading (): Promise<void>
  /** The body is read: hands the request's bytes over to the writer's own accounting, and its slot back. */
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
  #reading = 0
  /** Requests waiting for a reading slot, first come first served. */
  readonly #waiting = new Set<() => void>()
  #options: AdmissionOptions

  constructor (options: AdmissionOptions) {
    this.#options = options
    this.#limits = options.limits
    this.#rate = new RateLimiter(options.now)
  }

  /** Requests reading and parsing their bodies. */
  get readingRequests (): number {
    return this.#reading
  }

  /** Admitted requests waiting for a reading slot. */
  get waitingRequests (): number {
    return this.#waiting.size
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
    // reading: 'no' before startReading, 'waiting' for a slot, 'yes' holding one, 'done' after.
    // A ticket is released only after startReading has settled, never while it waits.
    let reading: 'no' | 'waiting' | 'yes' | 'done' = 'no'
    let released = false
    this.#bodyBytes += declaredBytes
    const doneReading = (): void => {
      this.#bodyBytes -= counted
      counted = 0
      if (reading === 'yes') this.#freeSlot()
      reading = 'done'
    }
    return {
      headers,
      startReading: async () => {
        if (reading !== 'no') return
        if (this.#reading < this.#limits.maxReadingRequests && this.#waiting.size === 0) {
          this.#reading++
          reading = 'yes'
          return
        }
        reading = 'waiting'
        const granted = await new Promise<boolean>((resolve) => {
          const timer = setTimeout(() => { this.#waiting.delete(wakeUp); resolve(false) }, this.#limits.maxReadingWaitMs)
          const wakeUp = (): void => { clearTimeout(timer); resolve(true) }
          this.#waiting.add(wakeUp)
        })
        if (!granted) {
          reading = 'done'
          throw this.#reject('server_busy', 'The server is reading as many request bodies as it can take; retry shortly', busyRetryAfterS, headers)
        }
        reading = 'yes'
      },
      addBytes: (n) => {
        seen += n
        if (seen > counted) {
          this.#bodyBytes += seen - counted
          counted = seen
        }
      },
      releaseBytes: doneReading,
      release: () => {
        if (released) return
        released = true
        doneReading()
        this.#concurrency.release(orgId)
      },
    }
  }

  /** Passes a freed reading slot to the longest waiting request, if any. */
  #freeSlot (): void {
    const next = this.#waiting.values().next()
    if (next.done === true) {
      this.#reading--
      return
    }
    this.#waiting.delete(next.value)
    next.value() // the slot changes hands: #reading stays
  }

  #reject (code: RejectReason, message: string, retryAfter: number, headers: Record<string, string>): SluiceError {
    this.#options.onReject?.(code)
    return new SluiceError(code, message, { retryAfter, headers })
  }
}
