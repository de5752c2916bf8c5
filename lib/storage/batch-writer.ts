// The batch writer: one per server and table, shared by every ingest request. It turns many small
// requests into few large ClickHouse inserts, because ClickHouse 18.16 makes a part per insert and
// refuses inserts at 300 parts per partition.
//
// Contract
// - write(chunks, rows) takes all of one request's rows, whole rows in `format` (RowBinary for the
//   events table, see lib/ingest/row-serializer.ts; TabSeparated rows must each end in '\n'), in
//   `columns` order. They go into ONE insert together, never split across inserts: a write
//   shares an insert with others only while the total stays within maxBatchRows and
//   maxBatchBytes; a bigger write gets an insert to itself.
// - 200 means durable: write() resolves only after the INSERT holding its rows has succeeded, or
//   after the writer has seen them stored (see "Unknown outcome").
// - Atomic: every insert is sent with max_insert_block_size >= its row count, so ClickHouse parses
//   it into one block and writes it as one part per partition it touches. A failed insert leaves
//   nothing behind, with one exception this writer cannot close on a plain MergeTree: a batch
//   whose rows span several partitions (days) is committed part by part, so a failure between
//   two of those parts (disk full, server crash) stores the first ones. And a body cut off on its
//   way (this process killed while sending it) is not always refused: 18.16 takes the end of the
//   connection for the end of a chunked body, and stores the rows before the cut when it falls
//   between two rows (checked by hand: 32,000 rows without the last chunk's terminator were
//   stored). Nobody was answered 200 for them, so their clients send them again. In those rare
//   cases rows are stored at least once; a resolved write is never missing rows. (Hence also no
//   streaming of a batch into an insert opened before the batch is complete: a crash would
//   store a part of it.)
// - When: one insert is in flight at a time. A write that finds the writer idle (no insert in
//   flight, no other write waiting or held) does not wait flushIntervalMs for company that is
//   not coming (a client sending one request at a time): it goes out as soon as
//   idleInsertIntervalMs (at most minInsertIntervalMs) have passed since the previous insert
//   started, at once when they have; writes arriving meanwhile go with it. Otherwise (under load) writes wait and batch as
//   before: the next insert starts as soon as the previous returned and either a full batch waits
//   (maxBatchRows or maxBatchBytes of rows, or half of maxPendingBytes, or writes held for want
//   of room) or the oldest waiting row has waited flushIntervalMs and minInsertIntervalMs have
//   passed since the previous insert started. So at most one insert per minInsertIntervalMs is
//   not full while writes queue up, and one per idleInsertIntervalMs when each finds the writer
//   idle (bench/README.md "Single client": the rate ClickHouse merges). A row's wait counts from its request's arrival (write()'s
//   `arrivedAt`), not from write(): the reading and parsing before write() are part of it, so
//   the interval bounds what a row waits in all. flush() and close() send at once.
// - Bounded wait: every write settles within retryTimeoutMs + attemptTimeoutMs of write(),
//   whatever ClickHouse does (down, hung, SIGSTOPped, a stalled disk). Each insert attempt
//   carries an AbortSignal that fires attemptTimeoutMs after it started, or earlier so that the
//   oldest write of the batch can still be answered in time (the client's own request timeout
//   is an idle timer that progress resets, no deadline). A write still waiting for its first
//   attempt when too little of its time is left rejects with storage_unavailable: none of its
//   rows was sent.
// - ClickHouse down: a failed insert is retried with exponential backoff and jitter while the
//   oldest write in it is younger than retryTimeoutMs (every batch gets at least one attempt, so
//   a backlog built up during an outage drains fast instead of waiting retryTimeoutMs per batch).
//   Past that, its writes reject with SluiceError('storage_unavailable', { retryAfter }), which
//   means none of their rows is stored. Failures that are known to have stored nothing (refused
//   connections, and the transient server codes below: ClickHouse answered, the insert failed
//   whole) are retried; other server answers are not: a malformed batch (parse error, a
//   serializer bug) is logged as an error and each of its writes is retried alone, so only the
//   guilty one fails (internal_error); a configuration error (unknown table, auth, readonly)
//   fails the batch at once with storage_unavailable.
// - Unknown outcome: an attempt that timed out or lost its connection after the request went out
//   may have been committed (ClickHouse SIGSTOPped with the body in its socket buffer commits it
//   when it resumes). Its writes are neither answered 503 nor blindly retried: each attempt has
//   its own query_id, and the writer kills it (KILL QUERY ... SYNC), waits until it is gone from
//   system.processes, and counts each write's rows by its identity (org_id, stream and the seq
//   range [seqBase, seqBase + 2^25), WriteOptions.identity), twice, killing again in between,
//   so that an insert still queued in a socket is not missed. All rows there: the write
//   resolves. None: the write is retried like any failure that stored nothing. Some, or no
//   answer from ClickHouse before the write's time is up, or no identity to look for: the write
//   rejects with SluiceError('storage_outcome_unknown', { retryAfter }): its rows may or may not
//   be stored, and a retry by the client may store them twice. A residual race remains: an
//   insert that ClickHouse starts reading only after both checks (a thread starved for longer
//   than the checks take) is missed, and its rows end up stored twice after the retry.
// - Memory: pendingBytes counts every byte handed to write() and not yet settled. While the
//   bytes waiting and in flight would exceed maxPendingBytes, new writes are held (FIFO) and
//   `needsDrain` is true: admission should answer 429 server_busy. A write may pass an
//   AbortSignal: aborted before its insert starts, it is dropped and rejects with the reason.
// - Cluster mode (options.shards): each batch is one insert into the local table of one shard,
//   picked among the healthy ones in turn (lib/storage/shard-set.ts), so a whole shard down
//   does not stop ingest. A failure that stored nothing (refused connection, an error answer)
//   marks the host unhealthy and the retry goes to whichever shard is picked next. An attempt
//   whose outcome is unknown is not checked by counting rows: the retry sends the same bytes
//   (same writes, same order, one block) to the same shard, whose replicated table keeps an
//   identical block once (insert_deduplicate, within replicated_deduplication_window blocks),
//   so the rows are stored exactly once. A batch that ran out of time after such an attempt
//   rejects with storage_outcome_unknown, never storage_unavailable. With insertQuorum > 0 an
//   insert succeeds only once that many replicas of its shard hold it.
// - Shutdown: close() refuses new writes with SluiceError('shutting_down') from the moment it is
//   called and resolves when every write accepted before has settled.
import { Readable } from 'node:stream'
import { randomUUID } from 'node:crypto'
import { ClickHouseError, clickhouseCodes } from './clickhouse.ts'
import type { ClickHouse } from './clickhouse.ts'
import { quoteIdentifier, sql, joinSql, rawSql } from './sql.ts'
import type { SqlFragment } from './sql.ts'
import { seqLineSpace } from './row-seq.ts'
import { SluiceError } from '../errors.ts'
import type { Logger } from '../logger.ts'
import type { Config } from '../config.ts'
import type { InsertTarget, ShardSet } from './shard-set.ts'

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

