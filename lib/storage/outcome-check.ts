// The outcome check (lib/storage/batch-writer.ts, contract "Unknown outcome"; docs/api.md
// section 6.6): after an insert attempt that ended without an answer, find out whether its rows
// were stored, by counting each write's rows by its identity (org_id, stream and its seq range,
// pending-write.ts WriteIdentity). Also used to settle a keyed request whose first attempt's
// outcome is unknown (lib/ingest/idempotency.ts, docs/api.md section 6.7).
import type { ClickHouse } from './clickhouse.ts'
import { quoteIdentifier, sql, joinSql, rawSql } from './sql.ts'
import type { SqlFragment } from './sql.ts'
import { seqRangeSql } from './row-seq.ts'
import type { Logger } from '../logger.ts'
import type { PendingWrite, SetTimer, WriteIdentity } from './pending-write.ts'

/** What the outcome check found for one write. */
export type Presence = 'stored' | 'absent' | 'unknown'

/** ms one request of the outcome check may take; a hung ClickHouse is asked again after it. */
const checkRequestTimeoutMs = 1_000
/** ms between two rounds of the outcome check while ClickHouse does not answer. */
const checkPollMs = 100

export interface OutcomeCheckOptions {
  clickhouse: ClickHouse
  /** Plain table name of the rows (events). */
  table: string
  log: Logger
  now: () => number
  setTimer: SetTimer
  /** Called whenever ClickHouse answered one of the check's requests (the stall gate opens). */
  onAnswer?: () => void
}

/** A request signal that aborts after `ms` on the check's clock, and its cancel. */
function timeoutSignal (setTimer: SetTimer, ms: number): { signal: AbortSignal, cancel: () => void } {
  const controller = new AbortController()
  const cancel = setTimer(() => { controller.abort(new Error(`outcome check request timed out after ${ms} ms`)) }, Math.max(1, ms))
  return { signal: controller.signal, cancel }
}

export class OutcomeCheck {
  readonly #ch: ClickHouse
  readonly #table: string
  readonly #log: Logger
  readonly #now: () => number
  readonly #setTimer: SetTimer
  readonly #onAnswer: (() => void) | undefined

  constructor (options: OutcomeCheckOptions) {
    this.#ch = options.clickhouse
    this.#table = options.table
    this.#log = options.log
    this.#now = options.now
    this.#setTimer = options.setTimer
    this.#onAnswer = options.onAnswer
  }

  #sleep (ms: number): Promise<void> {
    return new Promise((resolve) => { this.#setTimer(resolve, Math.max(0, ms)) })
  }

  /**
   * After an attempt whose outcome is unknown: stops it (KILL QUERY ... SYNC), waits until it is
   * gone from system.processes, and counts each write's rows; twice, so that an insert that was
   * still queued in a socket at the first round is killed or seen at the second. Gives up at
   * `answerBy` (now() time): then every write not yet found is 'unknown'.
   */
  async checkStored (writes: readonly PendingWrite[], queryId: string, answerBy: number): Promise<Presence[]> {
    const identified = writes.filter((w) => w.identity !== undefined)
    let previous: number[] | undefined
    while (identified.length > 0 && this.#now() < answerBy) {
      const { signal, cancel } = timeoutSignal(this.#setTimer, Math.min(checkRequestTimeoutMs, answerBy - this.#now()))
      try {
        await this.#ch.command(sql`KILL QUERY WHERE query_id = ${queryId} SYNC`, { signal })
        this.#onAnswer?.()
        const running = await this.#ch.query<{ n: number }>(sql`SELECT count() AS n FROM system.processes WHERE query_id = ${queryId}`, { signal })
        if (Number(running[0].n) > 0) { cancel(); await this.#sleep(checkPollMs); continue }
        const counts = await this.countRows(identified.map((w) => w.identity!), signal)
        if (previous !== undefined && counts.every((n, i) => previous![i] === n)) {
          const byWrite = new Map(identified.map((w, i) => [w, counts[i]]))
          return writes.map((w) => {
            const n = byWrite.get(w)
            return n === undefined ? 'unknown' : presenceOf(n, w.rows)
          })
        }
        previous = counts
      } catch (err) {
        this.#log.debug('outcome check: ClickHouse did not answer', { table: this.#table, queryId, err })
        await this.#sleep(Math.min(checkPollMs, answerBy - this.#now()))
      } finally {
        cancel()
      }
    }
    return writes.map(() => 'unknown')
  }

  /** Rows stored per identity: org_id, stream and the seq range. */
  async countRows (identities: readonly WriteIdentity[], signal?: AbortSignal): Promise<number[]> {
    const conditions: SqlFragment[] = identities.map(seqRangeSql)
    const columns = conditions.map((cond, i) => sql`countIf(${cond}) AS ${rawSql(`c${i}`)}`)
    const [row] = await this.#ch.query<Record<string, number>>(
      sql`SELECT ${joinSql(columns, ', ')} FROM ${rawSql(quoteIdentifier(this.#table))} WHERE ${joinSql(conditions, ' OR ')}`, signal ? { signal } : {})
    this.#onAnswer?.()
    return identities.map((_, i) => Number(row[`c${i}`]))
  }
}

/** All of a write's rows: stored; none: absent; some: unknown (a cut body, 18.16). */
export function presenceOf (count: number, rows: number): Presence {
  return count >= rows ? 'stored' : count === 0 ? 'absent' : 'unknown'
}
