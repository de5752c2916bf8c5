// The one gateway to ClickHouse over HTTP, built on @clickhouse/client. It fixes the settings
// every query needs (64-bit integers as JSON numbers), turns server errors into ClickHouseError
// with the numeric code ClickHouse sent (matched by code, never by message text), and offers a
// raw insert for bytes that workers already serialized. A `chdb:<directory>` URL gives the same
// interface on the embedded engine instead (chdb-clickhouse.ts).
import { Readable } from 'node:stream'
import { setTimeout as sleep } from 'node:timers/promises'
import { createClient, ClickHouseLogLevel } from '@clickhouse/client'
import type { ClickHouseClient, ClickHouseSettings } from '@clickhouse/client'
import { SqlFragment, sql } from './sql.ts'
import { createChdbClickHouse } from './chdb-clickhouse.ts'
import { isChdbUrl } from './chdb-engine.ts'

export interface ClickHouseOptions {
  /**
   * Base URL of the HTTP interface, e.g. http://127.0.0.1:8123; or `chdb:<directory>` for the
   * embedded engine with its data in that directory (user and password are then unused).
   */
  url: string
  user: string
  password: string
  database: string
  /** Milliseconds before a single HTTP request to ClickHouse is abandoned. */
  requestTimeoutMs: number
  /** Sockets kept open to ClickHouse; inserts and queries share them. */
  maxOpenConnections?: number
}

/** Error codes ClickHouse sends that this code base reacts to. */
export const clickhouseCodes = {
  UNKNOWN_TABLE: 60,
  UNKNOWN_DATABASE: 81,
  TABLE_ALREADY_EXISTS: 57,
  // ALTER ... ADD COLUMN of a column that exists (18.16 and current versions).
  ILLEGAL_COLUMN: 44,
  DUPLICATE_COLUMN: 15,
  TOO_MANY_PARTS: 252,
  MEMORY_LIMIT_EXCEEDED: 241,
  TIMEOUT_EXCEEDED: 159,
  // A read past its limits (lib/query/read-limits.ts): rows to group (max_rows_to_group_by), bytes, rows or bytes to read.
  TOO_MANY_ROWS: 158,
  TOO_MANY_BYTES: 307,
  TOO_MANY_ROWS_OR_BYTES: 396,
  TOO_MANY_SIMULTANEOUS_QUERIES: 202,
  // Transient server conditions the batch writer retries.
  CANNOT_ALLOCATE_MEMORY: 173,
  SOCKET_TIMEOUT: 209,
  NETWORK_ERROR: 210,
  TABLE_IS_READ_ONLY: 242,
  NOT_ENOUGH_SPACE: 243,
  // Replicated tables (cluster mode): ZooKeeper unreachable, too few replicas for insert_quorum.
  NO_ZOOKEEPER: 225,
  KEEPER_EXCEPTION: 999,
  TOO_FEW_LIVE_REPLICAS: 285,
  UNSATISFIED_QUORUM_FOR_PREVIOUS_WRITE: 286,
  // ZooKeeper was lost while the insert committed: it may or may not be stored (retried as ambiguous).
  UNKNOWN_STATUS_OF_INSERT: 319,
  // The inserted bytes themselves are malformed (a serializer bug): never retried.
  UNEXPECTED_END_OF_FILE: 3,
  CANNOT_PARSE_TEXT: 6,
  CANNOT_PARSE_ESCAPE_SEQUENCE: 25,
  CANNOT_PARSE_QUOTED_STRING: 26,
  CANNOT_PARSE_INPUT_ASSERTION_FAILED: 27,
  ATTEMPT_TO_READ_AFTER_EOF: 32,
  CANNOT_READ_ALL_DATA: 33,
  CANNOT_PARSE_DATE: 38,
  CANNOT_PARSE_DATETIME: 41,
  CANNOT_PARSE_NUMBER: 72,
  INCORRECT_DATA: 117,
  TOO_LARGE_STRING_SIZE: 131,
} as const