export interface BatchWriterOptions {
  clickhouse: ClickHouse
  /** Plain table name in the client's database. */
  table: string
  /** Column names in the order the rows carry them. */
  columns: readonly string[]
  /** ClickHouse input format of the rows; default TabSeparated. */
  format?: RowFormat
  log: Logger
  // The options from here to maxPendingBytes are settings (writer.*, limits.maxUncommittedBytes):
  // required, so that their one default is the config's (lib/config-schema.ts); writerSettings()
  // below picks them from a Config.
  /**
   * Rows per insert (writer.maxBatchRows; 100_000: ~20 MB at 200 B/row, ~100-150 ms to insert on
   * 18.16, bench/writer.bench.ts, and below max_insert_block_size even without the per-insert setting).
   */
  maxBatchRows: number
  /** Bytes per insert; default 64 MiB, which bounds one insert's memory on both sides. */
  maxBatchBytes?: number
  /**
   * Milliseconds the oldest row waits for company, from its request's arrival, before it is sent,
   * when the writer is busy (writer.flushIntervalMs). A write to an idle writer does not wait for company.
   */
  flushIntervalMs: number
  /**
   * Milliseconds between the starts of two non-full inserts while writes queue up
   * (writer.minInsertIntervalMs; 200: at most 5 parts/s under load).
   */
  minInsertIntervalMs: number
  /**
   * Milliseconds a write to an idle writer waits since the previous insert started
   * (writer.idleInsertIntervalMs, used up to minInsertIntervalMs; 50: at most 20 inserts/s, 9
   * parts each with the rollup views; ClickHouse 18.16 merged 29 inserts/s of one client without
   * passing 40 active parts, bench/README.md "Single client").
   */
  idleInsertIntervalMs: number
  /** Milliseconds a write is kept trying from when write() was called (writer.retryTimeoutMs). */
  retryTimeoutMs: number
  /**
   * Milliseconds one insert attempt may take before it is aborted (writer.attemptTimeoutMs; a full
   * batch takes ~150 ms on 18.16). A write settles within retryTimeoutMs + attemptTimeoutMs.
   */
  attemptTimeoutMs: number
  /** Bytes waiting and in flight before writes are held (limits.maxUncommittedBytes). */
  maxPendingBytes: number
  /** Seconds sent as Retry-After with storage_unavailable; default 5, whole seconds >= 1. */
  retryAfterS?: number
  /** Called after every insert attempt, for metrics. Must not throw. */
  onInsert?: (stats: InsertStats) => void
  /** Monotonic clock in milliseconds for the deadlines; default performance.now. */
  now?: () => number
  /**
   * Cluster mode (see "Cluster mode" in the contract): the shards' hosts; `table` is then the
   * local table (events_local) on each of them.
   */
  shards?: ShardSet
  /** Cluster mode: insert_quorum of every insert (clickhouse.insertQuorum); 0 or absent: none. */
  insertQuorum?: number
  /**
   * Runs `fn` after `ms` (on the `now` clock) and returns its cancel: the flush and insert-interval
   * schedule, the retry backoff, the attempt deadline and the outcome check's polls all wait
   * through it, so a test driving `now` drives them too. Default: setTimeout.
   */
  setTimer?: (fn: () => void, ms: number) => CancelTimer
}

/** Cancels a timer set with BatchWriterOptions.setTimer. */
export type CancelTimer = () => void

function realTimer (fn: () => void, ms: number): CancelTimer {
  const timer = setTimeout(fn, Math.max(0, ms))
  return () => { clearTimeout(timer) }
}

