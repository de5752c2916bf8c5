// Idempotency-Key (extension, docs/api.md section 6.7): a retry with the same key, for the same
// org, stream and token, within the window gets the first answer again and stores nothing twice.
// A retry that arrives while the first attempt is still running on this node waits for it.
// Answers that say "try again" (429, 5xx) are not kept, so the retry really runs, except that
// an attempt whose rows went to the writer is recorded as pending first (where its rows are,
// and its answer once stored): a retry that finds the key pending settles it by counting those
// rows (storage/idempotency-store.ts settle): stored, the answer is replayed; absent, it runs;
// unknown (ClickHouse does not answer), 503 storage_unavailable: this retry stored nothing.
// The same protocol, with the body's fingerprint as the key, recognises a shipper's byte-identical
// retry of a body whose every event carries its own timestamp (ingest-pipeline.ts, section 6.7).
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
import { SluiceError, storageRetryAfterS } from '../errors.ts'
import type { KeyRecord, PendingRows } from '../storage/idempotency-store.ts'
import type { Presence } from '../storage/outcome-check.ts'

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

/**
 * The request's own body, for telling a retry from another request under the same key: a
 * fingerprint ('' while the body was not read to its end) and a check of a retry's body against
 * the first attempt's fingerprint, which throws (a SluiceError) when they differ.
 */
export interface RequestPrint {
  fingerprint (): string
  check (firstFingerprint: string): Promise<void>
}

/** Answers shared beyond this node's memory, as opaque text (lib/storage/idempotency-store.ts). */
export interface SharedKeyStore {
  /**
   * The latest record for (scope, key) not expired at `now`, or null; tried again while the store
   * does not answer, for at most waitMs; throws when it never did.
   */
  find (scope: string, key: string, now: number, waitMs?: number): Promise<KeyRecord | null>
  /** Records an answer; returns at once (the store writes it soon after). */
  record (scope: string, key: string, answer: string, fingerprint: string, createdAt: number, expiresAt: number): void
  /** Records a pending attempt; resolves once a retry anywhere can find it. */
  recordPending (scope: string, key: string, fingerprint: string, pending: PendingRows, createdAt: number, expiresAt: number): Promise<void>
  /** Records that the attempt stored nothing. */
  recordVoid (scope: string, key: string, createdAt: number, expiresAt: number): void
  /** Whether a pending record's rows are stored; never throws. */
  settle (scope: string, key: string, record: KeyRecord): Promise<{ presence: Presence, record: KeyRecord }>
}

/** What an attempt does before its rows go to the writer: record where they will be (pending). */
export interface KeyedCommit {
  beforeWrite (rows: { orgId: string, stream: string, seqBase: number, rows: number, answer: StoredAnswer }): Promise<void>
  /**
   * True when this attempt runs because an earlier attempt's pending record was settled absent,
   * another process's after up to holdMs of waiting (docs/api.md section 6.7): that wait was the
   * earlier attempt's, and this one's storage phase starts when it starts.
   */
  readonly afterSettling: boolean
}

const noCommit: KeyedCommit = { beforeWrite: async () => {}, afterSettling: false }

/** A final answer and the fingerprint of the request that got it ('' when unknown: not compared). */
interface Kept {
  answer: StoredAnswer
  fingerprint: string
}

interface Entry {
  kept: Promise<Kept | null>
  expiresAt: number
}

const keyPattern = /^[\x21-\x7e]{1,255}$/

export type IdempotencyClaim =
  | { kind: 'first', claimedAt: number, expiresAt: number, expireAt (ms: number): void, settle (kept: Kept | null): void }
  | { kind: 'replay', kept: Promise<Kept | null> }

const noPrint: RequestPrint = { fingerprint: () => '', check: async () => {} }

export class IdempotencyCache {
  #entries = new Map<string, Entry>()
  #windowMs: number
  #maxEntries: number
  #now: () => number
  #shared: SharedKeyStore | null
  #lookupWaitMs: number

  /**
   * windowMs: how long an answer is replayed (10 min); maxEntries bounds memory; shared: the
   * store every node reads (none: this node's memory only); lookupWaitMs: how long a lookup in
   * it keeps trying while the store does not answer, before the request is refused (503).
   */
  constructor (windowMs = 600_000, maxEntries = 100_000, now: () => number = Date.now, shared: SharedKeyStore | null = null, lookupWaitMs = 0) {
    this.#windowMs = windowMs
    this.#maxEntries = maxEntries
    this.#now = now
    this.#shared = shared
    this.#lookupWaitMs = lookupWaitMs
  }

  static validateKey (key: string): void {
    if (!keyPattern.test(key)) {
      throw new SluiceError('bad_request', 'Idempotency-Key must be 1-255 printable ASCII characters')
    }
  }

