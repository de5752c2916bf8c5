// One batch's way into ClickHouse (lib/storage/batch-writer.ts, contract "Bounded wait",
// "ClickHouse down", "Unknown outcome", "Cluster mode"): insert attempts with a deadline each,
// retries with backoff while the oldest write has time, the outcome check after an attempt that
// ended without an answer, and the answer of every write of the batch by the oldest one's
// answerBy. The queue and its timing live in batch-writer.ts; this file never looks at it.
import { Readable } from 'node:stream'
import { randomUUID } from 'node:crypto'
import { ClickHouseError } from './clickhouse.ts'
import type { ClickHouse } from './clickhouse.ts'
import { SluiceError } from '../errors.ts'
import type { Logger } from '../logger.ts'
import type { InsertTarget, ShardSet } from './shard-set.ts'
import { classifyInsertError, isAmbiguousFailure } from './insert-errors.ts'
import type { FailureKind } from './insert-errors.ts'
import { presenceOf } from './outcome-check.ts'
import type { OutcomeCheck, Presence } from './outcome-check.ts'
import { settle, sumRows } from './pending-write.ts'
import type { PendingWrite, SetTimer } from './pending-write.ts'

export interface InsertStats {
  /** Rows and bytes of the attempted insert. */
  rows: number
  bytes: number
  /** Milliseconds from sending the insert to its answer. */
  durationMs: number
  ok: boolean
  /** How many write() calls the insert carries. */
  writes: number
  /** 1 for the first attempt of a batch, 2 for its first retry... */
  attempt: number
  /** True when the attempt ended without an answer after its request went out (timeout, reset). */
  ambiguous: boolean
}

export interface InsertRetriesOptions {
  clickhouse: ClickHouse
  /** INSERT INTO <table> (<columns>) FORMAT <format>. */
  statement: string
  table: string
  log: Logger
  retryTimeoutMs: number
  attemptTimeoutMs: number
  /** ms kept free after an attempt's abort for the outcome check, within the write's answerBy. */
  checkReserveMs: number
  /** ms an attempt needs at least; with less left, it is not started. */
  minAttemptMs: number
  retryAfterS: number
  now: () => number
  setTimer: SetTimer
  check: OutcomeCheck
  shards: ShardSet | undefined
  insertQuorum: number
  /** Prefix of every attempt's query_id (the outcome check kills and looks for it by id). */
  queryIdPrefix: string
  /** After every attempt, for metrics and the stall gate. Must not throw. */
  onAttempt: (stats: InsertStats) => void
}

/** What one attempt did: stored, failed storing nothing, or failed with an unknown outcome. */
type AttemptResult = { ok: true } | { ok: false, kind: FailureKind, err: unknown, ambiguous: boolean }

/** ClickHouse's own max_insert_block_size default; never ask for less. */
const serverInsertBlockRows = 1_048_576
/** Backoff: the first retry after ~100 ms, doubling, at most ~2 s between attempts. */
const backoffBaseMs = 100
const backoffMaxMs = 2_000

export class InsertRetries {
  readonly #o: InsertRetriesOptions

  constructor (options: InsertRetriesOptions) {
    this.#o = options
  }