// Defaults of the options that are not settings (no config value to disagree with).
const defaults = {
  maxBatchBytes: 64 * 1024 * 1024,
  retryAfterS: 5,
} as const

/** The writer's settings, as BatchWriterOptions, from the one validated config. */
export function writerSettings (config: Pick<Config, 'writer' | 'limits'>): Pick<BatchWriterOptions,
  'maxBatchRows' | 'flushIntervalMs' | 'minInsertIntervalMs' | 'idleInsertIntervalMs' | 'retryTimeoutMs' | 'attemptTimeoutMs' | 'maxPendingBytes'> {
  return {
    maxBatchRows: config.writer.maxBatchRows,
    flushIntervalMs: config.writer.flushIntervalMs,
    minInsertIntervalMs: config.writer.minInsertIntervalMs,
    idleInsertIntervalMs: config.writer.idleInsertIntervalMs,
    retryTimeoutMs: config.writer.retryTimeoutMs,
    attemptTimeoutMs: config.writer.attemptTimeoutMs,
    maxPendingBytes: config.limits.maxUncommittedBytes,
  }
}

/**
 * Formats whose rows a writer can concatenate from many writes into one insert body
 * (JSONCompactEachRow: the embedded engine's, ClickHouse#insertFormat).
 */
export type RowFormat = 'TabSeparated' | 'RowBinary' | 'JSONCompactEachRow'
const rowFormats: ReadonlySet<string> = new Set<RowFormat>(['TabSeparated', 'RowBinary', 'JSONCompactEachRow'])

/** ClickHouse's own max_insert_block_size default; never ask for less. */
const serverInsertBlockRows = 1_048_576
/** Backoff: the first retry after ~100 ms, doubling, at most ~2 s between attempts. */
const backoffBaseMs = 100
const backoffMaxMs = 2_000
/** ms one request of the outcome check may take; a hung ClickHouse is asked again after it. */
const checkRequestTimeoutMs = 1_000
/** ms between two rounds of the outcome check while ClickHouse does not answer. */
const checkPollMs = 100

const c = clickhouseCodes
const transientCodes: ReadonlySet<number> = new Set([
  c.TOO_MANY_PARTS, c.MEMORY_LIMIT_EXCEEDED, c.CANNOT_ALLOCATE_MEMORY, c.TIMEOUT_EXCEEDED,
  c.TOO_MANY_SIMULTANEOUS_QUERIES, c.SOCKET_TIMEOUT, c.NETWORK_ERROR, c.TABLE_IS_READ_ONLY,
  c.NOT_ENOUGH_SPACE, c.NO_ZOOKEEPER, c.KEEPER_EXCEPTION, c.TOO_FEW_LIVE_REPLICAS,
  c.UNSATISFIED_QUORUM_FOR_PREVIOUS_WRITE, c.UNKNOWN_STATUS_OF_INSERT,
])
const malformedDataCodes: ReadonlySet<number> = new Set([
  c.UNEXPECTED_END_OF_FILE, c.CANNOT_PARSE_TEXT, c.CANNOT_PARSE_ESCAPE_SEQUENCE,
  c.CANNOT_PARSE_QUOTED_STRING, c.CANNOT_PARSE_INPUT_ASSERTION_FAILED, c.ATTEMPT_TO_READ_AFTER_EOF,
  c.CANNOT_READ_ALL_DATA, c.CANNOT_PARSE_DATE, c.CANNOT_PARSE_DATETIME, c.CANNOT_PARSE_NUMBER,
  c.INCORRECT_DATA, c.TOO_LARGE_STRING_SIZE,
])
/** Socket errors that mean the request never reached ClickHouse: nothing can have been stored. */
const notSentSysCodes: ReadonlySet<string> = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL'])

/** transient: retried; malformed: the rows are bad, never retried; refused: anything else, never retried. */
export const insertFailureKinds = ['transient', 'malformed', 'refused'] as const
export type FailureKind = typeof insertFailureKinds[number]

/** Retry what may pass by itself; never what will fail the same way again. */
export function classifyInsertError (err: unknown): FailureKind {
  if (!(err instanceof ClickHouseError)) return 'refused'
  if (err.chCode === 0 || transientCodes.has(err.chCode)) return 'transient' // 0: no answer at all
  return malformedDataCodes.has(err.chCode) ? 'malformed' : 'refused'
}

/**
 * True when a failed insert may nevertheless have been committed: no answer from ClickHouse
 * (timeout, abort, reset) once the connection was made. A server error answer and a refused
 * connection are not ambiguous: nothing was stored.
 */
export function isAmbiguousFailure (err: unknown): boolean {
  if (err instanceof ClickHouseError && err.chCode === c.UNKNOWN_STATUS_OF_INSERT) return true
  if (!(err instanceof ClickHouseError) || err.chCode !== 0) return false
  const sysCode = (err as { sysCode?: unknown }).sysCode
  return !(typeof sysCode === 'string' && notSentSysCodes.has(sysCode))
}

/**
 * Where a write's rows can be found again: every row has this org_id and stream and a seq in
 * [seqBase, seqBase + 2^25) (row-seq.ts randomSeqBase), and no other row has.
 */
export interface WriteIdentity {
  orgId: string
  stream: string
  seqBase: number
}

