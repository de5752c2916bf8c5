// The ClickHouse gateway (clickhouse.ts's interface) on the embedded engine: ClickHouse 26.x
// in this process through the npm package chdb (`CLICKHOUSE_URL=chdb:<directory>`), single node.
//
// Contract
// - Never blocks the event loop: every statement runs through chdb's async native calls
//   (Session.queryAsync, insert), which execute on libuv's thread pool. Measured with
//   monitorEventLoopDelay (10 ms resolution) during a 100 ms full-core query: max delay 12 ms, the
//   timer's own resolution (docs/architecture.md, "Embedded engine").
// - Sessions, not one connection: a chdb Session runs one statement at a time (a `SELECT 1` behind
//   a 100 ms query waited 108 ms on the same session, 2 ms on a second one). So this keeps a pool
//   of up to `sessions` Sessions on the one data directory (chdb allows many on the same
//   directory, one directory per process) and gives each statement one of its own, as the HTTP
//   client gives each request a socket. Reads (query ids `sluice-read-*`) have that pool; Sluice's
//   own statements (metadata, /readyz, DDL, the janitor) have one of `controlSessions` more, so
//   four heavy reads do not hold up stream creation or readiness. Inserts have one more Session
//   of their own, one insert at a time (the batch writer sends one at a time anyway), so that no
//   read makes an insert wait for a session. Each running statement holds a libuv thread-pool
//   thread, which zlib shares: the pools are small (4 + 2 + 1) and lib/main.ts raises the thread
//   pool to 16. A session is released when chdb's native call settles,
//   not when a caller's signal aborts it (chdb cannot stop a running statement: it finishes in
//   the background, and its session stays busy until then).
// - Settings: per statement, as a SETTINGS clause, never SET: a SET stays on the session for
//   every later statement (chdb/connection's adapter does that, so a read's max_rows_to_read
//   leaked into the next statements; hence this gateway instead of @clickhouse/client on
//   chdb/connection).
// - Inserts: the body is handed to chdb's raw insert as one Buffer (zero-copy to the engine's
//   parser), in a text format (chdb takes no RowBinary: the workers write JSONCompactEachRow,
//   insertFormat below). Every insert carries async_insert=0: 26.x turns async inserts on by
//   default, and a 200 means the rows are in a part. An insert's abort signal is not honoured
//   once the insert runs: chdb cannot cancel it, so an early rejection would leave its outcome
//   unknown (and chdb has no query_id to look it up by). Instead the insert's real outcome is
//   awaited and reported: stored, or failed with ClickHouse's code. Inserts are never ambiguous
//   here; an insert that runs past the writer's attempt deadline delays its answer instead.
// - queryChunks (the export's windows) runs the statement to its end and hands out its result
//   from memory: the session is held for the engine's work only, never for as long as a slow
//   client downloads. Streamed (queryStream) at the client's pace, one export to a client at
//   200 KB/s held read sessions for its whole download after a few dropped exports, and every
//   org's reads waited behind it until they answered 504 (explore18 F1). So an export's windows
//   are smaller here (exportWindowRows and exportWindowBytes: about 10-16 MB each, one window ahead).
// - cancel() cannot stop a statement, but it returns only once the read's statements (by their
//   query_id prefix) have ended, so that lib/query/read-limits.ts keeps an abandoned read's
//   slots until then, as on a server: without it, reads dropped one after another each ran on
//   beside the next, past the org's one scan at a time, and cut ingest to 30% (explore18 F3).
// - Errors: ClickHouseError with ClickHouse's numeric code, as over HTTP.
import { join, resolve } from 'node:path'
import type { Readable } from 'node:stream'
import { existsSync, mkdirSync } from 'node:fs'
import { ClickHouseError } from './clickhouse.ts'
import type { ClickHouse, InsertSettings, RequestOptions } from './clickhouse.ts'
import type { SqlFragment } from './sql.ts'
import { ChdbDirectoryError, chdbDirectory, chdbSessions, loadChdb } from './chdb-engine.ts'
import type { ChdbSession } from './chdb-engine.ts'

export interface ChdbClickHouseOptions {
  /** `chdb:<directory>`; a relative directory is resolved against the working directory. */
  url: string
  database: string
  /** Statements run at once (one chdb Session each); default chdbSessions (4). */
  sessions?: number
}

// 64-bit integers as JSON numbers (ts, seq, counts), as the HTTP gateway asks too.
const querySettings: Readonly<Record<string, number | string>> = { output_format_json_quote_64bit_integers: 0 }
// 26.x defaults async_insert to 1: a 200 must mean the rows are stored in a part.
const insertSettings: Readonly<Record<string, number | string>> = { async_insert: 0 }

