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
// - 200 means durable: write() resolves only after the INSERT holding its rows has succeeded.
// - Atomic: every insert is sent with max_insert_block_size >= its row count, so ClickHouse parses
//   it into one block and writes it as one part per partition it touches. A failed insert leaves
//   nothing behind, with one exception this writer cannot close on a plain MergeTree: a batch
//   whose rows span several partitions (days) is committed part by part, so a failure between
//   two of those parts (disk full, server crash) stores the first ones and the retry stores them
//   again. Likewise a timeout or reset after ClickHouse received the whole body is ambiguous: the
//   retry may store the rows a second time. And a body cut off on its way (this process killed
//   while sending it) is not always refused: 18.16 takes the end of the connection for the end
//   of a chunked body, and stores the rows before the cut when it falls between two rows
//   (checked by hand: 32,000 rows without the last chunk's terminator were stored). Nobody was
//   answered 200 for them, so their clients send them again. In those rare cases rows are stored
//   at least once; a resolved write is never missing rows. (Hence also no streaming of a batch
//   into an insert opened before the batch is complete: a crash would store a part of it.)
// - When: one insert is in flight at a time. The next one starts as soon as the previous returned
//   and either a full batch waits (maxBatchRows or maxBatchBytes of rows, or half of
//   maxPendingBytes, or writes held for want of room) or the oldest waiting row has waited
//   flushIntervalMs and minInsertIntervalMs have passed since the previous insert started. A
//   row's wait counts from its request's arrival (write()'s `arrivedAt`), not from write(): the
//   reading and parsing before write() are part of it, so the interval bounds what a row waits
//   in all. flush() and close() send at once.
// - ClickHouse down: a failed insert is retried with exponential backoff and jitter while the
//   oldest write in it is younger than retryTimeoutMs (every batch gets at least one attempt, so
//   a backlog built up during an outage drains fast instead of waiting retryTimeoutMs per batch).
//   Past that, its writes reject with SluiceError('storage_unavailable', { retryAfter }).
//   Failures with no answer from ClickHouse (refused, reset, timeout) and the transient server
//   codes below are retried; other server answers are not: a malformed batch (parse error, a
//   serializer bug) is logged as an error and each of its writes is retried alone, so only the
//   guilty one fails (internal_error); a configuration error (unknown table, auth, readonly)
//   fails the batch at once with storage_unavailable.
// - Memory: pendingBytes counts every byte handed to write() and not yet settled. While the
//   bytes waiting and in flight would exceed maxPendingBytes, new writes are held (FIFO) and
//   `needsDrain` is true: admission should answer 429 server_busy. A write may pass an
//   AbortSignal: aborted before its insert starts, it is dropped and rejects with the reason.
// - Shutdown: close() refuses new writes with SluiceError('shutting_down') from the moment it is
//   called and resolves when every write accepted before has settled.
import { Readable } from 'node:stream'
import { ClickHouseError, clickhouseCodes } from './clickhouse.ts'
import type { ClickHouse, InsertSettings } from './clickhouse.ts'
import { quoteIdentifier } from './sql.ts'
import { SluiceError } from '../errors.ts'
import type { Logger } from '../logger.ts'

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
  /**
   * Rows per insert; default 100_000: ~20 MB at 200 B/row, ~100-150 ms to insert on 18.16
   * (bench/writer.bench.ts), and below max_insert_block_size even without the per-insert setting.
   */
  maxBatchRows?: number
  /** Bytes per insert; default 64 MiB, which bounds one insert's memory on both sides. */
  maxBatchBytes?: number
  /** Milliseconds the oldest row waits for company, from its request's arrival, before it is sent; default 250. */
  flushIntervalMs?: number
  /** Milliseconds between the starts of two non-full inserts; default 200: at most 5 parts/s. */
  minInsertIntervalMs?: number
  /** Milliseconds a write is kept trying from when write() was called; default 10_000. */
  retryTimeoutMs?: number
  /** Bytes waiting and in flight before writes are held; default 256 MiB (SPEC 6 server limit). */
  maxPendingBytes?: number
  /** Seconds sent as Retry-After with storage_unavailable; default 5, whole seconds >= 1. */
  retryAfterS?: number
  /** Called after every insert attempt, for metrics. Must not throw. */
  onInsert?: (stats: InsertStats) => void
}

