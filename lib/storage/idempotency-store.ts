// Idempotency keys in ClickHouse (table idempotency_keys, migrations 009 and 012), so that a retry
// holds on any node and across restarts (docs/api.md section 6.7). lib/ingest/idempotency.ts keeps
// the answers in memory and asks this store on a miss; the answer is opaque text here.
//
// Contract:
// - find(scope, key, now, waitMs) answers the key's latest record (by recorded_at) whose expiry is
//   after `now`, or null. Each try gets lookupTimeoutMs; a try that fails (ClickHouse down, hung,
//   or refusing) is made again lookupRetryGapMs later for as long as waitMs allows (0: one try), as
//   the writer keeps trying an insert through an outage. It throws when no try was answered: the
//   caller cannot know whether an attempt under the key may be stored, so the request must not
//   run (503 storage_unavailable).
// - record() queues a final answer and returns at once: the answer is not held back by it. Queued
//   rows go to ClickHouse in one INSERT per flush, at most one insert at a time and one every
//   minFlushSpacingMs, so a node makes at most 1000 / minFlushSpacingMs inserts per second
//   however many keyed requests it answers (each insert into a replicated table costs parts and
//   ZooKeeper operations). A row therefore lands within minFlushSpacingMs plus one insert after
//   the answer. A failed insert keeps its final rows for the next flush while they have not
//   expired, at most maxPending rows (the oldest are dropped beyond, logged).
// - recordPending() queues a pending row (where the attempt's rows will be, and the answer they
//   get once stored) and resolves once it is in ClickHouse, or rejects: the attempt's rows must
//   not be written before a retry could find the record. Such a flush waits at most
//   pendingFlushSpacingMs since the previous one. recordVoid() queues a row saying the attempt
//   stored nothing (a retry then runs at once).
// - settle(record) tells, for a pending record, whether its rows are stored: 'stored' (all),
//   'absent' (none), 'unknown' (some, or ClickHouse did not answer). A record of another process
//   is settled only once that process's attempt is surely over (holdMs after it was recorded:
//   the writer's retryTimeoutMs + attemptTimeoutMs, plus a second); a final or void record that
//   lands meanwhile settles it at once. The rows are counted twice, settleGapMs apart, and must
//   agree: an insert still on its way (ClickHouse resuming from a stall) is seen by the second count.
//   Where they are counted: the events table on a single node; in cluster mode (options.shards)
//   the local table on every host, each shard's count being its replica holding the most (a
//   replica still fetching the part holds fewer). A host that does not answer is left out while
//   another replica of its shard answers (its parts reach that replica by replication; missed
//   only when the replica that took the insert went down before any other fetched it, the
//   window in which, without insert_quorum, an acknowledged insert can be lost too); a shard none
//   of whose hosts answers, or a host whose shard is not known yet, makes the count 'unknown'.
// - Repair (options.repairPartial): a pending attempt found partly stored (its body cut off when
//   its process was killed: 18.16 stores the rows before the cut) has its seq range deleted, on a
//   single node from the events table, in cluster mode from the local table of each shard that
//   holds some (one ALTER ... DELETE on the replica holding the most: a replicated mutation,
//   which every replica of the shard runs). It is 'absent' once no answering host counts any of
//   its rows, 'unknown' while the mutation runs (a retry finds it running and waits again, no second
//   delete). docs/api.md section 6.7.
// - close() flushes what is queued (one attempt) and stops.
// - dropExpiredKeys() drops the hourly partitions whose keys have all expired: ClickHouse 18.16
//   has no table TTL (the retention janitor calls it). In cluster mode the table is replicated
//   to every host and DROP PARTITION is replicated, so the local host's parts are the whole list.
import { randomUUID } from 'node:crypto'
import type { ClickHouse } from './clickhouse.ts'
import type { Logger } from '../logger.ts'
import { joinSql, quoteIdentifier, rawSql, sql } from './sql.ts'
import type { SqlFragment } from './sql.ts'
import { seqRangeSql } from './row-seq.ts'
import { presenceOf } from './outcome-check.ts'
import type { Presence } from './outcome-check.ts'
import { realTimer } from './pending-write.ts'
import type { SetTimer } from './pending-write.ts'

