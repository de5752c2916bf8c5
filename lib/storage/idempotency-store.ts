// Idempotency keys in ClickHouse (table idempotency_keys, migration 009), so that a retry holds
// on any node and across restarts (docs/api.md section 6.7). lib/ingest/idempotency.ts keeps
// the answers in memory and asks this store on a miss; the answer is opaque text here.
//
// Contract:
// - find(scope, key, now) answers the earliest recorded answer whose expiry is after `now` (with
//   its fingerprint and expiry), or null. A lookup that fails or takes longer than lookupTimeoutMs answers null (logged): the
//   request then runs as if the key were new, as it would have before keys were shared.
// - record() queues a row and returns at once: the answer is not held back by it. Queued rows
//   go to ClickHouse in one INSERT per flush, at most one insert at a time and one every
//   minFlushSpacingMs, so a node makes at most 1000 / minFlushSpacingMs inserts per second
//   however many keyed requests it answers (each insert into a replicated table costs parts and
//   ZooKeeper operations). A row therefore lands within minFlushSpacingMs plus one insert after
//   the answer. A failed insert keeps its rows for the next flush while they have not expired,
//   at most maxPending rows (the oldest are dropped beyond, logged).
// - close() flushes what is queued (one attempt) and stops.
// - dropExpiredKeys() drops the hourly partitions whose keys have all expired: ClickHouse 18.16
//   has no table TTL (the retention janitor calls it). In cluster mode the table is replicated
//   to every host and DROP PARTITION is replicated, so the local host's parts are the whole list.
import type { ClickHouse } from './clickhouse.ts'
import type { Logger } from '../logger.ts'
import { joinSql, sql } from './sql.ts'

export interface IdempotencyStoreOptions {
  clickhouse: ClickHouse
  log: Logger
  /** ms between the starts of two inserts of queued rows (default 200). */
  minFlushSpacingMs?: number
  /** ms a lookup may take before the request runs as if the key were new (default 2000). */
  lookupTimeoutMs?: number
  /** Rows queued at most while ClickHouse refuses them (default 10000). */
  maxPending?: number
  /** Clock in ms; default Date.now. */
  now?: () => number
}

interface KeyRow { scope: string, key: string, answer: string, fingerprint: string, createdAt: number, expiresAt: number }

/** Partition width of idempotency_keys: one hour of expiry times, in ms (migration 009). */
const partitionMs = 3_600_000

export class IdempotencyStore {
  #ch: ClickHouse
  #log: Logger
  #spacingMs: number
  #lookupTimeoutMs: number
  #maxPending: number
  #now: () => number
  #pending: KeyRow[] = []
  #flushing: Promise<void> | null = null
  #lastFlushAt = -Infinity
  #closed = false

  constructor (options: IdempotencyStoreOptions) {
    this.#ch = options.clickhouse
    this.#log = options.log
    this.#spacingMs = options.minFlushSpacingMs ?? 200
    this.#lookupTimeoutMs = options.lookupTimeoutMs ?? 2000
    this.#maxPending = options.maxPending ?? 10_000
    this.#now = options.now ?? Date.now
  }

  /** Rows queued and not yet inserted. */
  get pending (): number { return this.#pending.length }

  async find (scope: string, key: string, now: number): Promise<{ answer: string, fingerprint: string, expiresAt: number } | null> {
    try {
      const rows = await this.#ch.query<{ answer: string, fingerprint: string, expires_at: number }>(sql`SELECT answer, fingerprint, expires_at FROM idempotency_keys
        WHERE scope = ${scope} AND key = ${key} AND expires_at > ${now}
        ORDER BY created_at LIMIT 1`, { signal: AbortSignal.timeout(this.#lookupTimeoutMs) })
      return rows.length === 0 ? null : { answer: rows[0].answer, fingerprint: rows[0].fingerprint, expiresAt: Number(rows[0].expires_at) }
    } catch (err) {
      this.#log.warn('idempotency key lookup failed; the request runs as a new one', { err })
      return null
    }
  }

  record (scope: string, key: string, answer: string, fingerprint: string, createdAt: number, expiresAt: number): void {
    if (this.#closed) return
    this.#pending.push({ scope, key, answer, fingerprint, createdAt, expiresAt })
    if (this.#pending.length > this.#maxPending) {
      const dropped = this.#pending.splice(0, this.#pending.length - this.#maxPending)
      this.#log.warn('idempotency keys dropped: ClickHouse did not take them in time', { dropped: dropped.length })
    }
    this.#flushing ??= this.#flushLoop()
  }

  /** Resolves once the rows queued so far have been tried (inserted, or kept for a retry). */
  async flushed (): Promise<void> {
    while (this.#flushing !== null) await this.#flushing
  }

  async close (): Promise<void> {
    this.#closed = true
    this.#spacingMs = 0
    await this.flushed()
  }

  async #flushLoop (): Promise<void> {
    try {
      while (this.#pending.length > 0) {
        const wait = this.#lastFlushAt + this.#spacingMs - this.#now()
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait))
        this.#lastFlushAt = this.#now()
        const rows = this.#pending
        this.#pending = []
        try {
          await this.#ch.command(sql`INSERT INTO idempotency_keys (scope, key, fingerprint, answer, created_at, expires_at) VALUES ${joinSql(
            rows.map((r) => sql`(${r.scope}, ${r.key}, ${r.fingerprint}, ${r.answer}, ${r.createdAt}, ${r.expiresAt})`), ', ')}`)
        } catch (err) {
          const now = this.#now()
          const kept = rows.filter((r) => r.expiresAt > now)
          this.#log.warn('idempotency keys not recorded; retried at the next flush', { err, rows: kept.length })
          if (this.#closed) break
          this.#pending = [...kept, ...this.#pending].slice(-this.#maxPending)
          // A failing ClickHouse is asked again no sooner than a second (1000 ms) later.
          this.#lastFlushAt = now + 1000 - this.#spacingMs
        }
      }
    } finally {
      this.#flushing = null
    }
  }
}

/** Drops the partitions of idempotency_keys whose keys have all expired; answers how many. */
export async function dropExpiredKeys (clickhouse: ClickHouse, now: number): Promise<number> {
  const parts = await clickhouse.query<{ partition: string }>(sql`SELECT DISTINCT partition FROM system.parts
    WHERE database = ${clickhouse.database} AND table = 'idempotency_keys' AND active`)
  let dropped = 0
  for (const { partition } of parts) {
    const hour = Number(partition)
    // Partition h holds expiries in [h, h + 1) hours: all past once (h + 1) hours <= now.
    if (!Number.isInteger(hour) || (hour + 1) * partitionMs > now) continue
    await clickhouse.command(`ALTER TABLE idempotency_keys DROP PARTITION ${hour}`)
    dropped++
  }
  return dropped
}
