// Idempotency-Key (extension, docs/api.md section 6.7): a retry with the same key, for the same
// org, stream and token, within the window gets the first answer again and stores nothing twice.
// A retry that arrives while the first attempt is still running on this node waits for it.
// Answers that say "try again" (429, 5xx) are not kept, so the retry really runs.
//
// Where keys live: this node's memory, and, with a shared store (lib/storage/idempotency-store.ts,
// ClickHouse: every node in cluster mode), every node's. A key missing from memory is looked up
// in the store before the attempt runs; a final answer is recorded there after it is sent
// (queued, not awaited). So a retry through another node, or after a restart, replays the
// answer once the record is visible there: within the store's flush spacing plus, in cluster
// mode, the replication delay. Two attempts with one key running at once on two nodes both run
// (each node claims the key in its own memory only): see section 6.7.
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

/** Answers shared beyond this node's memory, as opaque text (lib/storage/idempotency-store.ts). */
export interface SharedKeyStore {
  /** The answer recorded for (scope, key) and not expired at `now`, or null (also when the store fails). */
  find (scope: string, key: string, now: number): Promise<{ answer: string, expiresAt: number } | null>
  /** Records an answer; returns at once (the store writes it soon after). */
  record (scope: string, key: string, answer: string, createdAt: number, expiresAt: number): void
}

interface Entry {
  answer: Promise<StoredAnswer | null>
  expiresAt: number
}

const keyPattern = /^[\x21-\x7e]{1,255}$/

export type IdempotencyClaim =
  | { kind: 'first', claimedAt: number, expiresAt: number, expireAt (ms: number): void, settle (answer: StoredAnswer | null): void }
  | { kind: 'replay', answer: Promise<StoredAnswer | null> }

export class IdempotencyCache {
  #entries = new Map<string, Entry>()
  #windowMs: number
  #maxEntries: number
  #now: () => number
  #shared: SharedKeyStore | null

  /**
   * windowMs: how long an answer is replayed (10 min); maxEntries bounds memory; shared: the
   * store every node reads (none: this node's memory only).
   */
  constructor (windowMs = 600_000, maxEntries = 100_000, now: () => number = Date.now, shared: SharedKeyStore | null = null) {
    this.#windowMs = windowMs
    this.#maxEntries = maxEntries
    this.#now = now
    this.#shared = shared
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
      let ran = false
      try {
        // Without a shared store the attempt starts in this same tick, as it always did.
        const shared = this.#shared === null ? null : await this.#findShared(this.#shared, scope, key)
        if (shared !== null) {
          stored = shared.answer
          claim.expireAt(shared.expiresAt) // replayed here until the first node's expiry, no longer
          return { answer: stored, replayed: true }
        }
        ran = true
        stored = await attempt()
        return { answer: stored, replayed: false }
      } catch (err) {
        if (ran) stored = finalErrorAnswer(err, requestId)
        throw err
      } finally {
        claim.settle(stored)
        if (ran && stored !== null) this.#shared?.record(scope, key, encodeAnswer(stored), claim.claimedAt, claim.expiresAt)
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
      claimedAt: now,
      expiresAt: entry.expiresAt,
      expireAt: (ms) => { entry.expiresAt = Math.min(entry.expiresAt, ms) },
      settle: (result) => {
        // A retryable outcome is forgotten, so the client's retry runs for real.
        if (result === null && this.#entries.get(id) === entry) this.#entries.delete(id)
        settle(result)
      },
    }
  }

  /** The answer another node (or this one before a restart) recorded, or null. */
  async #findShared (shared: SharedKeyStore, scope: string, key: string): Promise<{ answer: StoredAnswer, expiresAt: number } | null> {
    const found = await shared.find(scope, key, this.#now())
    return found === null ? null : { answer: decodeAnswer(found.answer), expiresAt: found.expiresAt }
  }

  #evict (now: number): void {
    // Insertion order is expiry order (one window for all; an answer found in the shared store
    // only expires sooner), so the oldest are at the front.
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

/** An answer as text for the shared store: JSON, with a binary body (a protocol's answer) in base64. */
export function encodeAnswer (answer: StoredAnswer): string {
  const { status, body, contentType } = answer
  if (body instanceof Uint8Array) return JSON.stringify({ status, contentType, base64: Buffer.from(body).toString('base64') })
  return JSON.stringify({ status, body, ...(contentType === undefined ? {} : { contentType }) })
}

export function decodeAnswer (text: string): StoredAnswer {
  const parsed = JSON.parse(text) as { status: number, body?: unknown, contentType?: string, base64?: string }
  const body = parsed.base64 === undefined ? parsed.body ?? null : new Uint8Array(Buffer.from(parsed.base64, 'base64'))
  return { status: parsed.status, body, ...(parsed.contentType === undefined ? {} : { contentType: parsed.contentType }) }
}
