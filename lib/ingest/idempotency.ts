// Idempotency-Key (extension): a retry with the same key, for the same org and stream, within the
// window gets the first answer again and stores nothing twice. A retry that arrives while the
// first attempt is still running waits for it. Answers that say "try again" (429, 5xx) are not
// kept, so the retry really runs. Kept in this node's memory: behind a load balancer, route
// retries to the same node (or accept a second copy after a node change).
import { SluiceError } from '../errors.ts'

export interface StoredAnswer {
  status: number
  body: unknown
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