export class ClickHouseError extends Error {
  /** Numeric ClickHouse error code, or 0 when the failure was not an answer from the server. */
  readonly chCode: number
  constructor (message: string, chCode: number, cause?: unknown) {
    super(message, { cause })
    this.name = 'ClickHouseError'
    this.chCode = chCode
  }
}

const codePattern = /Code:\s*(\d+)/

function wrapError (err: unknown, sqlText: string): Error {
  if (err instanceof ClickHouseError) return err
  const message = err instanceof Error ? err.message : String(err)
  const fromClient = Number((err as { code?: unknown })?.code)
  const match = codePattern.exec(message)
  const chCode = Number.isInteger(fromClient) && fromClient > 0 ? fromClient : match ? Number(match[1]) : 0
  // Socket-level failures keep their own code (ECONNREFUSED...) on the cause for toHttpError.
  const wrapped = new ClickHouseError(`${message.split('\n')[0]} [query: ${sqlText.slice(0, 200)}]`, chCode, err)
  const sysCode = (err as { code?: unknown })?.code
  if (typeof sysCode === 'string') Object.defineProperty(wrapped, 'sysCode', { value: sysCode })
  return wrapped
}

/**
 * The format event rows are inserted in, which the parse workers write (lib/ingest/parse-task.ts
 * EventRowFormat): RowBinary over HTTP; JSONCompactEachRow on chdb, which takes text formats only.
 */
export type EventInsertFormat = 'RowBinary' | 'JSONCompactEachRow'

export interface ClickHouse {
  readonly database: string
  readonly url: string
  /** The format this engine takes event rows in (the batch writer's and the workers' format). */
  readonly insertFormat: EventInsertFormat
  /** Runs a SELECT and returns its rows as objects (JSONEachRow, 64-bit integers as numbers). */
  query<T = Record<string, unknown>>(statement: SqlFragment | string, options?: RequestOptions): Promise<T[]>
  /**
   * Runs a SELECT and yields its JSONEachRow output (64-bit integers as numbers) as it arrives, in
   * chunks of bytes cut anywhere, with backpressure: the response is read only as fast as the
   * caller iterates; breaking out of the loop aborts it. For a caller that passes rows on as JSON
   * (the export, lib/query/export-lines.ts). Not under `requestTimeoutMs`: the client's timeout is
   * the socket's idle time, and a response read only as fast as a slow downloader takes it idles
   * its socket for longer (an export at 50 KB/s was cut after 30 s, explore15 F2). Its caller
   * stops it (the signal, or leaving the loop).
   */
  queryChunks(statement: SqlFragment | string, options?: RequestOptions): AsyncIterable<Uint8Array>
  /**
   * Rows an export window should aim at on this engine (lib/query/export-query.ts windowRows when
   * absent). The embedded engine answers queryChunks from the statement's whole result in memory,
   * so its windows are smaller.
   */
  readonly exportWindowRows?: number
  /** Bytes of events (their lines') an export window should aim at on this engine (windowBytes when absent). */
  readonly exportWindowBytes?: number
  /** Runs a statement that returns nothing (DDL, ALTER, INSERT ... VALUES). */
  command (statement: SqlFragment | string, options?: RequestOptions): Promise<void>
  /**
   * `INSERT INTO table FORMAT X` with a pre-serialized body. `settings` go into the URL of this
   * request only (18.16 answers UNKNOWN_SETTING, code 115, to a name it does not know).
   * `queryId` names the insert in system.processes (so a caller can KILL it or wait for it).
   */
  insertRaw (statement: string, body: Buffer | Readable, signal?: AbortSignal, settings?: InsertSettings, queryId?: string): Promise<void>
  /**
   * Stops the running queries whose query_id starts with `queryIdPrefix` and returns when they
   * have stopped (`KILL QUERY ... SYNC`). Aborting a request does not stop its query: 18.16 runs
   * a SELECT whose client went away to its end (up to max_execution_time). The embedded engine
   * cannot stop a statement: there it returns once those statements have ended by themselves.
   */
  cancel (queryIdPrefix: string, options?: RequestOptions): Promise<void>
  /** True when ClickHouse answers /ping; false (never a throw) on any failure or abort. */
  ping (options?: RequestOptions): Promise<boolean>
  /** Server version string, e.g. "18.16.1". */
  version (): Promise<string>
  /** Creates the configured database when it does not exist. */
  ensureDatabase (): Promise<void>
  close (): Promise<void>
}