export interface WriteOptions {
  /** Aborted before the write's insert starts: the write is dropped and rejects with the reason. */
  signal?: AbortSignal
  /**
   * performance.now() when the rows' request arrived: the flush interval counts from here.
   * Default, and at the latest: when write() is called.
   */
  arrivedAt?: number
  /**
   * Lets the writer find out whether the rows were stored after an insert whose outcome is
   * unknown (the table must have org_id, stream and seq columns). Without it such a write
   * rejects with storage_outcome_unknown.
   */
  identity?: WriteIdentity
}

interface PendingWrite {
  seq: number
  chunks: readonly Buffer[]
  rows: number
  bytes: number
  /** now() when write() was called: the retry deadline counts from here. */
  calledAt: number
  /** now() by which the write must be settled: calledAt + retryTimeoutMs + attemptTimeoutMs. */
  answerBy: number
  /** now() when its request arrived: the flush interval counts from here. */
  arrivedAt: number
  identity: WriteIdentity | undefined
  /** Written to an idle writer (see the contract, "When"): sent without waiting flushIntervalMs. */
  idle: boolean
  state: 'held' | 'waiting' | 'sending' | 'done'
  promise: Promise<void>
  resolve: () => void
  reject: (err: unknown) => void
  signal: AbortSignal | undefined
  onAbort: (() => void) | undefined
}

/** What one attempt did: stored, failed storing nothing, or failed with an unknown outcome. */
type AttemptResult = { ok: true } | { ok: false, kind: FailureKind, err: unknown, ambiguous: boolean }

/** What the outcome check found for one write. */
type Presence = 'stored' | 'absent' | 'unknown'

function positiveInteger (name: string, value: number): number {
  if (!Number.isSafeInteger(value) || value <= 0) throw new TypeError(`${name} must be a positive integer (got ${value})`)
  return value
}

function nonNegative (name: string, value: number): number {
  if (!Number.isFinite(value) || value < 0) throw new TypeError(`${name} must be a number >= 0 (got ${value})`)
  return value
}

function settle (w: PendingWrite, err?: unknown): void {
  if (w.state === 'done') return
  w.state = 'done'
  if (w.onAbort !== undefined) w.signal?.removeEventListener('abort', w.onAbort)
  if (err === undefined) w.resolve()
  else w.reject(err)
}

function earliestArrival (writes: readonly PendingWrite[]): number {
  let earliest = Infinity
  for (const w of writes) if (w.arrivedAt < earliest) earliest = w.arrivedAt
  return earliest
}

function sumRows (writes: readonly PendingWrite[]): number {
  let rows = 0
  for (const w of writes) rows += w.rows
  return rows
}

export class BatchWriter {
  readonly #clickhouse: ClickHouse
  readonly #table: string
  readonly #statement: string
  readonly #format: RowFormat
  readonly #log: Logger
  readonly #maxBatchRows: number
  readonly #maxBatchBytes: number
  readonly #flushIntervalMs: number
  readonly #minInsertIntervalMs: number
  readonly #idleInsertIntervalMs: number
  readonly #retryTimeoutMs: number
  readonly #attemptTimeoutMs: number
  /** ms kept free after an attempt's abort for the outcome check, within the write's answerBy. */
  readonly #checkReserveMs: number
  /** ms an attempt needs at least; with less left, it is not started. */
  readonly #minAttemptMs: number
  readonly #maxPendingBytes: number
  readonly #retryAfterS: number
  readonly #onInsert: ((stats: InsertStats) => void) | undefined
  readonly #now: () => number
  readonly #setTimer: (fn: () => void, ms: number) => CancelTimer
  readonly #shards: ShardSet | undefined
  readonly #insertQuorum: number

  #held: PendingWrite[] = []
  #waiting: PendingWrite[] = []
  #sending: PendingWrite[] | null = null
  #heldBytes = 0
  #heldRows = 0
  #waitingBytes = 0
  #waitingRows = 0
  /** The earliest arrivedAt among the waiting writes (Infinity: none). */
  #waitingSince = Infinity
  #sendingBytes = 0
  #sendingRows = 0
  #seq = 0
  #flushThroughSeq = 0
  #lastInsertStartedAt = -Infinity
  #timer: CancelTimer | undefined
  #timerDueAt = 0
  #expiryTimer: CancelTimer | undefined
  #expiryDueAt = Infinity
  #closing: Promise<void> | undefined