export interface IdempotencyStoreOptions {
  clickhouse: ClickHouse
  log: Logger
  /** ms between the starts of two inserts of queued final rows (default 200). */
  minFlushSpacingMs?: number
  /** ms between the starts of two inserts when a pending row waits in the queue (default 50). */
  pendingFlushSpacingMs?: number
  /** ms one try of a lookup may take (default 1000); find()'s waitMs says how long it keeps trying. */
  lookupTimeoutMs?: number
  /** ms between a failed try of a lookup and the next (default 500). */
  lookupRetryGapMs?: number
  /** ms an insert holding pending rows may take before their attempts are refused with 503 (default 1000). */
  pendingTimeoutMs?: number
  /** Rows queued at most while ClickHouse refuses them (default 10000). */
  maxPending?: number
  /**
   * ms after which another process's pending attempt is surely over: the writer's
   * retryTimeoutMs + attemptTimeoutMs + 1000 (default 16000, the default settings').
   */
  holdMs?: number
  /** ms between the two counts that settle a pending record (default 500). */
  settleGapMs?: number
  /** The events table the rows are counted in (default events; cluster mode: events_local on every host). */
  eventsTable?: string
  /**
   * Cluster mode: the ClickHouse hosts the rows may be on, with their shards (lib/storage/shard-set.ts);
   * rows are counted and deleted in eventsTable on each of them. Absent: this.clickhouse alone.
   */
  shards?: { readonly hosts: ReadonlyArray<{ readonly shard: string | undefined, readonly clickhouse: ClickHouse }> }
  /**
   * A pending attempt found partly stored (a body cut off when its node was killed: 18.16 stores
   * the rows before the cut) has its rows deleted (ALTER ... DELETE on the seq range, on each
   * shard holding some), and is then absent: its retry stores it whole (default false: then it
   * stays unknown).
   */
  repairPartial?: boolean
  /** Wall clock in ms (records are compared across nodes); default Date.now. */
  now?: () => number
  /** Timers on that clock; default setTimeout. */
  setTimer?: SetTimer
  /** Called when a lookup or a pending record failed (its request gets 503), for metrics. */
  onFailure?: () => void
}

export const keyStates = ['final', 'pending', 'void'] as const
export type KeyState = typeof keyStates[number]

/** A key's latest record. `answer` is the answer to replay ('final'), or the one a stored pending attempt gets. */
export interface KeyRecord {
  state: KeyState
  answer: string
  fingerprint: string
  expiresAt: number
  /** Pending: where the attempt's rows are (the seq range [seqBase, seqBase + 2^25)) and how many. */
  orgId: string
  stream: string
  seqBase: number
  rows: number
  /** The process that recorded it (a random id per start). */
  node: string
  recordedAt: number
}

/** Where a pending attempt's rows will be, and the answer they get once stored. */
export interface PendingRows { orgId: string, stream: string, seqBase: number, rows: number, answer: string }

interface KeyRow {
  scope: string, key: string, state: KeyState, answer: string, fingerprint: string, createdAt: number, expiresAt: number
  pending: PendingRows | null
  recordedAt: number
  /** A pending row's waiter: resolved once inserted, rejected when its insert failed. */
  done?: { resolve: () => void, reject: (err: unknown) => void }
}

/** A seq range's rows per shard and host (null: no answer), and in all (each shard counted on its answering replica holding the most). */
interface RowCount {
  byShard: Array<{ hosts: ClickHouse[], counts: Array<number | null> }>
  total: number
}

/** The most rows an answering host of a shard holds. */
function mostOf (counts: ReadonlyArray<number | null>): number {
  return Math.max(...counts.map((n) => n ?? 0))
}

/** ms one host may take to count a pending key's rows before the key is 'unknown' (503, retried). */
const countTimeoutMs = 5_000

/** Partition width of idempotency_keys: one hour of expiry times, in ms (migration 009). */
const partitionMs = 3_600_000

export class IdempotencyStore {
  #ch: ClickHouse
  #log: Logger
  #spacingMs: number
  #pendingSpacingMs: number
  #lookupTimeoutMs: number
  #lookupRetryGapMs: number
  #pendingTimeoutMs: number
  #maxPending: number
  #holdMs: number
  #settleGapMs: number
  #eventsTable: string
  #repairPartial: boolean
  #shards: IdempotencyStoreOptions['shards']
  #now: () => number
  #setTimer: SetTimer
  #onFailure: () => void
  /** This process's id in the records it writes. */
  readonly node = randomUUID()
  #pending: KeyRow[] = []
  #flushing: Promise<void> | null = null
  /** Ends the flush loop's wait early: a pending row came while it waited the final rows' spacing. */
  #wake: (() => void) | null = null
  #lastFlushAt = -Infinity
  #closed = false