/**
 * Per-request options. The client's own request timeout is an idle timer that progress resets,
 * so a caller that needs a deadline passes a signal (AbortSignal.timeout or its own controller):
 * aborting destroys the request's socket.
 */
export interface RequestOptions {
  signal?: AbortSignal
  /** Sent as ClickHouse's query_id (system.processes, KILL QUERY); default: a random one. */
  queryId?: string
  /** ClickHouse settings of this query only (the reads' limits: lib/query/read-limits.ts). */
  settings?: Readonly<Record<string, number | string>>
}

/** Per-insert ClickHouse settings, e.g. `{ max_insert_block_size: '2000000' }` (numbers as strings). */
export type InsertSettings = Readonly<Record<string, string>>

const querySettings = {
  output_format_json_quote_64bit_integers: 0,
} as const

/**
 * Sends a SELECT, and once more on a new socket when the first connection resets (ECONNRESET)
 * before its answer is whole (queryChunks: before its first chunk). A kept-alive socket that the
 * server closed as the statement went out on it does that: 18.16 closes one after an error
 * answer, and a late timer on a busy event loop can reuse one past the server's
 * keep_alive_timeout (explore19 F1: a dashboard read answered 503 while ClickHouse was fine).
 * The second has a query id of its own: the first may still be known to the server. Never for
 * inserts or commands (their callers decide).
 */
async function againOnReset<T> (opts: RequestOptions, send: (queryId: string | undefined) => Promise<T>): Promise<T> {
  try {
    return await send(opts.queryId)
  } catch (err) {
    if ((err as { code?: unknown })?.code !== 'ECONNRESET' || opts.signal?.aborted === true) throw err
    return await send(opts.queryId === undefined ? undefined : `${opts.queryId}-again`)
  }
}

/** queryChunks' socket idle timeout: a day (its reader decides how long it takes). */
const streamIdleTimeoutMs = 86_400_000

/** ms between cancel()'s two KILLs. */
const cancelRecheckMs = 250