  unavailable (cause?: unknown): SluiceError {
    return new SluiceError('storage_unavailable', undefined, { retryAfter: this.#o.retryAfterS, cause })
  }

  outcomeUnknown (cause?: unknown): SluiceError {
    return new SluiceError('storage_outcome_unknown', undefined, { retryAfter: this.#o.retryAfterS, cause })
  }

  #sleep (ms: number): Promise<void> {
    return new Promise((resolve) => { this.#o.setTimer(resolve, Math.max(0, ms)) })
  }

  /**
   * Inserts `writes` until they are stored, known not stored past their retries, or of unknown
   * outcome; settles every one of them by the oldest one's answerBy.
   */
  async store (writes: readonly PendingWrite[]): Promise<void> {
    const o = this.#o
    // The earliest deadlines of the batch's writes set the batch's (heldSince may put a later
    // write's answerBy before an earlier one's).
    let answerBy = Infinity
    let calledAt = Infinity
    for (const w of writes) {
      if (w.answerBy < answerBy) answerBy = w.answerBy
      if (w.calledAt < calledAt) calledAt = w.calledAt
    }
    const oldest = { answerBy }
    const retryUntil = calledAt + o.retryTimeoutMs
    let pending = writes
    // Cluster mode: the shard this batch goes to; it changes only after a failure that stored nothing.
    let target = o.shards?.pick()
    // Cluster mode: an attempt ended without an answer, so the rows may be stored on target's shard.
    let maybeStored = false
    const giveUp = (cause?: unknown): SluiceError => maybeStored ? this.outcomeUnknown(cause) : this.unavailable(cause)
    for (let attempt = 1; ; attempt++) {
      const now = o.now()
      const abortAt = Math.min(now + o.attemptTimeoutMs, oldest.answerBy - o.checkReserveMs)
      if (abortAt - now < o.minAttemptMs) {
        // Only a split batch's later writes get here: their time went to their batch mates.
        for (const w of pending) settle(w, giveUp())
        return
      }
      const queryId = `${o.queryIdPrefix}${randomUUID()}`
      const result = await this.#attempt(pending, attempt, abortAt, queryId, target)
      if (result.ok) {
        if (target !== undefined) o.shards?.succeeded(target)
        for (const w of pending) settle(w)
        return
      }
      const fields = { table: o.table, writes: pending.length, rows: sumRows(pending), attempts: attempt, err: result.err }
      if (result.kind === 'malformed') {
        if (pending.length === 1) {
          o.log.error('ClickHouse could not parse the rows of a write: serializer bug, rows dropped', fields)
          settle(pending[0], new SluiceError('internal_error', undefined, { cause: result.err }))
          return
        }
        // One write's bytes are bad; store the others, each alone (each is one block: all or nothing).
        o.log.error('ClickHouse could not parse a batch; inserting its writes one by one', fields)
        for (const w of pending) await this.store([w])
        return
      }
      if (target === undefined && result.err instanceof ClickHouseError && result.err.chCode !== 0 && !result.ambiguous) {
        // An error answer after the rows were stored: ClickHouse writes the table's part before
        // its materialized views, so a rollup's failed insert (its disk full, its directory not
        // writable) fails the statement with the events stored (explore27c F1: a 503, then the
        // client's retry stored them twice). So the rows are counted before the error is believed.
        const absent = await this.#storedDespite(pending, result.err, fields)
        if (absent.length === 0) return
        pending = absent
      }
      if (result.kind === 'refused') {
        o.log.error('ClickHouse refused the insert; not retried', fields)
        for (const w of pending) settle(w, giveUp(result.err))
        return
      }
      if (o.shards !== undefined && target !== undefined) {
        // Cluster mode: the same bytes to the same shard after an unknown outcome (its replicated
        // table stores an identical block once), any healthy shard after a failure that stored nothing.
        o.shards.failed(target)
        if (result.ambiguous) maybeStored = true
        target = maybeStored ? o.shards.sameShard(target) : o.shards.pick()
      } else if (result.ambiguous) {
        const { absent, stored, unknown } = this.#settleByPresence(pending, await o.check.checkStored(pending, queryId, oldest.answerBy), result.err)
        o.log[unknown > 0 ? 'error' : 'warn']('ClickHouse insert ended without an answer; checked what it stored', {
          ...fields, stored, absent: absent.length, unknown,
        })
        if (absent.length === 0) return
        pending = absent
      }
      const ceiling = Math.min(backoffMaxMs, backoffBaseMs * 2 ** (attempt - 1))
      const delayMs = ceiling / 2 + Math.random() * ceiling / 2 // "equal jitter": spread, never zero
      const nextStart = o.now() + delayMs
      const nextAbortAt = Math.min(nextStart + o.attemptTimeoutMs, oldest.answerBy - o.checkReserveMs)
      if (nextStart >= retryUntil || nextAbortAt - nextStart < o.minAttemptMs) {
        o.log.error('ClickHouse insert failed past its retries', { ...fields, writes: pending.length, rows: sumRows(pending), maybeStored })
        for (const w of pending) settle(w, giveUp(result.err))
        return
      }
      o.log.warn('ClickHouse insert failed; retrying', { table: o.table, rows: sumRows(pending), attempt, delayMs: Math.round(delayMs), err: result.err })
      await this.#sleep(delayMs)
    }
  }

  /**
   * After an error answer: the writes' rows counted by their identities, as the outcome check
   * counts them; a write without one (no seq range to count by) is taken as absent, as the error
   * says, and a count that fails leaves the others unknown. Settles what is stored or unknown
   * (settleByPresence) and returns the rest, absent, for the error's own course.
   */
  async #storedDespite (pending: readonly PendingWrite[], err: unknown, fields: Record<string, unknown>): Promise<PendingWrite[]> {
    const o = this.#o
    const identified = pending.filter((w) => w.identity !== undefined)
    if (identified.length === 0) return [...pending]
    let counts: number[] | null = null
    try {
      counts = await o.check.countRows(identified.map((w) => w.identity!))
    } catch (countErr) {
      o.log.error('ClickHouse insert failed and its rows could not be counted; outcome unknown', { ...fields, countErr })
    }
    let k = 0
    const presence = pending.map((w): Presence => w.identity === undefined ? 'absent' : counts === null ? 'unknown' : presenceOf(counts[k++], w.rows))
    const { absent, stored, unknown } = this.#settleByPresence(pending, presence, err)
    // A failed count was logged above; a partial one is logged with the stored ones.
    if (stored > 0 || (counts !== null && unknown > 0)) {
      o.log.error('ClickHouse answered an insert with an error after storing its rows (a materialized view failed?): answered as stored; the rollups may lack them', {
        ...fields, stored, unknown,
      })
    }
    return absent
  }

  /** Settles each write by its presence: stored resolves, unknown rejects storage_outcome_unknown; returns the absent ones. */
  #settleByPresence (pending: readonly PendingWrite[], presence: readonly Presence[], err: unknown): { absent: PendingWrite[], stored: number, unknown: number } {
    const absent: PendingWrite[] = []
    let stored = 0
    let unknown = 0
    for (let i = 0; i < pending.length; i++) {
      if (presence[i] === 'stored') { stored++; settle(pending[i]) } else if (presence[i] === 'absent') absent.push(pending[i])
      else { unknown++; settle(pending[i], this.outcomeUnknown(err)) }
    }
    return { absent, stored, unknown }
  }

  /** One insert of `writes` named `queryId`, aborted at `abortAt` (now() time). */
  async #attempt (writes: readonly PendingWrite[], attempt: number, abortAt: number, queryId: string, target: InsertTarget | undefined): Promise<AttemptResult> {
    const o = this.#o
    const chunks: Buffer[] = []
    let bytes = 0
    for (const w of writes) {
      for (const chunk of w.chunks) chunks.push(chunk)
      bytes += w.bytes
    }
    const rows = sumRows(writes)
    // One block, hence one part per partition, however many rows the batch holds. The rollup views
    // run on the other cores instead of one after another in the inserting thread: with one insert
    // in flight, the insert's time is the writer's ceiling (bench/README.md, finding 8).
    const settings: Record<string, string> = {
      max_insert_block_size: String(Math.max(rows, serverInsertBlockRows)),
      parallel_view_processing: '1',
    }
    if (target !== undefined) {
      // Cluster mode: identical blocks are stored once (the default, stated: retries rely on it).
      settings.insert_deduplicate = '1'
      if (o.insertQuorum > 0) {
        settings.insert_quorum = String(o.insertQuorum)
        settings.insert_quorum_timeout = String(Math.max(1, Math.round(abortAt - o.now())))
      }
    }
    const startedAt = o.now()
    const controller = new AbortController()
    const cancelAbort = o.setTimer(() => {
      controller.abort(new ClickHouseError(`insert attempt timed out after ${Math.round(o.now() - startedAt)} ms`, 0))
    }, Math.max(0, abortAt - startedAt))
    let failure: unknown
    try {
      // Streamed chunk by chunk: no copy of the batch into one contiguous Buffer.
      await (target?.clickhouse ?? o.clickhouse).insertRaw(o.statement, Readable.from(chunks), controller.signal, settings, queryId)
    } catch (err) {
      failure = err ?? new Error('insert failed')
    } finally {
      cancelAbort()
    }
    const ok = failure === undefined
    // An abort's error says "aborted"; what matters is that the request may have gone out.
    const ambiguous = !ok && (controller.signal.aborted || isAmbiguousFailure(failure))
    o.onAttempt({ rows, bytes, durationMs: o.now() - startedAt, ok, writes: writes.length, attempt, ambiguous })
    if (ok) return { ok: true }
    if (controller.signal.aborted) return { ok: false, kind: 'transient', err: controller.signal.reason, ambiguous: true }
    return { ok: false, kind: classifyInsertError(failure), err: failure, ambiguous }
  }
}
