// The batch writer: one per server and table, shared by every ingest request. It turns many small
// requests into few large ClickHouse inserts, because ClickHouse 18.16 makes a part per insert and
// refuses inserts at 300 parts per partition.
//
// Modules, by job: this file is the queue (what goes into which insert, and when); each batch's
// attempts and retries are insert-retries.ts, the outcome check outcome-check.ts, the reading of
// ClickHouse's errors insert-errors.ts, and a write's state pending-write.ts. The contract of the
// whole writer stays here.
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
//   fails the batch at once with storage_unavailable. An error answer is believed only once
//   each write's rows are counted as the outcome check counts them (insert-retries.ts): a
//   rollup view that fails after the events' part was written fails the statement with the
//   rows stored (explore27c F1); those writes resolve. Not in cluster mode (below).
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
//   than the checks take) is missed, and its rows end up stored twice after the retry. A keyed
//   request answered storage_outcome_unknown is settled by its retry instead (docs/api.md
//   section 6.7): its rows are counted again then, and stored only if absent.
// - A stall (stall-gate.ts; docs/api.md section 6.6): after an attempt ends without an answer,
//   no new first attempt starts until ClickHouse answers a probe (SELECT 1, every 250 ms) or one
//   of the outcome check's queries. Writes queued meanwhile are never sent into the hung server:
//   when their time is up they reject with storage_unavailable (nothing sent, a safe retry). So a
//   stall of any length costs at most the writes of the one attempt that was in flight as
//   storage_outcome_unknown. Single node only: cluster mode retries on another shard instead.
// - Memory: pendingBytes counts every byte handed to write() and not yet settled. While the
//   bytes waiting and in flight would exceed maxPendingBytes, new writes are held (FIFO) and
//   `needsDrain` is true: admission should answer 429 server_busy. So it is while the oldest
//   queued write has waited a third of retryTimeoutMs + attemptTimeoutMs: the queue is not
//   draining in time (a stall, or inserts slower than writes arrive), and more writes would
//   only expire as storage_unavailable. A write may pass an
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
import { quoteIdentifier } from './sql.ts'
import { seqLineSpace } from './row-seq.ts'
import { SluiceError } from '../errors.ts'
import type { ClickHouse } from './clickhouse.ts'
import type { Logger } from '../logger.ts'
import type { Config } from '../config.ts'
import type { ShardSet } from './shard-set.ts'
import { earliestArrival, realTimer, settle, sumRows } from './pending-write.ts'
import type { CancelTimer, PendingWrite, WriteOptions } from './pending-write.ts'
import { InsertRetries } from './insert-retries.ts'
import type { InsertStats } from './insert-retries.ts'
import { OutcomeCheck } from './outcome-check.ts'
import { StallGate } from './stall-gate.ts'

// The public API of the writer, whichever module holds each part.
export { classifyInsertError, isAmbiguousFailure, insertFailureKinds } from './insert-errors.ts'
export type { FailureKind } from './insert-errors.ts'
export type { InsertStats } from './insert-retries.ts'
export type { CancelTimer, WriteIdentity, WriteOptions } from './pending-write.ts'

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
  /** ms between the stall gate's probes while ClickHouse does not answer (default 250). */
  stallProbeIntervalMs?: number
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

function positiveInteger (name: string, value: number): number {
  if (!Number.isSafeInteger(value) || value <= 0) throw new TypeError(`${name} must be a positive integer (got ${value})`)
  return value
}

function nonNegative (name: string, value: number): number {
  if (!Number.isFinite(value) || value < 0) throw new TypeError(`${name} must be a number >= 0 (got ${value})`)
  return value
}