export function createClickHouse (options: ClickHouseOptions): ClickHouse {
  if (isChdbUrl(options.url)) return createChdbClickHouse({ url: options.url, database: options.database })
  const common = {
    url: options.url,
    username: options.user,
    password: options.password,
    request_timeout: options.requestTimeoutMs,
    max_open_connections: options.maxOpenConnections ?? 16,
    // 18.16 rejects settings it does not know, and the client sends none unless told to.
    log: { level: ClickHouseLogLevel.OFF },
    // A socket idle past idle_socket_ttl (2.5 s, under 18.16's keep_alive_timeout of 3 s) is
    // dropped when next asked for, even if a busy event loop ran its timer late.
    keep_alive: { enabled: true, eagerly_destroy_stale_sockets: true },
  }
  const client: ClickHouseClient = createClient({ ...common, database: options.database })
  // queryChunks' own client: its sockets may idle while the reader is slow (see queryChunks).
  const streamClient: ClickHouseClient = createClient({ ...common, database: options.database, request_timeout: streamIdleTimeoutMs })

  async function run<T> (sqlText: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn()
    } catch (err) {
      throw wrapError(err, sqlText)
    }
  }

  return {
    database: options.database,
    url: options.url,
    insertFormat: 'RowBinary',

    async query<T> (statement: SqlFragment | string, opts: RequestOptions = {}): Promise<T[]> {
      const text = String(statement)
      const once = async (queryId: string | undefined): Promise<T[]> => {
        const rs = await client.query({
          query: text, format: 'JSONEachRow', abort_signal: opts.signal, query_id: queryId,
          clickhouse_settings: opts.settings === undefined ? querySettings : { ...querySettings, ...opts.settings } as ClickHouseSettings,
        })
        return await rs.json<T>()
      }
      return run(text, async () => await againOnReset(opts, once))
    },

    async * queryChunks (statement: SqlFragment | string, opts: RequestOptions = {}): AsyncIterable<Uint8Array> {
      const text = String(statement)
      const res = await run(text, async () => await againOnReset(opts, async (queryId) => await streamClient.exec({
        query: `${text}\nFORMAT JSONEachRow`, abort_signal: opts.signal, query_id: queryId,
        clickhouse_settings: opts.settings === undefined ? querySettings : { ...querySettings, ...opts.settings } as ClickHouseSettings,
      })))
      try {
        for await (const chunk of res.stream) yield chunk as Buffer
      } catch (err) {
        throw wrapError(err, text)
      } finally {
        res.stream.destroy()
      }
    },

    async command (statement: SqlFragment | string, opts: RequestOptions = {}): Promise<void> {
      const text = String(statement)
      await run(text, async () => {
        await client.command({ query: text, abort_signal: opts.signal, query_id: opts.queryId, clickhouse_settings: opts.settings as ClickHouseSettings | undefined })
      })
    },

    async insertRaw (statement: string, body: Buffer | Readable, signal?: AbortSignal, settings?: InsertSettings, queryId?: string): Promise<void> {
      await run(statement, async () => {
        const res = await client.exec({
          query: statement,
          query_id: queryId,
          // The client's types accept only a stream; it wraps a Buffer the same way at run time.
          values: Buffer.isBuffer(body) ? Readable.from([body]) : body,
          abort_signal: signal,
          clickhouse_settings: settings as ClickHouseSettings | undefined,
        })
        // Drain the (empty) response so the socket goes back to the pool.
        res.stream.resume()
        await new Promise<void>((resolve, reject) => {
          res.stream.once('end', resolve)
          res.stream.once('error', reject)
        })
      })
    },

    async cancel (queryIdPrefix: string, opts: RequestOptions = {}): Promise<void> {
      const text = String(sql`KILL QUERY WHERE startsWith(query_id, ${queryIdPrefix}) SYNC`)
      const kill = async (): Promise<void> => {
        await run(text, async () => {
          // KILL answers a row per query it stopped: drain them.
          const res = await client.exec({ query: text, abort_signal: opts.signal })
          res.stream.resume()
          await new Promise<void>((resolve, reject) => {
            res.stream.once('end', resolve)
            res.stream.once('error', reject)
          })
        })
      }
      await kill()
      // A query whose request was on its way when the caller gave up may not be in the process
      // list yet, and 18.16 runs it anyway once it reads it: a second KILL a moment later stops
      // such a one (seen twice in 30 aborted reads: it ran 4 and 16 s beside the next read).
      await sleep(cancelRecheckMs, undefined, { signal: opts.signal })
      await kill()
    },

    async ping (opts: RequestOptions = {}): Promise<boolean> {
      try {
        const res = await client.ping({ select: false, abort_signal: opts.signal })
        return res.success
      } catch {
        return false
      }
    },

    async version (): Promise<string> {
      const rows = await this.query<{ v: string }>('SELECT version() AS v')
      return rows[0].v
    },

    async ensureDatabase (): Promise<void> {
      const admin = createClient({ ...common, database: 'default' })
      const text = `CREATE DATABASE IF NOT EXISTS \`${options.database.replace(/`/g, '')}\``
      try {
        await run(text, async () => { await admin.command({ query: text }) })
      } finally {
        await admin.close()
      }
    },

    async close (): Promise<void> {
      await Promise.all([client.close(), streamClient.close()])
    },
  }
}
