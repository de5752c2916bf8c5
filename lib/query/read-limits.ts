// Every read of events (events, stats, fields, context, export) runs through ReadLimits
// (docs/api.md section 7.9, "Limits of reads"), so that a heavy read cannot starve ingest or the
// other readers:
// - at most `query.maxConcurrentPerOrg` reads of one org at once;
// - of those, at most `query.maxScansPerOrg` scans: reads that go through the raw rows of more
//   than an hour (a filter, a grouping, an export: isScan). max_threads bounds one statement, not
//   an org: four concurrent single-threaded scans took 77% of both cores and cut ingest to 46%,
//   one at a time left it 79% (bench/README.md, "Reads against ingest"). Reads a rollup or a
//   sample answers (a dashboard's first render) keep the other slots;
// - a read that finds its slots taken waits for them in the org's queue, first come first served,
//   at most `query.maxQueueMs`, then answers `429 too_many_reads` with Retry-After (as
//   VictoriaLogs' -search.maxQueueDuration). Without the queue a client looping on a heavy read
//   took the freed scan slot again at once, each time: a client that honoured Retry-After never
//   ran (explore14, F1). A freed slot goes to the oldest waiter that can use it, before any read
//   that comes later: a read that is no scan may pass a scan waiting for the scan slot, never a
//   scan another scan. At most 4 x maxConcurrentPerOrg reads of an org wait; one more answers 429
//   at once. A read refused that way, or after its wait, keeps its place: asked again (the same
//   token and request) within its Retry-After plus maxQueueMs, it queues by its first arrival, so
//   a client that honours Retry-After is not sent behind clients that ask again at once
//   (explore15 F3: such a client got half the answers of a greedy one). Retry-After then counts
//   the waiters ahead of it at the org's mean hold of a slot;
// - each ClickHouse query of a read carries limits ClickHouse enforces itself: max_execution_time,
//   max_memory_usage, max_rows_to_group_by (overflow: throw), and max_threads (1 by default: a
//   read takes one core, inserts and their merges keep the other; measured in bench/README.md,
//   "Reads against ingest"). A statement that starts while the server is otherwise idle (no
//   ingest request, no rows waiting for an insert for idleAfterMs, no other statement of a read
//   running, the read's own included: /fields and stats run theirs side by side) gets
//   `query.idleThreads` instead: one core is the ingest's share only when ingest is there to take
//   it, and a rare attribute's page over 30 M events on an idle 2-core machine took 38% less time
//   (bench/README.md, "Idle threads"). Each statement of a read decides again, so a long read
//   falls back to maxThreads for its next statement once ingest or another statement starts; one
//   statement already running keeps its threads to its end (at most query.timeoutMs). Where the
//   server has os_thread_priority (26.x; the embedded engine, where reads and inserts share
//   Sluice's process), a read's threads run at nice 19: the OS then gives the cores to the
//   inserts (and, in-process, the parse workers) first;
// - a query past a limit answers `504 query_timeout` (time) or `422 query_too_expensive` (memory,
//   groups, rows), never a 500 or a crash; also when ClickHouse hangs and cannot enforce its own
//   limit: each query has a deadline 2 s past its max_execution_time (withOptions);
// - a read whose client went away is stopped in ClickHouse (KILL QUERY by the read's query_id
//   prefix), and keeps its slots until it has stopped: 18.16 runs a SELECT whose client went away
//   to its end, so without the KILL an abandoned read went on for up to max_execution_time beside
//   the next ones, past the limits above. A read that finds the org's slots full while some of
//   them belong to reads being stopped waits for those (a KILL takes milliseconds) however short
//   the queue's wait: a dashboard that replaces its reads as the user types gets no 429 for the
//   reads it gave up. A read whose client goes away while it waits leaves the queue.
// ClickHouse errors are told apart by their codes (clickhouse.ts), never by message text.
import { createHash, randomUUID } from 'node:crypto'
import { SluiceError } from '../errors.ts'
import { ClickHouseError, clickhouseCodes } from '../storage/clickhouse.ts'
import type { ClickHouse, RequestOptions } from '../storage/clickhouse.ts'
import type { Config } from '../config.ts'
import type { RequestContext } from '../http/reply.ts'

/** The query settings the limits use (an export's stall is the export route's: export-route.ts). */
export type ReadLimitSettings = Omit<Config['query'], 'exportStallMs'>