const codePattern = /Code:\s*(\d+)/
const settingName = /^[A-Za-z_][A-Za-z0-9_]*$/
const insertPattern = /^INSERT INTO\s+`?([A-Za-z_][A-Za-z0-9_]*)`?\s*\(([^)]*)\)\s*FORMAT\s+([A-Za-z]+)\s*$/

function wrapError (err: unknown, sqlText: string): ClickHouseError {
  if (err instanceof ClickHouseError) return err
  const message = err instanceof Error ? err.message : String(err)
  const fromChdb = Number((err as { clickhouseCode?: unknown })?.clickhouseCode)
  const match = codePattern.exec(message)
  const chCode = Number.isInteger(fromChdb) && fromChdb > 0 ? fromChdb : match ? Number(match[1]) : 0
  return new ClickHouseError(`${message.split('\n')[0]} [query: ${sqlText.slice(0, 200)}]`, chCode, err)
}

/** ` SETTINGS a = 1, b = 'x'` for a statement's settings. */
function settingsClause (settings: Readonly<Record<string, number | string>>): string {
  const parts: string[] = []
  for (const [name, value] of Object.entries(settings)) {
    if (!settingName.test(name)) throw new TypeError(`not a setting name: ${JSON.stringify(name)}`)
    parts.push(`${name} = ${typeof value === 'number' || /^-?\d+$/.test(value) ? String(value) : `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`}`)
  }
  return parts.length === 0 ? '' : ` SETTINGS ${parts.join(', ')}`
}

function numericSettings (settings: Readonly<Record<string, number | string>>): Record<string, number | string> {
  const out: Record<string, number | string> = {}
  for (const [name, value] of Object.entries(settings)) out[name] = typeof value === 'string' && /^-?\d+$/.test(value) ? Number(value) : value
  return out
}

interface PooledSession {
  session: ChdbSession
  /** The database this session has USEd. */
  usesDatabase: boolean
}

/** Statements of Sluice's own (metadata, readiness, DDL, the janitor) run at once, beside the reads. */
const controlSessions = 2

/** Rows of an export window on this engine (queryChunks answers from the whole result in memory). */
const chdbExportWindowRows = 20_000
/** Bytes of events of an export window on this engine: wide events make fewer rows (explore27d M1). */
const chdbExportWindowBytes = 16 * 1024 * 1024

/** Bytes queryChunks hands out at a time. */
const chunkBytes = 256 * 1024

/** Reads carry query ids with this prefix (lib/query/read-limits.ts); they have a pool of their own. */
const readQueryIdPrefix = 'sluice-read-'

/** Sessions for statements, up to `max` at once; a statement beyond waits for one (or its signal). */
class SessionPool {
  readonly #idle: PooledSession[] = []
  readonly #waiters: Array<(s: PooledSession) => void> = []
  readonly #make: () => ChdbSession
  readonly #max: number
  #open = 0
  #closed = false

  constructor (make: () => ChdbSession, max: number) {
    this.#make = make
    this.#max = max
  }

  /** Keeps a session open from now on (the first one starts the engine). */
  warm (): void {
    this.#idle.push({ session: this.#make(), usesDatabase: false })
    this.#open++
  }