const defaults = {
  maxBatchRows: 100_000,
  maxBatchBytes: 64 * 1024 * 1024,
  flushIntervalMs: 250,
  minInsertIntervalMs: 200,
  retryTimeoutMs: 10_000,
  maxPendingBytes: 256 * 1024 * 1024,
  retryAfterS: 5,
} as const

/** Formats whose rows a writer can concatenate from many writes into one insert body. */
export type RowFormat = 'TabSeparated' | 'RowBinary'

/** ClickHouse's own max_insert_block_size default; never ask for less. */
const serverInsertBlockRows = 1_048_576
/** Backoff: the first retry after ~100 ms, doubling, at most ~2 s between attempts. */
const backoffBaseMs = 100
const backoffMaxMs = 2_000

const c = clickhouseCodes
const transientCodes: ReadonlySet<number> = new Set([
  c.TOO_MANY_PARTS, c.MEMORY_LIMIT_EXCEEDED, c.CANNOT_ALLOCATE_MEMORY, c.TIMEOUT_EXCEEDED,
  c.TOO_MANY_SIMULTANEOUS_QUERIES, c.SOCKET_TIMEOUT, c.NETWORK_ERROR, c.TABLE_IS_READ_ONLY,
  c.NOT_ENOUGH_SPACE,
])
const malformedDataCodes: ReadonlySet<number> = new Set([
  c.UNEXPECTED_END_OF_FILE, c.CANNOT_PARSE_TEXT, c.CANNOT_PARSE_ESCAPE_SEQUENCE,
  c.CANNOT_PARSE_QUOTED_STRING, c.CANNOT_PARSE_INPUT_ASSERTION_FAILED, c.ATTEMPT_TO_READ_AFTER_EOF,
  c.CANNOT_READ_ALL_DATA, c.CANNOT_PARSE_DATE, c.CANNOT_PARSE_DATETIME, c.CANNOT_PARSE_NUMBER,
  c.INCORRECT_DATA, c.TOO_LARGE_STRING_SIZE,
])

/** transient: retried; malformed: the rows are bad, never retried; refused: anything else, never retried. */
export const insertFailureKinds = ['transient', 'malformed', 'refused'] as const
export type FailureKind = typeof insertFailureKinds[number]

/** Retry what may pass by itself; never what will fail the same way again. */
export function classifyInsertError (err: unknown): FailureKind {
  if (!(err instanceof ClickHouseError)) return 'refused'
  if (err.chCode === 0 || transientCodes.has(err.chCode)) return 'transient' // 0: no answer at all
  return malformedDataCodes.has(err.chCode) ? 'malformed' : 'refused'
}

export interface WriteOptions {
  /** Aborted before the write's insert starts: the write is dropped and rejects with the reason. */
  signal?: AbortSignal
  /**
   * performance.now() when the rows' request arrived: the flush interval counts from here.
   * Default, and at the latest: when write() is called.
   */
  arrivedAt?: number
}

interface PendingWrite {
  seq: number
  chunks: readonly Buffer[]
  rows: number
  bytes: number
  /** performance.now() when write() was called: the retry deadline counts from here. */
  calledAt: number
  /** performance.now() when its request arrived: the flush interval counts from here. */
  arrivedAt: number
  state: 'held' | 'waiting' | 'sending' | 'done'
  promise: Promise<void>
  resolve: () => void
  reject: (err: unknown) => void
  signal: AbortSignal | undefined
  onAbort: (() => void) | undefined
}

type InsertOutcome = { ok: true } | { ok: false, kind: FailureKind, err: unknown, attempts: number }

function positiveInteger (name: string, value: number): number {
  if (!Number.isSafeInteger(value) || value <= 0) throw new TypeError(`${name} must be a positive integer (got ${value})`)
  return value
}

function nonNegative (name: string, value: number): number {
  if (!Number.isFinite(value) || value < 0) throw new TypeError(`${name} must be a number >= 0 (got ${value})`)
  return value
}