/**
 * Retry-After of a 429 too_many_reads: about as long as the reads holding the slots have run so
 * far (the youngest of them), between 1 s (reads last about a second) and 30 s (an export that
 * has run for minutes holds the scan slot for minutes more).
 */
const minRetryAfterS = 1
const maxRetryAfterS = 30

/** How much a slot's latest hold weighs in the org's mean hold (an exponential moving average). */
const holdWeight = 0.3

/** Tickets kept at most (a read refused by the queue, its place kept for its return): the oldest go first. */
const maxTickets = 10_000

/** ms a read whose client went away waits for ClickHouse to stop its queries (KILL ... SYNC). */
const stopTimeoutMs = 5_000

/** ms without ingest after which a read's statements may take query.idleThreads. */
export const idleAfterMs = 1_000

/** How a read tells whether the server is otherwise idle (the idle threads, above). */
export interface ReadLoad {
  /** ms since ingest last had a request or rows in hand; 0 while it has some. */
  ingestIdleMs: () => number
  /** max_threads of a read's statement on an idle server; at most query.maxThreads: never more. */
  idleThreads: number
  /**
   * os_thread_priority (the nice value, 1-19) of the server's threads running a read's
   * statements, where the server has the setting (server-features.ts `threadPriority`); 0: none.
   */
  niceness?: number
}

/** ms past a query's max_execution_time after which Sluice gives up on an answer (withOptions). */
const deadlineGraceMs = 2_000

/** ClickHouse codes of a read past a size limit: memory, rows to group, rows or bytes to read. */
const tooExpensiveCodes: ReadonlySet<number> = new Set([
  clickhouseCodes.MEMORY_LIMIT_EXCEEDED,
  clickhouseCodes.TOO_MANY_ROWS,
  clickhouseCodes.TOO_MANY_BYTES,
  clickhouseCodes.TOO_MANY_ROWS_OR_BYTES,
])

export class ReadLimits {
  readonly #limits: ReadLimitSettings
  /** Per org, when each of its running reads (and scans) started (ms, `now`). */
  readonly #running = new Map<string, number[]>()
  readonly #scans = new Map<string, number[]>()
  readonly #now: () => number
  /** Reads of an org whose client went away, being stopped in ClickHouse (they hold slots). */
  readonly #stopping = new Map<string, number>()
  /** Per org, the reads waiting for slots, oldest first. */
  readonly #queues = new Map<string, Waiter[]>()
  readonly #setTimer: SetTimer
  /** Per org and slot kind (`<org>\0scan`, `<org>\0read`), the mean ms a read held its slot. */
  readonly #meanHoldMs = new Map<string, number>()
  /** Per request key (ticketOf), the first arrival of a read the queue refused, until `expires`. */
  readonly #tickets = new Map<string, { since: number, expires: number }>()
  readonly #load: ReadLoad | null
  /** Statements of reads (of every org) running in ClickHouse now. */
  #statements = 0
  /** The ClickHouse settings of every read query (max_threads: maxThreads; see #threads()). */
  readonly settings: Readonly<Record<string, number | string>>

  constructor (limits: ReadLimitSettings, now: () => number = Date.now, setTimer: SetTimer = defaultSetTimer, load: ReadLoad | null = null) {
    this.#limits = limits
    this.#now = now
    this.#setTimer = setTimer
    this.#load = load
    this.settings = {
      // Whole seconds: 18.16 reads max_execution_time as seconds.
      max_execution_time: Math.max(1, Math.ceil(limits.timeoutMs / 1000)),
      max_memory_usage: limits.maxMemoryBytes,
      max_rows_to_group_by: limits.maxGroupKeys,
      group_by_overflow_mode: 'throw',
      max_threads: limits.maxThreads,
      // A q within its limits (1,000 characters, 20 terms) is repeated in each part of a sampled
      // stats?by='s UNION ALL, is beside up to 500 matches' times in /fields', and on 26.x
      // each word with its fold tables: past ClickHouse's defaults of 256 KiB and 50,000 AST
      // elements, a valid q was a 503 (explore27b). The statements Sluice writes are bounded
      // by these limits of q, so the parser's limits are raised for reads, not removed.
      max_query_size: 16 * 1024 * 1024,
      max_ast_elements: 2_000_000,
      max_expanded_ast_elements: 2_000_000,
      // Below ingest for the OS scheduler, where the server can say so (ReadLoad.niceness).
      ...(load?.niceness ? { os_thread_priority: load.niceness } : {}),
    }
  }