export class BatchWriter {
  readonly #table: string
  readonly #format: RowFormat
  readonly #log: Logger
  readonly #maxBatchRows: number
  readonly #maxBatchBytes: number
  readonly #flushIntervalMs: number
  readonly #minInsertIntervalMs: number
  readonly #idleInsertIntervalMs: number
  /** ms kept free after an attempt's abort for the outcome check, within the write's answerBy. */
  readonly #checkReserveMs: number
  /** ms an attempt needs at least; with less left, it is not started. */
  readonly #minAttemptMs: number
  readonly #maxPendingBytes: number
  readonly #onInsert: ((stats: InsertStats) => void) | undefined
  readonly #now: () => number
  readonly #setTimer: (fn: () => void, ms: number) => CancelTimer
  /** Attempts, retries and the outcome check of each batch (insert-retries.ts). */
  readonly #retries: InsertRetries
  /** answerBy - calledAt of a write: retryTimeoutMs + attemptTimeoutMs. */
  readonly #holdMs: number
  /** Closed after an attempt without an answer until ClickHouse answers (stall-gate.ts); single node only. */
  readonly #gate: StallGate | undefined

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
  #lastInsertEndedAt = -Infinity
  #timer: CancelTimer | undefined
  #timerDueAt = 0
  #expiryTimer: CancelTimer | undefined
  #expiryDueAt = Infinity
  #closing: Promise<void> | undefined