  /**
   * Runs `attempt` unless an answer for (scope, key) is kept or on its way: then that answer, with
   * replayed true, once `print` has checked this request's body against the first one's (it
   * throws when they differ). An attempt that throws a client error (4xx other than 429) keeps
   * that error's answer, as sendError would word it for request `requestId`; one that throws a
   * retryable error (429, 5xx, anything else) keeps nothing, and a retry waiting for it runs its
   * own attempt. attempt's error is rethrown either way.
   */
  async once (scope: string, key: string, requestId: string, attempt: (commit: KeyedCommit) => Promise<StoredAnswer>,
    print: RequestPrint = noPrint): Promise<IdempotentAnswer> {
    for (;;) {
      const claim = this.claim(scope, key)
      if (claim.kind === 'replay') {
        const kept = await claim.kept
        if (kept === null) continue // the first attempt ended retryable: run this one
        await print.check(kept.fingerprint)
        return { answer: kept.answer, replayed: true }
      }
      // Without a shared store the attempt starts in this same tick, as it always did.
      const shared = this.#shared === null ? null : await this.#findShared(this.#shared, scope, key, claim)
      if (shared !== null && shared !== 'settled') {
        claim.expireAt(shared.expiresAt) // replayed here until the first node's expiry, no longer
        claim.settle(shared.kept)
        await print.check(shared.kept.fingerprint)
        return { answer: shared.kept.answer, replayed: true }
      }
      let kept: Kept | null = null
      let pendingRecorded = false
      const store = this.#shared
      const commit: KeyedCommit = store === null ? noCommit : {
        afterSettling: shared === 'settled',
        beforeWrite: async (rows) => {
          try {
            await store.recordPending(scope, key, print.fingerprint(), { ...rows, answer: encodeAnswer(rows.answer) }, claim.claimedAt, claim.expiresAt)
          } catch (err) {
            throw new SluiceError('storage_unavailable', 'The Idempotency-Key could not be recorded in storage; nothing was stored', { retryAfter: storageRetryAfterS, cause: err })
          }
          pendingRecorded = true
        },
      }
      try {
        const answer = await attempt(commit)
        kept = { answer, fingerprint: print.fingerprint() }
        return { answer, replayed: false }
      } catch (err) {
        const answer = finalErrorAnswer(err, requestId)
        kept = answer === null ? null : { answer, fingerprint: print.fingerprint() }
        // Known to have stored nothing: a retry need not count rows first.
        if (pendingRecorded && kept === null && isNothingStored(err)) store?.recordVoid(scope, key, claim.claimedAt, claim.expiresAt)
        throw err
      } finally {
        claim.settle(kept)
        if (kept !== null) this.#shared?.record(scope, key, encodeAnswer(kept.answer), kept.fingerprint, claim.claimedAt, claim.expiresAt)
      }
    }
  }

  claim (scope: string, key: string): IdempotencyClaim {
    const now = this.#now()
    const id = scope + '\n' + key
    const existing = this.#entries.get(id)
    if (existing && existing.expiresAt > now) return { kind: 'replay', kept: existing.kept }
    this.#evict(now)
    let settle!: (kept: Kept | null) => void
    const kept = new Promise<Kept | null>((resolve) => { settle = resolve })
    const entry: Entry = { kept, expiresAt: now + this.#windowMs }
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

  /**
   * The answer another node (or this one before a restart) recorded, or null: then the attempt
   * runs. A pending record is settled first (see the header): stored, its answer; absent,
   * 'settled' (the attempt runs, after the settling's wait). Throws 503 storage_unavailable
   * (releasing the claim) when the store cannot tell.
   */
  async #findShared (shared: SharedKeyStore, scope: string, key: string, claim: { settle (kept: Kept | null): void }): Promise<{ kept: Kept, expiresAt: number } | 'settled' | null> {
    const unavailable = (cause?: unknown): SluiceError => {
      claim.settle(null)
      return new SluiceError('storage_unavailable', 'Storage is unavailable: Sluice could not tell whether an earlier attempt of this request is stored; this request stored nothing', { retryAfter: storageRetryAfterS, cause })
    }
    let found: KeyRecord | null
    try {
      found = await shared.find(scope, key, this.#now(), this.#lookupWaitMs)
    } catch (err) {
      throw unavailable(err)
    }
    if (found === null || found.state === 'void') return null
    if (found.state === 'pending') {
      const settled = await shared.settle(scope, key, found)
      if (settled.presence === 'unknown') throw unavailable()
      if (settled.presence === 'absent') return 'settled'
      found = settled.record
      // Stored: from now on the key's answer is final everywhere.
      if (found.state === 'pending') shared.record(scope, key, found.answer, found.fingerprint, this.#now(), found.expiresAt)
    }
    try {
      return { kept: { answer: decodeAnswer(found.answer), fingerprint: found.fingerprint }, expiresAt: found.expiresAt }
    } catch {
      return null // a record this version cannot read: run as if the key were new
    }
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

/** True for the answers that promise nothing was stored: a retry under the key runs at once. */
function isNothingStored (err: unknown): boolean {
  return err instanceof SluiceError && err.code !== 'storage_outcome_unknown' && err.code !== 'internal_error'
}

/**
 * A client error is a final answer, kept for replay; a retryable one (429, 5xx) is not, nor a
 * 408: a body that stopped arriving (a client that gave up while its retry was held, explore26 F1)
 * stored nothing, and its retry sends it whole.
 */
export function finalErrorAnswer (err: unknown, requestId: string): StoredAnswer | null {
  if (!(err instanceof SluiceError) || err.status >= 500 || err.status === 429 || err.status === 408) return null
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
