// Idempotency-Key (extension): a retry with the same key, for the same org and stream, within the
// window gets the first answer again and stores nothing twice. A retry that arrives while the
// first attempt is still running waits for it. Answers that say "try again" (429, 5xx) are not
// kept, so the retry really runs. Kept in this node's memory: behind a load balancer, route
// retries to the same node (or accept a second copy after a node change).
//
// once() is the whole protocol for a caller: claim the key, run the attempt or wait for the one
// running, keep its final answer (a success, or a client error in the one error shape of
// lib/http/reply.ts sendError), and run again when the attempt it waited for ended retryable.
import { SluiceError } from '../errors.ts'

export interface StoredAnswer {
  status: number
  /** A JSON value, or bytes sent as they are with `contentType` (a protocol's binary answer). */
  body: unknown
  contentType?: string
}

/** What once() settled on: this attempt's answer, or the first attempt's replayed. */
export interface IdempotentAnswer {
  answer: StoredAnswer
  replayed: boolean
}

interface Entry {
  answer: Promise<StoredAnswer | null>
  expiresAt: number
}

const keyPattern = /^[\x21-\x7e]{1,255}$/

export type IdempotencyClaim =
  | { kind: 'first', settle (answer: StoredAnswer | null): void }
  | { kind: 'replay', answer: Promise<StoredAnswer | null> }

export class IdempotencyCache {
  #entries = new Map<string, Entry>()
  #windowMs: number
  #maxEntries: number
  #now: () => number

  /** windowMs: how long an answer is replayed (10 min); maxEntries bounds memory. */
  constructor (windowMs = 600_000, maxEntries = 100_000, now: () => number = Date.now) {
    this.#windowMs = windowMs
    this.#maxEntries = maxEntries
    this.#now = now
  }

  static validateKey (key: string): void {
    if (!keyPattern.test(key)) {
      throw new SluiceError('bad_request', 'Idempotency-Key must be 1-255 printable ASCII characters')
    }
  }

  /**
   * Runs `attempt` unless an answer for (scope, key) is kept or on its way: then that answer, with
   * replayed true. An attempt that throws a client error (4xx other than 429) keeps that error's
   * answer, as sendError would word it for request `requestId`; one that throws a retryable error
   * (429, 5xx, anything else) keeps nothing, and a retry waiting for it runs its own attempt.
   * attempt's error is rethrown either way.
   */
  async once (scope: string, key: string, requestId: string, attempt: () => Promise<StoredAnswer>): Promise<IdempotentAnswer> {
    for (;;) {
      const claim = this.claim(scope, key)
      if (claim.kind === 'replay') {
        const answer = await claim.answer
        if (answer === null) continue // the first attempt ended retryable: run this one
        return { answer, replayed: true }
      }
      let stored: StoredAnswer | null = null
      try {
        stored = await attempt()
        return { answer: stored, replayed: false }
      } catch (err) {
        stored = finalErrorAnswer(err, requestId)
        throw err
      } finally {
        claim.settle(stored)
      }
    }
  }

  claim (scope: string, key: string): IdempotencyClaim {
    const now = this.#now()
    const id = scope + '\n' + key
    const existing = this.#entries.get(id)
    if (existing && existing.expiresAt > now) return { kind: 'replay', answer: existing.answer }
    this.#evict(now)
    let settle!: (answer: StoredAnswer | null) => void
    const answer = new Promise<StoredAnswer | null>((resolve) => { settle = resolve })
    const entry: Entry = { answer, expiresAt: now + this.#windowMs }
    this.#entries.set(id, entry)
    return {
      kind: 'first',
      settle: (result) => {
        // A retryable outcome is forgotten, so the client's retry runs for real.
        if (result === null && this.#entries.get(id) === entry) this.#entries.delete(id)
        settle(result)
      },
    }
  }

  #evict (now: number): void {
    // Insertion order is expiry order (one window for all), so the oldest are at the front.
    for (const [id, entry] of this.#entries) {
      if (entry.expiresAt > now && this.#entries.size < this.#maxEntries) break
      this.#entries.delete(id)
    }
  }
}

/** A client error is a final answer, kept for replay; a retryable one (429, 5xx) is not. */
function finalErrorAnswer (err: unknown, requestId: string): StoredAnswer | null {
  if (!(err instanceof SluiceError) || err.status >= 500 || err.status === 429) return null
  return { status: err.status, body: { error: err.code, message: err.message, ...err.details, request_id: requestId } }
}