  acquire (signal?: AbortSignal): Promise<PooledSession> {
    if (this.#closed) return Promise.reject(new ClickHouseError('embedded ClickHouse is closed', 0))
    const s = this.#idle.pop()
    if (s !== undefined) return Promise.resolve(s)
    if (this.#open < this.#max) {
      this.#open++
      return Promise.resolve({ session: this.#make(), usesDatabase: false })
    }
    return new Promise((resolve, reject) => {
      const take = (s: PooledSession): void => { signal?.removeEventListener('abort', onAbort); resolve(s) }
      const onAbort = (): void => {
        const i = this.#waiters.indexOf(take)
        if (i >= 0) this.#waiters.splice(i, 1)
        reject(signal?.reason)
      }
      signal?.addEventListener('abort', onAbort, { once: true })
      this.#waiters.push(take)
    })
  }

  /**
   * Puts a new session in the place of `s`, then closes `s`: a session whose statement failed keeps
   * the rows that statement had written before its error and hands them out with the next
   * statement's (chdb 26.7: after a TIMEOUT_EXCEEDED mid-output, the next SELECT on the session
   * answered 2.7 M stale rows before its own; explore20 F3). The new one is made first: the engine
   * stays up while a session is open.
   */
  replace (s: PooledSession): void {
    if (this.#closed) { s.session.close(); return }
    let fresh: PooledSession | undefined
    try {
      fresh = { session: this.#make(), usesDatabase: false }
    } catch {
      // The engine refuses sessions: one fewer is open, and the next acquire tries again.
    }
    s.session.close()
    if (fresh !== undefined) this.release(fresh)
    else this.#open--
  }

  release (s: PooledSession): void {
    if (this.#closed) { s.session.close(); return }
    const next = this.#waiters.shift()
    if (next !== undefined) next(s)
    else this.#idle.push(s)
  }

  close (): void {
    this.#closed = true
    for (const s of this.#idle.splice(0)) s.session.close()
  }
}

export function createChdbClickHouse (options: ChdbClickHouseOptions): ClickHouse {
  const chdb = loadChdb()
  const directory = resolve(chdbDirectory(options.url))
  // The managed server's directory (<dataDir>/clickhouse) holds its config.xml and its database
  // one level down, in data/: opened as is, the engine would start an empty database beside
  // them, and every stream would seem gone (explore34b G6).
  if (existsSync(join(directory, 'config.xml')) && existsSync(join(directory, 'data', 'metadata')) && !existsSync(join(directory, 'metadata'))) {
    throw new ChdbDirectoryError(directory, 'it holds a managed ClickHouse server\'s files (config.xml, data/)',
      `Its database is in ${join(directory, 'data')}: with Sluice stopped, CLICKHOUSE_URL=chdb:${join(directory, 'data')} opens it in place (docs/schema-versions.md, "Upgrade path")`)
  }
  try {
    mkdirSync(directory, { recursive: true })
  } catch (err) {
    throw new ChdbDirectoryError(directory, err)
  }
  const url = `chdb:${directory}`
  const database = options.database
  const quotedDatabase = `\`${database.replace(/`/g, '')}\``
  const make = (): ChdbSession => new chdb.Session(directory)
  // Reads (up to `sessions` at once) and Sluice's own statements have pools of their own: four
  // heavy reads must not hold up stream creation, metadata refreshes or /readyz.
  const reads = new SessionPool(make, options.sessions ?? chdbSessions)
  const control = new SessionPool(make, controlSessions)
  const poolFor = (opts: RequestOptions): SessionPool => opts.queryId?.startsWith(readQueryIdPrefix) === true ? reads : control
  let closed = false
  // Inserts have a session of their own (see insertRaw), and run one after another on it.
  let insertSession: ChdbSession | undefined
  let insertTail: Promise<void> = Promise.resolve()
  /** Statements running now by query_id, settled when their native work has (cancel() waits for them). */
  const running = new Map<string, Promise<unknown>>()
  // The first session starts the engine (about 0.3 s); the pool keeps at least this one.
  try {
    control.warm()
  } catch (err) {
    throw new ChdbDirectoryError(directory, err)
  }

  /**
   * Runs `fn` on a session of its own (USEing the database first, unless `inDefault`); the session
   * goes back to the pool when fn's native work has settled, whatever the caller's signal did.
   */
  async function withSession<T> (pool: SessionPool, sqlText: string, signal: AbortSignal | undefined, fn: (s: ChdbSession) => Promise<T>,
    inDefault = false, queryId?: string): Promise<T> {
    signal?.throwIfAborted()
    const s = await pool.acquire(signal)
    const work = (async () => {
      if (!inDefault && !s.usesDatabase) {
        await s.session.queryAsync(`USE ${quotedDatabase}`)
        s.usesDatabase = true
      }
      return await fn(s.session)
    })()
    const settled = work.then(() => pool.release(s), () => pool.replace(s))
    if (queryId !== undefined) {
      running.set(queryId, settled)
      void settled.then(() => { if (running.get(queryId) === settled) running.delete(queryId) })
    }
    try {
      if (signal === undefined) return await work
      return await abortable(work, signal)
    } catch (err) {
      throw wrapError(err, sqlText)
    }
  }

  function select (statement: SqlFragment | string, opts: RequestOptions): string {
    const settings = opts.settings === undefined ? querySettings : { ...querySettings, ...opts.settings }
    return String(statement).replace(/[\s;]+$/, '') + settingsClause(settings)
  }

  return {
    database,
    url,
    insertFormat: 'JSONCompactEachRow',

    async query<T> (statement: SqlFragment | string, opts: RequestOptions = {}): Promise<T[]> {
      const text = select(statement, opts)
      const result = await withSession(poolFor(opts), text, opts.signal, (session) => session.queryAsync(text, { format: 'JSONEachRow' }), false, opts.queryId)
      return parseRows<T>(result.bytes())
    },

    exportWindowRows: chdbExportWindowRows,
    exportWindowBytes: chdbExportWindowBytes,

    // The whole result first, then in slices (the contract above: no session waits on a client).
    async * queryChunks (statement: SqlFragment | string, opts: RequestOptions = {}): AsyncIterable<Uint8Array> {
      const text = select(statement, opts)
      const result = await withSession(poolFor(opts), text, opts.signal, (session) => session.queryAsync(text, { format: 'JSONEachRow' }), false, opts.queryId)
      const bytes = result.bytes()
      for (let at = 0; at < bytes.length; at += chunkBytes) {
        opts.signal?.throwIfAborted()
        yield bytes.subarray(at, Math.min(bytes.length, at + chunkBytes))
      }
    },

    async command (statement: SqlFragment | string, opts: RequestOptions = {}): Promise<void> {
      const text = opts.settings === undefined ? String(statement) : select(statement, { settings: opts.settings })
      await withSession(poolFor(opts), text, opts.signal, (session) => session.queryAsync(text, { format: 'CSV' }), false, opts.queryId)
    },

    async insertRaw (statement: string, body: Buffer | Readable, _signal?: AbortSignal, settings?: InsertSettings): Promise<void> {
      const parsed = insertPattern.exec(statement)
      if (parsed === null) throw new TypeError(`insertRaw takes INSERT INTO table (columns) FORMAT X (got ${statement.slice(0, 100)})`)
      const [, table, columnList, format] = parsed
      const columns = columnList.split(',').map((c) => c.trim().replace(/`/g, ''))
      let values: Buffer
      if (Buffer.isBuffer(body)) {
        values = body
      } else {
        const chunks: Buffer[] = []
        for await (const chunk of body as AsyncIterable<Uint8Array>) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength))
        values = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)
      }
      if (values.length === 0) return
      // On the insert session, one at a time: reads never make an insert wait. No signal: see the
      // contract (an insert's outcome is awaited, never abandoned).
      if (closed) throw new ClickHouseError('embedded ClickHouse is closed', 0)
      const run = insertTail.then(() => {
        insertSession ??= new chdb.Session(directory)
        return insertSession.insert({
          table: `${database}.${table}`, columns, format, values,
          settings: numericSettings({ ...insertSettings, ...settings }),
        })
      })
      insertTail = run.then(() => {}, () => {})
      try {
        await run
      } catch (err) {
        throw wrapError(err, statement)
      }
    },

    // chdb cannot stop a running statement (the contract above): an abandoned read finishes in
    // the background, and this returns once its statements have (or when the signal aborts).
    async cancel (queryIdPrefix: string, opts: RequestOptions = {}): Promise<void> {
      const ends = [...running].filter(([id]) => id.startsWith(queryIdPrefix)).map(([, settled]) => settled)
      if (ends.length === 0) return
      const all = Promise.all(ends)
      await (opts.signal === undefined ? all : abortable(all, opts.signal))
    },

    async ping (opts: RequestOptions = {}): Promise<boolean> {
      try {
        await withSession(control, 'SELECT 1', opts.signal, (session) => session.queryAsync('SELECT 1'), true)
        return true
      } catch {
        return false
      }
    },

    async version (): Promise<string> {
      const rows = await this.query<{ v: string }>('SELECT version() AS v')
      return rows[0].v
    },

    async ensureDatabase (): Promise<void> {
      const text = `CREATE DATABASE IF NOT EXISTS ${quotedDatabase}`
      await withSession(control, text, undefined, (session) => session.queryAsync(text), true)
    },

    async close (): Promise<void> {
      if (closed) return
      closed = true
      reads.close()
      control.close()
      // After the inserts already queued (the writer has flushed before close; a test may not).
      void insertTail.then(() => insertSession?.close())
    },
  }
}

/** JSONEachRow bytes -> each row's text. */
function splitLines (bytes: Uint8Array): string[] {
  if (bytes.length === 0) return []
  const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8')
  const lines: string[] = []
  let start = 0
  while (start < text.length) {
    let end = text.indexOf('\n', start)
    if (end < 0) end = text.length
    if (end > start) lines.push(text.slice(start, end))
    start = end + 1
  }
  return lines
}

/** JSONEachRow bytes -> rows. */
function parseRows<T> (bytes: Uint8Array): T[] {
  return splitLines(bytes).map((line) => JSON.parse(line) as T)
}

/** `work`, or the signal's reason as soon as it aborts (the work goes on in the background). */
function abortable<T> (work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason)
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason)
    signal.addEventListener('abort', onAbort, { once: true })
    work.then((v) => { signal.removeEventListener('abort', onAbort); resolve(v) },
      (e) => { signal.removeEventListener('abort', onAbort); reject(e) })
  })
}