  /** Reads of `orgId` running now. */
  running (orgId: string): number {
    return this.#running.get(orgId)?.length ?? 0
  }

  /** Reads of every org running now, and waiting for slots (the metrics' gauges). */
  get totals (): { running: number, waiting: number } {
    let running = 0
    let waiting = 0
    for (const r of this.#running.values()) running += r.length
    for (const q of this.#queues.values()) waiting += q.length
    return { running, waiting }
  }

  /** max_threads of a read's statement starting now: idleThreads when no other statement runs and ingest is idle. */
  #threads (): number {
    const load = this.#load
    const busy = this.#limits.maxThreads
    if (load === null || load.idleThreads <= busy || this.#statements > 0) return busy
    return load.ingestIdleMs() >= idleAfterMs ? load.idleThreads : busy
  }

  /** A statement of a read starts: its settings (#threads()), and its end, to call once it is over. */
  #statement (): { settings: Readonly<Record<string, number | string>>, end: () => void } {
    const threads = this.#threads()
    this.#statements++
    let ended = false
    return {
      settings: threads === this.settings.max_threads ? this.settings : { ...this.settings, max_threads: threads },
      end: () => {
        if (ended) return
        ended = true
        this.#statements--
      },
    }
  }

  /** Reads of `orgId` waiting for slots now. */
  waiting (orgId: string): number {
    return this.#queues.get(orgId)?.length ?? 0
  }

  /**
   * Runs one read of `orgId` for the request `ctx`: `fn` gets a ClickHouse whose queries carry the
   * read settings and stop when the client goes away. Throws too_many_reads when the org is at
   * its limit; a query past a limit throws query_timeout or query_too_expensive.
   */
  async run<T> (ctx: RequestContext, orgId: string, clickhouse: ClickHouse, fn: (clickhouse: ClickHouse) => Promise<T>, scan = false): Promise<T> {
    const release = await this.#acquireQueued(ctx, orgId, scan, ticketOf(ctx))
    const aborter = new AbortController()
    const queryIds = `sluice-read-${randomUUID()}-`
    let stopped: Promise<void> | undefined
    // Stops the read's queries in ClickHouse: its client went away, or a query is past its deadline.
    const stop = (): void => {
      if (stopped !== undefined) return
      this.#stopping.set(orgId, (this.#stopping.get(orgId) ?? 0) + 1)
      // Errors are dropped: the read is over either way, and max_execution_time bounds a query
      // the KILL did not reach.
      stopped = clickhouse.cancel(queryIds, { signal: AbortSignal.timeout(stopTimeoutMs) }).catch(() => {})
    }
    const onClose = (): void => {
      if (ctx.res.writableFinished || aborter.signal.aborted) return
      aborter.abort()
      stop()
    }
    ctx.res.once('close', onClose)
    try {
      return await fn(withOptions(clickhouse, { signal: aborter.signal }, () => this.#statement(), queryIds, stop))
    } catch (err) {
      throw readError(err)
    } finally {
      ctx.res.off('close', onClose)
      // A read being stopped answers now (a 504 past its deadline) but keeps its slots until
      // ClickHouse has stopped its queries.
      if (stopped === undefined) {
        release()
      } else {
        void stopped.then(() => {
          const left = (this.#stopping.get(orgId) ?? 1) - 1
          if (left === 0) this.#stopping.delete(orgId)
          else this.#stopping.set(orgId, left)
          release()
        })
      }
    }
  }

  /**
   * acquire(), or a place in the org's queue until a slot frees: at most maxQueueMs (429 past it),
   * or 2 x stopTimeoutMs when reads being stopped hold slots. Leaves the queue when the client goes.
   */
  #acquireQueued (ctx: RequestContext, orgId: string, scan: boolean, ticket: string | undefined): Promise<() => void> {
    const now = this.#now()
    const kept = ticket === undefined ? undefined : this.#tickets.get(ticket)
    if (kept !== undefined) this.#tickets.delete(ticket!)
    const since = kept !== undefined && kept.expires >= now ? kept.since : now
    const queue = this.#queues.get(orgId) ?? []
    let refused: SluiceError
    try {
      return Promise.resolve(this.acquire(orgId, scan))
    } catch (err) {
      if (!(err instanceof SluiceError)) throw err
      refused = err
    }
    const waitMs = Math.max(this.#limits.maxQueueMs, (this.#stopping.get(orgId) ?? 0) > 0 ? 2 * stopTimeoutMs : 0)
    if (waitMs === 0) return Promise.reject(refused)
    const maxWaiting = 4 * this.#limits.maxConcurrentPerOrg
    if (queue.length >= maxWaiting) {
      return Promise.reject(this.#refusal(orgId, scan, since, ticket, refused,
        `Reads of this organization waiting for a slot: ${queue.length}, the most that wait (${refused.message})`))
    }
    return new Promise((resolve, reject) => {
      const leave = (): void => {
        cancelTimer()
        ctx.res.off('close', onClose)
        const i = queue.indexOf(waiter)
        if (i >= 0) queue.splice(i, 1)
        if (queue.length === 0 && this.#queues.get(orgId) === queue) this.#queues.delete(orgId)
      }
      const onClose = (): void => {
        if (ctx.res.writableFinished) return
        leave()
        reject(new SluiceError('too_many_reads', 'the client went away while the read waited for a slot'))
      }
      const waiter: Waiter = {
        scan,
        since,
        grant: (release) => { leave(); resolve(release) },
      }
      const cancelTimer = this.#setTimer(() => {
        leave()
        // The answer of the moment: the slots may have changed hands while the read waited.
        try {
          resolve(this.acquire(orgId, scan))
        } catch (err) {
          reject(err instanceof SluiceError ? this.#refusal(orgId, scan, since, ticket, err, err.message) : err)
        }
      }, waitMs)
      ctx.res.once('close', onClose)
      // In order of first arrival: a read back with its ticket goes before those that came later.
      let at = queue.length
      while (at > 0 && queue[at - 1].since > since) at--
      queue.splice(at, 0, waiter)
      this.#queues.set(orgId, queue)
    })
  }

  /**
   * The 429 of a read the queue refuses (full, or past its wait): Retry-After is how long the
   * reads waiting ahead of it take at the org's mean hold of a slot (at least the slot holders'
   * estimate of `refused`, at most 30 s), and its place is kept under `ticket` until then plus
   * maxQueueMs.
   */
  #refusal (orgId: string, scan: boolean, since: number, ticket: string | undefined, refused: SluiceError, message: string): SluiceError {
    const ahead = (this.#queues.get(orgId) ?? []).filter((w) => w.since <= since && (w.scan || !scan)).length
    const meanHold = this.#meanHoldMs.get(`${orgId}\0${scan ? 'scan' : 'read'}`) ?? 0
    const slots = scan ? this.#limits.maxScansPerOrg : this.#limits.maxConcurrentPerOrg
    const drainS = Math.ceil(ahead * meanHold / Math.max(1, slots) / 1000)
    const retryAfter = Math.min(maxRetryAfterS, Math.max(refused.retryAfter ?? minRetryAfterS, drainS))
    if (ticket !== undefined) {
      if (this.#tickets.size >= maxTickets) this.#tickets.delete(this.#tickets.keys().next().value!)
      this.#tickets.set(ticket, { since, expires: this.#now() + retryAfter * 1000 + this.#limits.maxQueueMs })
    }
    return new SluiceError('too_many_reads', message, { retryAfter })
  }

  /** Gives freed slots to the org's waiting reads, oldest first, each that can take its slots now. */
  #grantWaiting (orgId: string): void {
    const queue = this.#queues.get(orgId)
    if (queue === undefined) return
    for (const waiter of [...queue]) {
      let release: () => void
      try {
        release = this.acquire(orgId, waiter.scan)
      } catch {
        continue
      }
      waiter.grant(release)
    }
  }

  /** A slot of `kind` was held `ms`: into the org's mean hold (Retry-After of the queue's 429s). */
  #noteHold (orgId: string, kind: 'scan' | 'read', ms: number): void {
    const key = `${orgId}\0${kind}`
    const mean = this.#meanHoldMs.get(key)
    this.#meanHoldMs.set(key, mean === undefined ? ms : mean + holdWeight * (ms - mean))
  }

  /**
   * Takes one of the org's read slots, and one of its scan slots for a scan (429 too_many_reads
   * when none is free); returns the release of both.
   */
  acquire (orgId: string, scan = false): () => void {
    const limits = this.#limits
    const start = this.#now()
    const releaseScan = scan
      ? takeSlot(this.#scans, orgId, limits.maxScansPerOrg, start, 'Reads of this organization scanning raw events over more than an hour')
      : undefined
    try {
      const release = takeSlot(this.#running, orgId, limits.maxConcurrentPerOrg, start, 'Reads of this organization running')
      let released = false
      return () => {
        if (released) return
        released = true
        release()
        releaseScan?.()
        this.#noteHold(orgId, scan ? 'scan' : 'read', this.#now() - start)
        this.#grantWaiting(orgId)
      }
    } catch (err) {
      releaseScan?.()
      throw err
    }
  }
}

/**
 * Takes a slot of orgId in `slots` (the start times of those taken) at `now`, or throws
 * too_many_reads at `limit` with a Retry-After from how long the holders have run; returns its
 * release (once).
 */
function takeSlot (slots: Map<string, number[]>, orgId: string, limit: number, now: number, what: string): () => void {
  const taken = slots.get(orgId) ?? []
  if (taken.length >= limit) {
    const youngest = Math.max(...taken)
    const retryAfter = Math.min(maxRetryAfterS, Math.max(minRetryAfterS, Math.ceil((now - youngest) / 1000)))
    throw new SluiceError('too_many_reads', `${what}: ${taken.length}; at most ${limit} at once`, { retryAfter })
  }
  taken.push(now)
  slots.set(orgId, taken)
  let released = false
  return () => {
    if (released) return
    released = true
    taken.splice(taken.indexOf(now), 1)
    if (taken.length === 0 && slots.get(orgId) === taken) slots.delete(orgId)
  }
}

/** A read waiting in its org's queue; `grant` hands it its slots' release. */
interface Waiter {
  scan: boolean
  /** When the read first arrived (ms, `now`): a ticket's, for a read back after a 429. */
  since: number
  grant: (release: () => void) => void
}

/**
 * The key a read's place in the queue is kept under after a 429: its credentials and request
 * (method and target: path and query), hashed; none without a request (a read run by Sluice itself).
 */
function ticketOf (ctx: RequestContext): string | undefined {
  const req = ctx.req as RequestContext['req'] | undefined
  if (req === undefined) return undefined
  return createHash('sha256').update(`${req.headers.authorization ?? ''}\0${req.method ?? ''}\0${req.url ?? ''}`).digest('base64url')
}

/** Schedules `fn` after `ms`; returns its cancel. Injectable: tests drive the queue's wait by hand. */
export type SetTimer = (fn: () => void, ms: number) => () => void

function defaultSetTimer (fn: () => void, ms: number): () => void {
  const timer = setTimeout(fn, ms)
  return () => clearTimeout(timer)
}

/** A read's failure as the API answers it: limits by their codes, anything else unchanged. */
export function readError (err: unknown): unknown {
  if (!(err instanceof ClickHouseError)) return err
  if (err.chCode === clickhouseCodes.TIMEOUT_EXCEEDED) return new SluiceError('query_timeout', undefined, { cause: err })
  if (tooExpensiveCodes.has(err.chCode)) return new SluiceError('query_too_expensive', undefined, { cause: err })
  return err
}

/**
 * `clickhouse` with `options` on every query (a caller's own options win), each query's id
 * `queryIds` and a number. A query asked for once the signal has aborted is not sent. A query
 * with a max_execution_time gets a deadline of its own, deadlineGraceMs later: ClickHouse enforces
 * the limit, but only while it runs; one that hangs (stopped, its disk stalled) would hold the
 * read until the client's idle timeout. Past the deadline the query is aborted, `stop` is called
 * (it KILLs the read's queries) and the read answers query_timeout.
 */
function withOptions (clickhouse: ClickHouse, options: RequestOptions,
  statement: () => { settings: Readonly<Record<string, number | string>>, end: () => void }, queryIds: string, stop: () => void): ClickHouse {
  let n = 0
  const next = (own: RequestOptions | undefined): { options: RequestOptions, deadline: AbortSignal | null, end: () => void } => {
    options.signal?.throwIfAborted()
    const { settings, end } = statement()
    const opts: RequestOptions = { queryId: `${queryIds}${n++}`, ...merged({ ...options, settings }, own) }
    const seconds = Number(opts.settings?.max_execution_time ?? 0)
    if (!(seconds > 0)) return { options: opts, deadline: null, end }
    const deadline = AbortSignal.timeout(seconds * 1000 + deadlineGraceMs)
    deadline.addEventListener('abort', stop, { once: true })
    return { options: { ...opts, signal: opts.signal === undefined ? deadline : AbortSignal.any([opts.signal, deadline]) }, deadline, end }
  }
  const timedOut = (err: unknown, deadline: AbortSignal | null): unknown =>
    deadline?.aborted === true && options.signal?.aborted !== true
      ? new SluiceError('query_timeout', 'ClickHouse did not answer within the read\'s time limit', { cause: err })
      : err
  const query = async <T>(statement: Parameters<ClickHouse['query']>[0], own: RequestOptions | undefined): Promise<T[]> => {
    const { options: opts, deadline, end } = next(own)
    try {
      return await clickhouse.query<T>(statement, opts)
    } catch (err) {
      throw timedOut(err, deadline)
    } finally {
      end()
      deadline?.removeEventListener('abort', stop)
    }
  }
  return {
    ...clickhouse,
    query: async (statement, own) => {
      try {
        return await query(statement, own)
      } catch (err) {
        if (!narrowsMemory(err, own)) throw err
        return await query(statement, narrowBlocks(own))
      }
    },
    // The statement starts (and counts, ReadLimits.threads) when its rows are first asked for.
    queryChunks: (statement, own) => (async function * () {
      let yielded = false
      for (const attempt of [own, narrowBlocks(own)]) {
        const { options: opts, deadline, end } = next(attempt)
        try {
          for await (const chunk of clickhouse.queryChunks(statement, opts)) {
            yielded = true
            yield chunk
          }
          return
        } catch (err) {
          // Once rows have gone to the caller a second run would repeat them.
          if (yielded || attempt !== own || !narrowsMemory(err, own)) throw timedOut(err, deadline)
        } finally {
          end()
          deadline?.removeEventListener('abort', stop)
        }
      }
    })(),
  }
}

/**
 * Rows per block of a read's second run after it ran out of memory (narrowsMemory). A read takes
 * blocks of up to 65,536 rows (max_block_size), which 18.16 cuts at no smaller bound than a
 * granule (8,192 rows): the columns a statement returns are read for every row of such a block,
 * and thrown away for the rows its filter drops. Another org's wide events stored next to a few
 * small ones (5,000 attributes, 84 KB a line) made a read of the small ones need over 1 GiB, and
 * it answered 422 (explore27d H1). max_block_size caps each read of a part inside a granule too:
 * 1,024 such rows take ~200 MB. Not the default: it made the scans of the 30 M-event benchmark
 * 15-40% slower (128 rows: 2.3-4.3 times; bench/README.md, "Wide events and small blocks"). 26.x
 * sizes its granules by bytes (index_granularity_bytes) and rarely needs it.
 */
export const narrowBlockRows = 1024

/** Whether `err` is ClickHouse's answer to a statement past max_memory_usage. */
export function pastMemoryLimit (err: unknown): boolean {
  return err instanceof ClickHouseError && err.chCode === clickhouseCodes.MEMORY_LIMIT_EXCEEDED
}

/** Whether `err` is a read past max_memory_usage that a run with narrowBlockRows may not be. */
function narrowsMemory (err: unknown, own: RequestOptions | undefined): boolean {
  return pastMemoryLimit(err) && Number(own?.settings?.max_block_size ?? Infinity) > narrowBlockRows
}

/** `own` with blocks of narrowBlockRows rows. */
function narrowBlocks (own: RequestOptions | undefined): RequestOptions {
  return { ...own, settings: { ...own?.settings, max_block_size: narrowBlockRows } }
}

/** A query's own options over the read's: its settings over the read's settings, one by one. */
function merged (options: RequestOptions, own: RequestOptions | undefined): RequestOptions {
  if (own === undefined) return options
  return { ...options, ...own, settings: { ...options.settings, ...own.settings } }
}

/** Ranges up to this long (ms) are no scan: an hour of raw rows reads quickly. */
export const scanRangeMs = 3_600_000

/** Whether a read over [from, to) that reads raw rows (`rawRows`) counts as a scan (query.maxScansPerOrg). */
export function isScan (from: number, to: number, rawRows: boolean): boolean {
  return rawRows && to - from > scanRangeMs
}