  constructor (options: IdempotencyStoreOptions) {
    this.#ch = options.clickhouse
    this.#log = options.log
    this.#spacingMs = options.minFlushSpacingMs ?? 200
    this.#pendingSpacingMs = Math.min(options.pendingFlushSpacingMs ?? 50, this.#spacingMs)
    // Both bounded so that a keyed request's lookup, pending row and writer budget stay within
    // the 10 s clients wait (README "Guarantees").
    this.#lookupTimeoutMs = options.lookupTimeoutMs ?? 1000
    this.#lookupRetryGapMs = options.lookupRetryGapMs ?? 500
    this.#pendingTimeoutMs = options.pendingTimeoutMs ?? 1000
    this.#maxPending = options.maxPending ?? 10_000
    this.#holdMs = options.holdMs ?? 16_000
    this.#settleGapMs = options.settleGapMs ?? 500
    this.#eventsTable = options.eventsTable ?? 'events'
    this.#repairPartial = options.repairPartial ?? false
    this.#shards = options.shards
    this.#now = options.now ?? Date.now
    this.#setTimer = options.setTimer ?? realTimer
    this.#onFailure = options.onFailure ?? (() => {})
  }

  /** Rows queued and not yet inserted. */
  get pending (): number { return this.#pending.length }

  #sleep (ms: number): Promise<void> {
    return new Promise((resolve) => { this.#setTimer(resolve, Math.max(0, ms)) })
  }

  /**
   * The key's latest record at `now`, or null; tried again while ClickHouse does not answer, for
   * at most waitMs after the first try (see the contract).
   */
  async find (scope: string, key: string, now: number, waitMs = 0): Promise<KeyRecord | null> {
    const until = this.#now() + waitMs
    for (let tries = 1; ; tries++) {
      try {
        return await this.#findOnce(scope, key, now)
      } catch (err) {
        const gap = Math.min(this.#lookupRetryGapMs, until - this.#now())
        if (this.#closed || gap <= 0) {
          this.#log.warn('idempotency key lookup failed', { err, tries })
          this.#onFailure()
          throw err
        }
        await this.#sleep(gap)
      }
    }
  }

  async #findOnce (scope: string, key: string, now: number): Promise<KeyRecord | null> {
    const controller = new AbortController()
    const cancel = this.#setTimer(() => { controller.abort(new Error(`idempotency key lookup took over ${this.#lookupTimeoutMs} ms`)) }, this.#lookupTimeoutMs)
    try {
      const rows = await this.#ch.query<Record<string, string | number>>(sql`SELECT state, answer, fingerprint, expires_at, org_id, stream,
        seq_base, rows, node, recorded_at FROM idempotency_keys
        WHERE scope = ${scope} AND key = ${key} AND expires_at > ${now}
        ORDER BY recorded_at DESC, created_at LIMIT 1`, { signal: controller.signal })
      if (rows.length === 0) return null
      const r = rows[0]
      const state = (keyStates as readonly string[]).includes(String(r.state)) ? r.state as KeyState : 'final'
      return {
        state, answer: String(r.answer), fingerprint: String(r.fingerprint), expiresAt: Number(r.expires_at),
        orgId: String(r.org_id), stream: String(r.stream), seqBase: Number(r.seq_base), rows: Number(r.rows),
        node: String(r.node), recordedAt: Number(r.recorded_at),
      }
    } finally {
      cancel()
    }
  }

  record (scope: string, key: string, answer: string, fingerprint: string, createdAt: number, expiresAt: number): void {
    this.#queue({ scope, key, state: 'final', answer, fingerprint, createdAt, expiresAt, pending: null, recordedAt: this.#now() })
  }

  /** Records that an attempt under the key stored nothing (its retry runs at once). */
  recordVoid (scope: string, key: string, createdAt: number, expiresAt: number): void {
    this.#queue({ scope, key, state: 'void', answer: '', fingerprint: '', createdAt, expiresAt, pending: null, recordedAt: this.#now() })
  }

  /** Records a pending attempt; resolves once the row is in ClickHouse (rejects if it could not be written). */
  recordPending (scope: string, key: string, fingerprint: string, pending: PendingRows, createdAt: number, expiresAt: number): Promise<void> {
    if (this.#closed) return Promise.reject(new Error('the idempotency store is closed'))
    return new Promise((resolve, reject) => {
      this.#queue({ scope, key, state: 'pending', answer: pending.answer, fingerprint, createdAt, expiresAt, pending, recordedAt: this.#now(), done: { resolve, reject } })
    })
  }

  /**
   * Whether a pending record's rows are stored (see the contract). Never throws: a ClickHouse
   * that does not answer makes it 'unknown'.
   */
  async settle (scope: string, key: string, record: KeyRecord): Promise<{ presence: Presence, record: KeyRecord }> {
    try {
      // Another process's attempt may still be running (cluster mode): wait until it is surely
      // over, or until that process records how it ended.
      while (record.node !== this.node && this.#now() < record.recordedAt + this.#holdMs) {
        await this.#sleep(Math.min(250, record.recordedAt + this.#holdMs - this.#now()))
        const latest = await this.find(scope, key, this.#now())
        if (latest === null) return { presence: 'absent', record }
        if (latest.state !== 'pending') return { presence: latest.state === 'final' ? 'stored' : 'absent', record: latest }
        record = latest
      }
      const range = seqRangeSql(record)
      let previous = await this.#countRows(range)
      for (let round = 0; round < 5; round++) {
        await this.#sleep(this.#settleGapMs)
        const count = await this.#countRows(range)
        if (count.total === previous.total) {
          let presence = presenceOf(count.total, record.rows)
          if (presence === 'unknown' && this.#repairPartial) presence = await this.#deleteRows(range, record, count)
          this.#log.info('a pending idempotency key settled by counting its rows', {
            presence, orgId: record.orgId, stream: record.stream, seqBase: record.seqBase, rows: record.rows, stored: count.total, ownRecord: record.node === this.node,
          })
          return { presence, record }
        }
        previous = count
      }
      return { presence: 'unknown', record }
    } catch (err) {
      this.#log.warn('a pending idempotency key could not be settled', { err })
      return { presence: 'unknown', record }
    }
  }

  /**
   * Where the rows may be: per shard, its hosts (a single node: this.clickhouse alone). Throws
   * while a host's shard is unknown (it did not answer yet, and may hold rows).
   */
  #sites (): ClickHouse[][] {
    if (this.#shards === undefined) return [[this.#ch]]
    const byShard = new Map<string, ClickHouse[]>()
    for (const h of this.#shards.hosts) {
      if (h.shard === undefined) throw new Error('a ClickHouse host has not told its shard yet: it may hold the rows')
      byShard.set(h.shard, [...(byShard.get(h.shard) ?? []), h.clickhouse])
    }
    return [...byShard.values()]
  }

  /**
   * A seq range's rows: per shard, per host (null: the host did not answer within
   * countTimeoutMs); `total` sums each shard's answering replica holding the most. Throws when
   * no replica of a shard answers (see the contract).
   */
  async #countRows (range: SqlFragment): Promise<RowCount> {
    const table = rawSql(quoteIdentifier(this.#eventsTable))
    const byShard = await Promise.all(this.#sites().map(async (hosts) => {
      let failure: unknown
      const counts = await Promise.all(hosts.map(async (ch) => {
        const controller = new AbortController()
        const cancel = this.#setTimer(() => { controller.abort(new Error(`counting a pending key's rows took over ${countTimeoutMs} ms`)) }, countTimeoutMs)
        try {
          const [row] = await ch.query<{ n: number }>(sql`SELECT count() AS n FROM ${table} WHERE ${range}`, { signal: controller.signal })
          return Number(row.n)
        } catch (err) {
          failure = err
          return null
        } finally {
          cancel()
        }
      }))
      if (counts.every((n) => n === null)) throw new Error('no ClickHouse host of a shard answered the count of a pending key\'s rows', { cause: failure })
      return { hosts, counts }
    }))
    return { byShard, total: byShard.reduce((sum, s) => sum + mostOf(s.counts), 0) }
  }

  /**
   * Deletes a partly stored attempt's rows (see "Repair" in the contract): on each shard holding
   * some, one mutation on its replica holding the most, unless one on that seq range is running
   * there. Answers 'absent' once no host holds any, 'unknown' while the mutations run (the
   * retry's retry settles it then).
   */
  async #deleteRows (range: SqlFragment, record: KeyRecord, count: RowCount): Promise<Presence> {
    const table = rawSql(quoteIdentifier(this.#eventsTable))
    for (const { hosts, counts } of count.byShard) {
      const most = mostOf(counts)
      if (most === 0) continue
      const ch = hosts[counts.indexOf(most)]
      const running = await ch.query<{ n: number }>(sql`SELECT count() AS n FROM system.mutations
        WHERE database = ${ch.database} AND table = ${this.#eventsTable} AND is_done = 0 AND position(command, ${`seq >= ${record.seqBase}`}) > 0`)
      if (Number(running[0].n) > 0) continue
      this.#log.warn('a pending idempotency key\'s attempt is partly stored (a body cut off); deleting its rows so that the retry stores it whole', {
        orgId: record.orgId, stream: record.stream, seqBase: record.seqBase, rows: record.rows, stored: most,
      })
      await ch.command(sql`ALTER TABLE ${table} DELETE WHERE ${range}`)
    }
    for (let round = 0; round < 20; round++) {
      if ((await this.#countRows(range)).total === 0) return 'absent'
      await this.#sleep(250)
    }
    return 'unknown'
  }

  /** Resolves once the rows queued so far have been tried (inserted, or kept for a retry). */
  async flushed (): Promise<void> {
    while (this.#flushing !== null) await this.#flushing
  }

  async close (): Promise<void> {
    this.#closed = true
    this.#spacingMs = 0
    this.#pendingSpacingMs = 0
    await this.flushed()
  }

  #queue (row: KeyRow): void {
    if (this.#closed) { row.done?.reject(new Error('the idempotency store is closed')); return }
    this.#pending.push(row)
    if (this.#pending.length > this.#maxPending) {
      const dropped = this.#pending.splice(0, this.#pending.length - this.#maxPending)
      for (const r of dropped) r.done?.reject(new Error('idempotency key dropped: too many queued'))
      this.#log.warn('idempotency keys dropped: ClickHouse did not take them in time', { dropped: dropped.length })
    }
    if (row.done !== undefined) this.#wake?.()
    this.#flushing ??= this.#flushLoop()
  }

  async #flushLoop (): Promise<void> {
    try {
      while (this.#pending.length > 0) {
        const spacing = this.#pending.some((r) => r.done !== undefined) ? this.#pendingSpacingMs : this.#spacingMs
        const wait = this.#lastFlushAt + spacing - this.#now()
        if (wait > 0) {
          // A request waiting for its pending row must not wait the final rows' spacing.
          const woken = await new Promise<boolean>((resolve) => {
            const cancel = this.#setTimer(() => { this.#wake = null; resolve(false) }, wait)
            this.#wake = () => { this.#wake = null; cancel(); resolve(true) }
          })
          if (woken) continue // re-evaluate with the pending rows' spacing
        }
        this.#lastFlushAt = this.#now()
        const rows = this.#pending
        this.#pending = []
        // Attempts wait for their pending rows: bounded. Final rows alone take the client's timeout.
        const controller = new AbortController()
        const cancel = rows.some((r) => r.done !== undefined)
          ? this.#setTimer(() => { controller.abort(new Error(`pending idempotency keys not recorded within ${this.#pendingTimeoutMs} ms`)) }, this.#pendingTimeoutMs)
          : () => {}
        try {
          await this.#ch.command(sql`INSERT INTO idempotency_keys (scope, key, fingerprint, answer, created_at, expires_at,
            state, org_id, stream, seq_base, rows, node, recorded_at) VALUES ${joinSql(
            rows.map((r) => sql`(${r.scope}, ${r.key}, ${r.fingerprint}, ${r.answer}, ${r.createdAt}, ${r.expiresAt},
              ${r.state}, ${r.pending?.orgId ?? ''}, ${r.pending?.stream ?? ''}, ${r.pending?.seqBase ?? 0}, ${r.pending?.rows ?? 0},
              ${this.node}, ${r.recordedAt})`), ', ')}`, { signal: controller.signal })
          cancel()
          for (const r of rows) r.done?.resolve()
        } catch (err) {
          cancel()
          // A pending row's attempt is refused (its rows are not written); final rows are kept.
          for (const r of rows) r.done?.reject(err)
          if (rows.some((r) => r.done !== undefined)) this.#onFailure()
          const now = this.#now()
          const kept = rows.filter((r) => r.done === undefined && r.expiresAt > now)
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