  constructor (options: BatchWriterOptions) {
    this.#clickhouse = options.clickhouse
    this.#table = options.table
    this.#log = options.log
    if (options.columns.length === 0) throw new TypeError('columns must not be empty')
    this.#format = options.format ?? 'TabSeparated'
    if (!rowFormats.has(this.#format)) throw new TypeError(`format must be one of ${[...rowFormats].join(', ')} (got ${String(this.#format)})`)
    this.#statement = `INSERT INTO ${quoteIdentifier(options.table)} (${options.columns.map(quoteIdentifier).join(', ')}) FORMAT ${this.#format}`
    this.#maxBatchRows = positiveInteger('maxBatchRows', options.maxBatchRows)
    this.#maxBatchBytes = positiveInteger('maxBatchBytes', options.maxBatchBytes ?? defaults.maxBatchBytes)
    this.#flushIntervalMs = nonNegative('flushIntervalMs', options.flushIntervalMs)
    this.#minInsertIntervalMs = nonNegative('minInsertIntervalMs', options.minInsertIntervalMs)
    this.#idleInsertIntervalMs = Math.min(nonNegative('idleInsertIntervalMs', options.idleInsertIntervalMs), this.#minInsertIntervalMs)
    this.#retryTimeoutMs = nonNegative('retryTimeoutMs', options.retryTimeoutMs)
    this.#attemptTimeoutMs = positiveInteger('attemptTimeoutMs', options.attemptTimeoutMs)
    // A fifth of an attempt (1 s of the default 5 s) for the check: a few small queries that take
    // milliseconds on an answering ClickHouse. An attempt shorter than a tenth (500 ms) would
    // mostly time out and only add unknown outcomes.
    this.#checkReserveMs = this.#attemptTimeoutMs / 5
    this.#minAttemptMs = this.#attemptTimeoutMs / 10
    this.#maxPendingBytes = positiveInteger('maxPendingBytes', options.maxPendingBytes)
    this.#retryAfterS = Math.max(1, Math.ceil(nonNegative('retryAfterS', options.retryAfterS ?? defaults.retryAfterS)))
    this.#onInsert = options.onInsert
    this.#now = options.now ?? (() => performance.now())
    this.#setTimer = options.setTimer ?? realTimer
    this.#shards = options.shards
    this.#insertQuorum = options.insertQuorum ?? 0
  }

  /** Bytes handed to write() and not yet settled: held, waiting and in flight. */
  get pendingBytes (): number { return this.#heldBytes + this.#waitingBytes + this.#sendingBytes }

  /** Rows handed to write() and not yet settled. */
  get pendingRows (): number { return this.#heldRows + this.#waitingRows + this.#sendingRows }

  /** True while writes are being held for want of room: admission should answer 429. */
  get needsDrain (): boolean {
    return this.#held.length > 0 || this.#waitingBytes + this.#sendingBytes >= this.#maxPendingBytes
  }

  write (chunks: readonly Buffer[], rows: number, options: WriteOptions = {}): Promise<void> {
    const { signal } = options
    if (this.#closing !== undefined) return Promise.reject(new SluiceError('shutting_down', undefined, { retryAfter: 1 }))
    if (!Number.isSafeInteger(rows) || rows < 0) return Promise.reject(new TypeError(`rows must be an integer >= 0 (got ${rows})`))
    if (rows === 0) return Promise.resolve()
    let bytes = 0
    let last: Buffer | undefined
    for (const chunk of chunks) {
      bytes += chunk.byteLength
      if (chunk.byteLength > 0) last = chunk
    }
    // A missing final newline would glue this write's last row to the next write's first row.
    if (last === undefined || (this.#format !== 'RowBinary' && last[last.byteLength - 1] !== 0x0a)) {
      return Promise.reject(new TypeError(last === undefined ? `${rows} rows in no bytes` : `rows must be ${this.#format} lines, each ending in \\n`))
    }
    const identity = options.identity
    if (identity !== undefined && !(Number.isSafeInteger(identity.seqBase) && identity.seqBase >= 0 && rows <= seqLineSpace)) {
      return Promise.reject(new TypeError(`identity.seqBase must be an integer >= 0 and rows at most ${seqLineSpace}`))
    }
    if (signal?.aborted) return Promise.reject(signal.reason)

    let resolve!: () => void
    let reject!: (err: unknown) => void
    const promise = new Promise<void>((res, rej) => { resolve = res; reject = rej })
    const calledAt = this.#now()
    const w: PendingWrite = {
      seq: ++this.#seq, chunks, rows, bytes, calledAt,
      answerBy: calledAt + this.#retryTimeoutMs + this.#attemptTimeoutMs,
      arrivedAt: Math.min(options.arrivedAt ?? calledAt, calledAt), identity,
      idle: this.#sending === null && this.#waiting.length === 0 && this.#held.length === 0,
      state: 'held', promise, resolve, reject, signal, onAbort: undefined,
    }
    if (signal !== undefined) {
      w.onAbort = () => this.#drop(w, w.signal?.reason)
      signal.addEventListener('abort', w.onAbort, { once: true })
    }
    this.#held.push(w)
    this.#heldBytes += bytes
    this.#heldRows += rows
    this.#schedule()
    return promise
  }

  /** Sends everything pending now and resolves when all of it has settled (it never rejects). */
  async flush (): Promise<void> {
    const pending = [...this.#held, ...this.#waiting, ...(this.#sending ?? [])]
    if (pending.length === 0) return
    this.#flushThroughSeq = this.#seq
    this.#schedule()
    await Promise.allSettled(pending.map((w) => w.promise))
  }

  /** Refuses new writes from now on; resolves when every accepted write has settled. */
  close (): Promise<void> {
    this.#closing ??= this.flush().then(() => { this.#clearTimer(); this.#clearExpiryTimer() })
    return this.#closing
  }

  /** An aborted write leaves the queue, unless its insert has started (too late to take back). */
  #drop (w: PendingWrite, reason: unknown): void {
    if (!this.#remove(w)) return
    settle(w, reason)
    this.#schedule()
  }

  /** Takes a held or waiting write out of its queue; false when it is no longer queued. */
  #remove (w: PendingWrite): boolean {
    if (w.state === 'held') {
      this.#held.splice(this.#held.indexOf(w), 1)
      this.#heldBytes -= w.bytes
      this.#heldRows -= w.rows
    } else if (w.state === 'waiting') {
      this.#waiting.splice(this.#waiting.indexOf(w), 1)
      this.#waitingBytes -= w.bytes
      this.#waitingRows -= w.rows
      this.#waitingSince = earliestArrival(this.#waiting)
    } else {
      return false
    }
    return true
  }

  /** Moves held writes to the waiting queue, in order, while they fit under maxPendingBytes. */
  #admitHeld (): void {
    while (this.#held.length > 0) {
      const w = this.#held[0]
      const queued = this.#waitingBytes + this.#sendingBytes
      if (queued > 0 && queued + w.bytes > this.#maxPendingBytes) return
      this.#held.shift()
      this.#heldBytes -= w.bytes
      this.#heldRows -= w.rows
      w.state = 'waiting'
      this.#waiting.push(w)
      this.#waitingBytes += w.bytes
      this.#waitingRows += w.rows
      if (w.arrivedAt < this.#waitingSince) this.#waitingSince = w.arrivedAt
    }
  }

  /** The last moment a write can start its first attempt and still be answered by answerBy. */
  #lastStartFor (w: PendingWrite): number {
    return w.answerBy - this.#checkReserveMs - this.#minAttemptMs
  }

  /**
   * Rejects the queued writes (never sent) whose time is too short for an attempt, and arms a
   * timer for the next one. Queues are FIFO by write(), so the expired ones are at the front.
   */
  #expireQueued (): void {
    const now = this.#now()
    const expired: PendingWrite[] = []
    for (const queue of [this.#waiting, this.#held]) {
      while (queue.length > 0 && this.#lastStartFor(queue[0]) <= now) {
        const w = queue[0]
        this.#remove(w)
        expired.push(w)
      }
    }
    if (expired.length > 0) {
      this.#log.error('ClickHouse insert slot busy past the writes\' deadline; answering 503', {
        table: this.#table, writes: expired.length, rows: sumRows(expired),
      })
      const err = this.#unavailable()
      for (const w of expired) settle(w, err)
      this.#admitHeld() // their bytes are free
    }
    let next = Infinity
    if (this.#waiting.length > 0) next = this.#lastStartFor(this.#waiting[0])
    if (this.#held.length > 0) next = Math.min(next, this.#lastStartFor(this.#held[0]))
    if (next === Infinity) { this.#clearExpiryTimer(); return }
    if (this.#expiryTimer !== undefined && this.#expiryDueAt === next) return
    this.#clearExpiryTimer()
    this.#expiryDueAt = next
    this.#expiryTimer = this.#setTimer(() => { this.#expiryTimer = undefined; this.#expiryDueAt = Infinity; this.#schedule() }, Math.ceil(next - now))
  }

  #clearExpiryTimer (): void {
    this.#expiryTimer?.()
    this.#expiryTimer = undefined
    this.#expiryDueAt = Infinity
  }

  #schedule (): void {
    this.#admitHeld()
    this.#expireQueued()
    if (this.#sending !== null) return // its completion schedules again
    if (this.#waiting.length === 0) { this.#clearTimer(); return }
    const now = this.#now()
    let dueAt: number
    // Full, flushed, or memory filling up (then waiting longer for company only risks holding).
    if (this.#waiting[0].seq <= this.#flushThroughSeq || this.#waitingRows >= this.#maxBatchRows ||
        this.#waitingBytes >= this.#maxBatchBytes || this.#held.length > 0 ||
        this.#waitingBytes + this.#sendingBytes >= this.#maxPendingBytes / 2) {
      dueAt = now
    } else if (this.#waiting[0].idle) {
      dueAt = this.#lastInsertStartedAt + this.#idleInsertIntervalMs // -Infinity before the first insert
    } else {
      dueAt = Math.max(this.#waitingSince + this.#flushIntervalMs, this.#lastInsertStartedAt + this.#minInsertIntervalMs)
    }
    if (dueAt <= now) {
      this.#clearTimer()
      void this.#sendBatch()
    } else if (this.#timer === undefined || this.#timerDueAt !== dueAt) {
      this.#clearTimer()
      this.#timerDueAt = dueAt
      this.#timer = this.#setTimer(() => { this.#timer = undefined; this.#schedule() }, Math.ceil(dueAt - now))
    }
  }

  #sleep (ms: number): Promise<void> {
    return new Promise((resolve) => { this.#setTimer(resolve, Math.max(0, ms)) })
  }

  #clearTimer (): void {
    this.#timer?.()
    this.#timer = undefined
  }

  async #sendBatch (): Promise<void> {
    // Take writes in arrival order while they fit; the first is taken even when it alone is over.
    let count = 1
    let rows = this.#waiting[0].rows
    let bytes = this.#waiting[0].bytes
    while (count < this.#waiting.length) {
      const next = this.#waiting[count]
      if (rows + next.rows > this.#maxBatchRows || bytes + next.bytes > this.#maxBatchBytes) break
      rows += next.rows
      bytes += next.bytes
      count++
    }
    const batch = this.#waiting.splice(0, count)
    for (const w of batch) w.state = 'sending'
    this.#waitingRows -= rows
    this.#waitingBytes -= bytes
    this.#waitingSince = earliestArrival(this.#waiting)
    this.#sending = batch
    this.#sendingRows = rows
    this.#sendingBytes = bytes
    this.#lastInsertStartedAt = this.#now()
    try {
      await this.#storeWrites(batch)
    } catch (err) {
      // #storeWrites settles every write itself; this only guards against a bug in it.
      this.#log.error('batch writer failed unexpectedly', { table: this.#table, err })
      for (const w of batch) settle(w, new SluiceError('internal_error', undefined, { cause: err }))
    } finally {
      this.#sending = null
      this.#sendingRows = 0
      this.#sendingBytes = 0
      this.#schedule()
    }
  }

  #unavailable (cause?: unknown): SluiceError {
    return new SluiceError('storage_unavailable', undefined, { retryAfter: this.#retryAfterS, cause })
  }

  #outcomeUnknown (cause?: unknown): SluiceError {
    return new SluiceError('storage_outcome_unknown', undefined, { retryAfter: this.#retryAfterS, cause })
  }

  /**
   * Inserts `writes` until they are stored, known not stored past their retries, or of unknown
   * outcome; settles every one of them by the oldest one's answerBy.
   */
  async #storeWrites (writes: readonly PendingWrite[]): Promise<void> {
    const oldest = writes[0] // FIFO: the oldest write sets the batch's deadlines
    const retryUntil = oldest.calledAt + this.#retryTimeoutMs
    let pending = writes
    // Cluster mode: the shard this batch goes to; it changes only after a failure that stored nothing.
    let target = this.#shards?.pick()
    // Cluster mode: an attempt ended without an answer, so the rows may be stored on target's shard.
    let maybeStored = false
    const giveUp = (cause?: unknown): SluiceError => maybeStored ? this.#outcomeUnknown(cause) : this.#unavailable(cause)
    for (let attempt = 1; ; attempt++) {
      const now = this.#now()
      const abortAt = Math.min(now + this.#attemptTimeoutMs, oldest.answerBy - this.#checkReserveMs)
      if (abortAt - now < this.#minAttemptMs) {
        // Only a split batch's later writes get here: their time went to their batch mates.
        for (const w of pending) settle(w, giveUp())
        return
      }
      const queryId = `sluice-insert-${randomUUID()}`
      const result = await this.#attempt(pending, attempt, abortAt, queryId, target)
      if (result.ok) {
        if (target !== undefined) this.#shards?.succeeded(target)
        for (const w of pending) settle(w)
        return
      }
      const fields = { table: this.#table, writes: pending.length, rows: sumRows(pending), attempts: attempt, err: result.err }
      if (result.kind === 'malformed') {
        if (pending.length === 1) {
          this.#log.error('ClickHouse could not parse the rows of a write: serializer bug, rows dropped', fields)
          settle(pending[0], new SluiceError('internal_error', undefined, { cause: result.err }))
          return
        }
        // One write's bytes are bad; store the others, each alone (each is one block: all or nothing).
        this.#log.error('ClickHouse could not parse a batch; inserting its writes one by one', fields)
        for (const w of pending) await this.#storeWrites([w])
        return
      }
      if (result.kind === 'refused') {
        this.#log.error('ClickHouse refused the insert; not retried', fields)
        for (const w of pending) settle(w, giveUp(result.err))
        return
      }
      if (this.#shards !== undefined && target !== undefined) {
        // Cluster mode: the same bytes to the same shard after an unknown outcome (its replicated
        // table stores an identical block once), any healthy shard after a failure that stored nothing.
        this.#shards.failed(target)
        if (result.ambiguous) maybeStored = true
        target = maybeStored ? this.#shards.sameShard(target) : this.#shards.pick()
      } else if (result.ambiguous) {
        const presence = await this.#checkStored(pending, queryId, oldest.answerBy)
        const absent: PendingWrite[] = []
        let stored = 0
        let unknown = 0
        for (let i = 0; i < pending.length; i++) {
          if (presence[i] === 'stored') { stored++; settle(pending[i]) } else if (presence[i] === 'absent') absent.push(pending[i])
          else { unknown++; settle(pending[i], this.#outcomeUnknown(result.err)) }
        }
        this.#log[unknown > 0 ? 'error' : 'warn']('ClickHouse insert ended without an answer; checked what it stored', {
          ...fields, stored, absent: absent.length, unknown,
        })
        if (absent.length === 0) return
        pending = absent
      }
      const ceiling = Math.min(backoffMaxMs, backoffBaseMs * 2 ** (attempt - 1))
      const delayMs = ceiling / 2 + Math.random() * ceiling / 2 // "equal jitter": spread, never zero
      const nextStart = this.#now() + delayMs
      const nextAbortAt = Math.min(nextStart + this.#attemptTimeoutMs, oldest.answerBy - this.#checkReserveMs)
      if (nextStart >= retryUntil || nextAbortAt - nextStart < this.#minAttemptMs) {
        this.#log.error('ClickHouse insert failed past its retries', { ...fields, writes: pending.length, rows: sumRows(pending), maybeStored })
        for (const w of pending) settle(w, giveUp(result.err))
        return
      }
      this.#log.warn('ClickHouse insert failed; retrying', { table: this.#table, rows: sumRows(pending), attempt, delayMs: Math.round(delayMs), err: result.err })
      await this.#sleep(delayMs)
    }
  }

  /** One insert of `writes` named `queryId`, aborted at `abortAt` (now() time). */
  async #attempt (writes: readonly PendingWrite[], attempt: number, abortAt: number, queryId: string, target: InsertTarget | undefined): Promise<AttemptResult> {
    const chunks: Buffer[] = []
    let bytes = 0
    for (const w of writes) {
      for (const chunk of w.chunks) chunks.push(chunk)
      bytes += w.bytes
    }
    const rows = sumRows(writes)
    // One block, hence one part per partition, however many rows the batch holds. The rollup views
    // run on the other cores instead of one after another in the inserting thread: with one insert
    // in flight, the insert's time is the writer's ceiling (bench/README.md, "parallel views").
    const settings: Record<string, string> = {
      max_insert_block_size: String(Math.max(rows, serverInsertBlockRows)),
      parallel_view_processing: '1',
    }
    if (target !== undefined) {
      // Cluster mode: identical blocks are stored once (the default, stated: retries rely on it).
      settings.insert_deduplicate = '1'
      if (this.#insertQuorum > 0) {
        settings.insert_quorum = String(this.#insertQuorum)
        settings.insert_quorum_timeout = String(Math.max(1, Math.round(abortAt - this.#now())))
      }
    }
    const startedAt = this.#now()
    const controller = new AbortController()
    const cancelAbort = this.#setTimer(() => {
      controller.abort(new ClickHouseError(`insert attempt timed out after ${Math.round(this.#now() - startedAt)} ms`, 0))
    }, Math.max(0, abortAt - startedAt))
    let failure: unknown
    try {
      // Streamed chunk by chunk: no copy of the batch into one contiguous Buffer.
      await (target?.clickhouse ?? this.#clickhouse).insertRaw(this.#statement, Readable.from(chunks), controller.signal, settings, queryId)
    } catch (err) {
      failure = err ?? new Error('insert failed')
    } finally {
      cancelAbort()
    }
    const ok = failure === undefined
    // An abort's error says "aborted"; what matters is that the request may have gone out.
    const ambiguous = !ok && (controller.signal.aborted || isAmbiguousFailure(failure))
    this.#report({ rows, bytes, durationMs: this.#now() - startedAt, ok, writes: writes.length, attempt, ambiguous })
    if (ok) return { ok: true }
    if (controller.signal.aborted) return { ok: false, kind: 'transient', err: controller.signal.reason, ambiguous: true }
    return { ok: false, kind: classifyInsertError(failure), err: failure, ambiguous }
  }

  /**
   * After an attempt whose outcome is unknown: stops it (KILL QUERY ... SYNC), waits until it is
   * gone from system.processes, and counts each write's rows; twice, so that an insert that was
   * still queued in a socket at the first round is killed or seen at the second. Gives up at
   * `answerBy` (now() time): then every write not yet found is 'unknown'.
   */
  async #checkStored (writes: readonly PendingWrite[], queryId: string, answerBy: number): Promise<Presence[]> {
    const identified = writes.filter((w) => w.identity !== undefined)
    let previous: Map<PendingWrite, number> | undefined
    while (identified.length > 0 && this.#now() < answerBy) {
      const timeoutMs = Math.min(checkRequestTimeoutMs, answerBy - this.#now())
      try {
        const signal = AbortSignal.timeout(Math.max(1, timeoutMs))
        await this.#clickhouse.command(sql`KILL QUERY WHERE query_id = ${queryId} SYNC`, { signal })
        const running = await this.#clickhouse.query<{ n: number }>(sql`SELECT count() AS n FROM system.processes WHERE query_id = ${queryId}`, { signal })
        if (running[0].n > 0) { await this.#sleep(checkPollMs); continue }
        const counts = await this.#countRows(identified, signal)
        if (previous !== undefined && identified.every((w) => previous!.get(w) === counts.get(w))) {
          return writes.map((w) => {
            const n = counts.get(w)
            return n === undefined ? 'unknown' : n >= w.rows ? 'stored' : n === 0 ? 'absent' : 'unknown'
          })
        }
        previous = counts
      } catch (err) {
        this.#log.debug('outcome check: ClickHouse did not answer', { table: this.#table, queryId, err })
        await this.#sleep(Math.min(checkPollMs, answerBy - this.#now()))
      }
    }
    return writes.map(() => 'unknown')
  }

  /** Rows stored per write, by identity: org_id, stream and the write's seq range. */
  async #countRows (writes: readonly PendingWrite[], signal: AbortSignal): Promise<Map<PendingWrite, number>> {
    const conditions: SqlFragment[] = writes.map((w) => {
      const id = w.identity!
      return sql`(org_id = ${id.orgId} AND stream = ${id.stream} AND seq >= ${id.seqBase} AND seq < ${id.seqBase + seqLineSpace})`
    })
    const columns = conditions.map((cond, i) => sql`countIf(${cond}) AS ${rawSql(`c${i}`)}`)
    const [row] = await this.#clickhouse.query<Record<string, number>>(
      sql`SELECT ${joinSql(columns, ', ')} FROM ${rawSql(quoteIdentifier(this.#table))} WHERE ${joinSql(conditions, ' OR ')}`, { signal })
    const counts = new Map<PendingWrite, number>()
    writes.forEach((w, i) => counts.set(w, Number(row[`c${i}`])))
    return counts
  }

  #report (stats: InsertStats): void {
    if (this.#onInsert === undefined) return
    try {
      this.#onInsert(stats)
    } catch (err) {
      this.#log.error('onInsert hook threw', { err })
    }
  }
}

export function createBatchWriter (options: BatchWriterOptions): BatchWriter {
  return new BatchWriter(options)
}