  constructor (options: BatchWriterOptions) {
    this.#table = options.table
    this.#log = options.log
    if (options.columns.length === 0) throw new TypeError('columns must not be empty')
    this.#format = options.format ?? 'TabSeparated'
    if (!rowFormats.has(this.#format)) throw new TypeError(`format must be one of ${[...rowFormats].join(', ')} (got ${String(this.#format)})`)
    const statement = `INSERT INTO ${quoteIdentifier(options.table)} (${options.columns.map(quoteIdentifier).join(', ')}) FORMAT ${this.#format}`
    this.#maxBatchRows = positiveInteger('maxBatchRows', options.maxBatchRows)
    this.#maxBatchBytes = positiveInteger('maxBatchBytes', options.maxBatchBytes ?? defaults.maxBatchBytes)
    this.#flushIntervalMs = nonNegative('flushIntervalMs', options.flushIntervalMs)
    this.#minInsertIntervalMs = nonNegative('minInsertIntervalMs', options.minInsertIntervalMs)
    this.#idleInsertIntervalMs = Math.min(nonNegative('idleInsertIntervalMs', options.idleInsertIntervalMs), this.#minInsertIntervalMs)
    const retryTimeoutMs = nonNegative('retryTimeoutMs', options.retryTimeoutMs)
    const attemptTimeoutMs = positiveInteger('attemptTimeoutMs', options.attemptTimeoutMs)
    this.#holdMs = retryTimeoutMs + attemptTimeoutMs
    // A fifth of an attempt (1 s of the default 5 s) for the check: a few small queries that take
    // milliseconds on an answering ClickHouse. An attempt shorter than a tenth (500 ms) would
    // mostly time out and only add unknown outcomes.
    this.#checkReserveMs = attemptTimeoutMs / 5
    this.#minAttemptMs = attemptTimeoutMs / 10
    this.#maxPendingBytes = positiveInteger('maxPendingBytes', options.maxPendingBytes)
    const retryAfterS = Math.max(1, Math.ceil(nonNegative('retryAfterS', options.retryAfterS ?? defaults.retryAfterS)))
    this.#onInsert = options.onInsert
    this.#now = options.now ?? (() => performance.now())
    this.#setTimer = options.setTimer ?? realTimer
    const clock = { now: this.#now, setTimer: this.#setTimer }
    // Cluster mode has its own health per host (shard-set.ts) and no outcome check: no gate there.
    this.#gate = options.shards !== undefined ? undefined : new StallGate({
      clickhouse: options.clickhouse, log: this.#log, setTimer: this.#setTimer, onOpen: () => { this.#schedule() },
      ...(options.stallProbeIntervalMs === undefined ? {} : { probeIntervalMs: options.stallProbeIntervalMs }),
    })
    const check = new OutcomeCheck({
      clickhouse: options.clickhouse, table: options.table, log: this.#log, ...clock, onAnswer: () => { this.#gate?.answered() },
    })
    this.#retries = new InsertRetries({
      clickhouse: options.clickhouse, statement, table: options.table, log: this.#log,
      retryTimeoutMs, attemptTimeoutMs, checkReserveMs: this.#checkReserveMs, minAttemptMs: this.#minAttemptMs,
      retryAfterS, ...clock, check, shards: options.shards, insertQuorum: options.insertQuorum ?? 0,
      queryIdPrefix: 'sluice-insert-',
      onAttempt: (stats) => {
        if (stats.ok) this.#gate?.answered()
        else if (stats.ambiguous) this.#gate?.noAnswer()
        this.#report(stats)
      },
    })
  }

  /** Bytes handed to write() and not yet settled: held, waiting and in flight. */
  get pendingBytes (): number { return this.#heldBytes + this.#waitingBytes + this.#sendingBytes }

  /** Rows handed to write() and not yet settled. */
  get pendingRows (): number { return this.#heldRows + this.#waitingRows + this.#sendingRows }

  /** ms since the writer last held rows (0 while it holds some): whether ingest is idle (read-limits.ts). */
  idleMs (): number {
    return this.pendingRows > 0 ? 0 : Math.max(0, this.#now() - this.#lastInsertEndedAt)
  }

  /** How many stalls the writer saw: attempts that ended without an answer while inserts flowed. */
  get stalls (): number { return this.#gate?.closedTimes ?? 0 }

  /** True while the stall gate keeps new attempts back (ClickHouse has not answered since an attempt got no answer). */
  get stalled (): boolean { return this.#gate !== undefined && !this.#gate.isOpen }

  /** True while writes are being held for want of room: admission should answer 429. */
  get needsDrain (): boolean {
    return this.#held.length > 0 || this.#waitingBytes + this.#sendingBytes >= this.#maxPendingBytes || this.#isBehind()
  }

  /**
   * Behind its deadlines: the oldest queued write has waited a third of the hold for its insert
   * (a stall, or inserts slower than the queue grows). More writes now would only expire in the
   * queue as 503s: admission answers 429 server_busy instead (contract, "Memory").
   */
  #isBehind (): boolean {
    const oldest = this.#waiting[0]
    return oldest !== undefined && this.#now() - oldest.calledAt > this.#holdMs / 3
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
      answerBy: Math.min(options.heldSince ?? calledAt, calledAt) + this.#holdMs,
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
    this.#closing ??= this.flush().then(() => { this.#clearTimer(); this.#clearExpiryTimer(); this.#gate?.stop() })
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
   * timer for the next one. Deadlines are nearly FIFO (a write's heldSince may move its own
   * earlier), so every queued write is looked at: the queues are bounded by maxPendingBytes.
   */
  #expireQueued (): void {
    const now = this.#now()
    const expired: PendingWrite[] = []
    let next = Infinity
    for (const queue of [this.#waiting, this.#held]) {
      for (const w of queue) {
        const lastStart = this.#lastStartFor(w)
        if (lastStart <= now) expired.push(w)
        else if (lastStart < next) next = lastStart
      }
    }
    for (const w of expired) this.#remove(w)
    if (expired.length > 0) {
      this.#log.error('ClickHouse insert slot busy past the writes\' deadline; answering 503', {
        table: this.#table, writes: expired.length, rows: sumRows(expired),
      })
      const err = this.#unavailable()
      for (const w of expired) settle(w, err)
      this.#admitHeld() // their bytes are free
    }
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
    // A stall: no new first attempt until ClickHouse answers (the gate calls #schedule then).
    if (this.#gate !== undefined && !this.#gate.isOpen) { this.#clearTimer(); return }
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
      await this.#retries.store(batch)
    } catch (err) {
      // store() settles every write itself; this only guards against a bug in it.
      this.#log.error('batch writer failed unexpectedly', { table: this.#table, err })
      for (const w of batch) settle(w, new SluiceError('internal_error', undefined, { cause: err }))
    } finally {
      this.#sending = null
      this.#sendingRows = 0
      this.#sendingBytes = 0
      this.#lastInsertEndedAt = this.#now()
      this.#schedule()
    }
  }

  #unavailable (cause?: unknown): SluiceError {
    return this.#retries.unavailable(cause)
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