function settle (w: PendingWrite, err?: unknown): void {
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
  readonly #retryTimeoutMs: number
  readonly #maxPendingBytes: number
  readonly #retryAfterS: number
  readonly #onInsert: ((stats: InsertStats) => void) | undefined

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
  #timer: NodeJS.Timeout | undefined
  #timerDueAt = 0
  #closing: Promise<void> | undefined

  constructor (options: BatchWriterOptions) {
    this.#clickhouse = options.clickhouse
    this.#table = options.table
    this.#log = options.log
    if (options.columns.length === 0) throw new TypeError('columns must not be empty')
    this.#format = options.format ?? 'TabSeparated'
    if (this.#format !== 'TabSeparated' && this.#format !== 'RowBinary') throw new TypeError(`format must be TabSeparated or RowBinary (got ${String(this.#format)})`)
    this.#statement = `INSERT INTO ${quoteIdentifier(options.table)} (${options.columns.map(quoteIdentifier).join(', ')}) FORMAT ${this.#format}`
    this.#maxBatchRows = positiveInteger('maxBatchRows', options.maxBatchRows ?? defaults.maxBatchRows)
    this.#maxBatchBytes = positiveInteger('maxBatchBytes', options.maxBatchBytes ?? defaults.maxBatchBytes)
    this.#flushIntervalMs = nonNegative('flushIntervalMs', options.flushIntervalMs ?? defaults.flushIntervalMs)
    this.#minInsertIntervalMs = nonNegative('minInsertIntervalMs', options.minInsertIntervalMs ?? defaults.minInsertIntervalMs)
    this.#retryTimeoutMs = nonNegative('retryTimeoutMs', options.retryTimeoutMs ?? defaults.retryTimeoutMs)
    this.#maxPendingBytes = positiveInteger('maxPendingBytes', options.maxPendingBytes ?? defaults.maxPendingBytes)
    this.#retryAfterS = Math.max(1, Math.ceil(nonNegative('retryAfterS', options.retryAfterS ?? defaults.retryAfterS)))
    this.#onInsert = options.onInsert
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
    if (last === undefined || (this.#format === 'TabSeparated' && last[last.byteLength - 1] !== 0x0a)) {
      return Promise.reject(new TypeError(last === undefined ? `${rows} rows in no bytes` : 'rows must be TabSeparated lines, each ending in \\n'))
    }
    if (signal?.aborted) return Promise.reject(signal.reason)

    let resolve!: () => void
    let reject!: (err: unknown) => void
    const promise = new Promise<void>((res, rej) => { resolve = res; reject = rej })
    const calledAt = performance.now()
    const w: PendingWrite = {
      seq: ++this.#seq, chunks, rows, bytes, calledAt, arrivedAt: Math.min(options.arrivedAt ?? calledAt, calledAt),
      state: 'held', promise, resolve, reject, signal, onAbort: undefined,
    }
    if (signal !== undefined) {
      w.onAbort = () => this.#drop(w)
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
    this.#closing ??= this.flush().then(() => this.#clearTimer())
    return this.#closing
  }

  /** An aborted write leaves the queue, unless its insert has started (too late to take back). */
  #drop (w: PendingWrite): void {
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
      return
    }
    settle(w, w.signal?.reason)
    this.#schedule()
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

  #schedule (): void {
    this.#admitHeld()
    if (this.#sending !== null) return // its completion schedules again
    if (this.#waiting.length === 0) { this.#clearTimer(); return }
    const now = performance.now()
    let dueAt: number
    // Full, flushed, or memory filling up (then waiting longer for company only risks holding).
    if (this.#waiting[0].seq <= this.#flushThroughSeq || this.#waitingRows >= this.#maxBatchRows ||
        this.#waitingBytes >= this.#maxBatchBytes || this.#held.length > 0 ||
        this.#waitingBytes + this.#sendingBytes >= this.#maxPendingBytes / 2) {
      dueAt = now
    } else {
      dueAt = Math.max(this.#waitingSince + this.#flushIntervalMs, this.#lastInsertStartedAt + this.#minInsertIntervalMs)
    }
    if (dueAt <= now) {
      this.#clearTimer()
      void this.#sendBatch()
    } else if (this.#timer === undefined || this.#timerDueAt !== dueAt) {
      this.#clearTimer()
      this.#timerDueAt = dueAt
      this.#timer = setTimeout(() => { this.#timer = undefined; this.#schedule() }, Math.ceil(dueAt - now))
    }
  }

  #clearTimer (): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer)
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
    this.#lastInsertStartedAt = performance.now()
    try {
      await this.#storeBatch(batch)
    } catch (err) {
      // #storeBatch settles every write itself; this only guards against a bug in it.
      this.#log.error('batch writer failed unexpectedly', { table: this.#table, err })
      for (const w of batch) if (w.state !== 'done') settle(w, new SluiceError('internal_error', undefined, { cause: err }))
    } finally {
      this.#sending = null
      this.#sendingRows = 0
      this.#sendingBytes = 0
      this.#schedule()
    }
  }

  async #storeBatch (batch: PendingWrite[]): Promise<void> {
    const deadline = batch[0].calledAt + this.#retryTimeoutMs // batch[0] is the oldest write
    const outcome = await this.#insertWithRetry(batch, deadline)
    if (outcome.ok) {
      for (const w of batch) settle(w)
      return
    }
    if (outcome.kind === 'malformed' && batch.length > 1) {
      // One write's bytes are bad; store the others, each alone (each is one block: all or nothing).
      this.#log.error('ClickHouse could not parse a batch; inserting its writes one by one', {
        table: this.#table, writes: batch.length, rows: sumRows(batch), err: outcome.err,
      })
      for (const w of batch) {
        const alone = await this.#insertWithRetry([w], deadline)
        settle(w, alone.ok ? undefined : this.#failureFor(alone, [w]))
      }
      return
    }
    const err = this.#failureFor(outcome, batch)
    for (const w of batch) settle(w, err)
  }

  /** Logs a failed insert and makes the error its writes reject with. */
  #failureFor (outcome: InsertOutcome & { ok: false }, writes: readonly PendingWrite[]): SluiceError {
    const fields = { table: this.#table, writes: writes.length, rows: sumRows(writes), attempts: outcome.attempts, err: outcome.err }
    if (outcome.kind === 'malformed') {
      this.#log.error('ClickHouse could not parse the rows of a write: serializer bug, rows dropped', fields)
      return new SluiceError('internal_error', undefined, { cause: outcome.err })
    }
    this.#log.error(outcome.kind === 'transient'
      ? 'ClickHouse insert failed past its retries'
      : 'ClickHouse refused the insert; not retried', fields)
    return new SluiceError('storage_unavailable', undefined, { retryAfter: this.#retryAfterS, cause: outcome.err })
  }

  async #insertWithRetry (writes: readonly PendingWrite[], deadline: number): Promise<InsertOutcome> {
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
    const settings: InsertSettings = {
      max_insert_block_size: String(Math.max(rows, serverInsertBlockRows)),
      parallel_view_processing: '1',
    }
    for (let attempt = 1; ; attempt++) {
      const startedAt = performance.now()
      let failure: unknown
      try {
        // Streamed chunk by chunk: no copy of the batch into one contiguous Buffer.
        await this.#clickhouse.insertRaw(this.#statement, Readable.from(chunks), undefined, settings)
      } catch (err) {
        failure = err ?? new Error('insert failed')
      }
      const ok = failure === undefined
      this.#report({ rows, bytes, durationMs: performance.now() - startedAt, ok, writes: writes.length, attempt })
      if (ok) return { ok: true }
      const kind = classifyInsertError(failure)
      const ceiling = Math.min(backoffMaxMs, backoffBaseMs * 2 ** (attempt - 1))
      const delayMs = ceiling / 2 + Math.random() * ceiling / 2 // "equal jitter": spread, never zero
      if (kind !== 'transient' || performance.now() + delayMs >= deadline) return { ok: false, kind, err: failure, attempts: attempt }
      this.#log.warn('ClickHouse insert failed; retrying', { table: this.#table, rows, attempt, delayMs: Math.round(delayMs), err: failure })
      await new Promise((resolve) => setTimeout(resolve, delayMs))
    }
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
