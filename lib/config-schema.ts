// The one table of settings. Each setting is written here once: its JSON path, type (which is
// also its validation), environment variable, default with unit, and the description the README
// shows. lib/config.ts reads, layers and validates values from it; config/default.json and the
// README's configuration table are held equal to it by test/config.test.ts (which prints the
// table to paste when they differ). To add a setting: one row here, the field in the Config
// interface (lib/config.ts), the value in config/default.json, the row in the README.
import { logLevels } from './logger.ts'

/**
 * How a value is read and validated:
 * - string: any string; nullableString: a string, or null / '' for none;
 * - port: integer 0-65535; positiveInt: integer >= 1; nonNegativeInt: integer >= 0;
 * - enum: one of `values`;
 * - httpUrl: null / '' for none, or an http: or https: URL;
 * - clickhouseUrl: an httpUrl, or `chdb:<directory>` (the embedded engine, lib/storage/chdb-engine.ts);
 * - identifier: a plain SQL identifier ([A-Za-z_][A-Za-z0-9_]*); nullableIdentifier: one, or null / '' for none;
 * - httpUrlList: null / '' for none, or http(s) URLs separated by commas (kept as that string);
 * - slpToken: null / '' for none, or slp_ then 36 base62 characters;
 * - orgLimits: a map of org name to an object of the settings marked perOrg (no env variable).
 */
export type SettingType =
  | 'string' | 'nullableString' | 'port' | 'positiveInt' | 'nonNegativeInt' | 'enum'
  | 'httpUrl' | 'identifier' | 'slpToken' | 'orgLimits' | 'nullableIdentifier' | 'httpUrlList' | 'clickhouseUrl'

/** Units of numeric settings; the README's default column shows them after the value. */
export type Unit = 'ms' | 's' | 'bytes' | 'bytes/s' | 'rows' | 'events/s' | 'requests/min' | 'requests' | 'threads' | 'tails' | 'replicas'

export interface Setting {
  /** Dotted path in the config object and in JSON config files. */
  path: string
  type: SettingType
  /** Environment variable that may set it; none for settings only a file may set. */
  env?: string
  default: string | number | null | Record<string, never>
  /** Unit of a numeric value. */
  unit?: Unit
  /** The README's default column when the value alone would not say it (e.g. null: search PATH). */
  shownDefault?: string
  /** The README's meaning column. */
  description: string
  /** Allowed values of an enum. */
  values?: readonly string[]
  /** May also be set per org under limits.orgs.<org name>. */
  perOrg?: boolean
  /** Never repeated in a problem message (passwords, tokens). */
  secret?: boolean
}

const table = [
  { path: 'server.port', type: 'port', env: 'SLUICE_PORT', default: 8080, description: 'HTTP port' },
  { path: 'server.host', type: 'string', env: 'SLUICE_HOST', default: '127.0.0.1', description: 'Address to listen on (`0.0.0.0` for all)' },
  { path: 'server.headersTimeoutMs', type: 'positiveInt', env: 'SLUICE_HEADERS_TIMEOUT_MS', default: 10000, unit: 'ms', description: 'ms to receive request headers' },
  { path: 'server.requestTimeoutMs', type: 'positiveInt', env: 'SLUICE_REQUEST_TIMEOUT_MS', default: 60000, unit: 'ms', description: 'ms to receive a whole request' },
  { path: 'server.keepAliveTimeoutMs', type: 'positiveInt', env: 'SLUICE_KEEP_ALIVE_TIMEOUT_MS', default: 5000, unit: 'ms', description: 'ms an idle keep-alive connection stays open' },
  { path: 'server.shutdownTimeoutMs', type: 'positiveInt', env: 'SLUICE_SHUTDOWN_TIMEOUT_MS', default: 30000, unit: 'ms', description: 'ms shutdown waits for requests in flight' },
  { path: 'clickhouse.url', type: 'clickhouseUrl', env: 'CLICKHOUSE_URL', default: null, description: 'ClickHouse HTTP URL, or `chdb:<directory>` for the embedded engine (ClickHouse 26.x in-process, single node, data in that directory); unset: Sluice runs its own' },
  { path: 'clickhouse.user', type: 'string', env: 'CLICKHOUSE_USER', default: 'default', description: 'ClickHouse user' },
  { path: 'clickhouse.password', type: 'string', env: 'CLICKHOUSE_PASSWORD', default: '', secret: true, description: 'ClickHouse password' },
  { path: 'clickhouse.database', type: 'identifier', env: 'CLICKHOUSE_DATABASE', default: 'sluice', description: 'Database (created if missing)' },
  { path: 'clickhouse.requestTimeoutMs', type: 'positiveInt', env: 'CLICKHOUSE_REQUEST_TIMEOUT_MS', default: 30000, unit: 'ms', description: 'ms a ClickHouse request may wait on its socket (the client\'s idle timeout); not an export\'s window queries, which wait as long as the client takes to download (docs/api.md section 7.8)' },
  { path: 'clickhouse.binary', type: 'nullableString', env: 'CLICKHOUSE_BINARY', default: null, shownDefault: 'search `PATH`', description: 'Server binary for the managed ClickHouse' },
  { path: 'clickhouse.cluster', type: 'nullableIdentifier', env: 'CLICKHOUSE_CLUSTER', default: null, shownDefault: 'none (single node)', description: 'Cluster mode: the cluster name in ClickHouse\'s `remote_servers`; the schema is created `ON CLUSTER` with replicated, sharded event tables (README, Deployment: cluster mode)' },
  { path: 'clickhouse.insertUrls', type: 'httpUrlList', env: 'CLICKHOUSE_INSERT_URLS', default: null, shownDefault: '`clickhouse.url`', description: 'Cluster mode: HTTP URLs of the ClickHouse hosts event batches are inserted into, comma-separated, grouped into shards by each host\'s `{shard}` macro; each batch goes to one healthy shard' },
  { path: 'clickhouse.insertQuorum', type: 'nonNegativeInt', default: 0, unit: 'replicas', description: 'Cluster mode: replicas that must hold an insert before it counts as committed (ClickHouse `insert_quorum`); 0: the one written' },
  { path: 'cluster.nodeUrl', type: 'httpUrl', env: 'SLUICE_CLUSTER_NODE_URL', default: null, description: 'Cluster mode: this node\'s URL as the other nodes reach it (not the load balancer\'s), for the live tail across nodes; unset: tails here see only this node\'s events' },
  { path: 'cluster.secret', type: 'nullableString', env: 'SLUICE_CLUSTER_SECRET', default: null, secret: true, description: 'Cluster mode: shared secret the nodes send each other on `POST /internal/live` (the same on every node); needed with `cluster.nodeUrl`' },
  { path: 'clickhouse.startTimeoutMs', type: 'positiveInt', default: 30000, unit: 'ms', description: 'ms the managed ClickHouse has to answer after starting' },
  { path: 'dataDir', type: 'string', env: 'SLUICE_DATA_DIR', default: './data', description: 'Managed ClickHouse data and `admin-token`' },
  { path: 'bootstrapToken', type: 'slpToken', env: 'SLUICE_BOOTSTRAP_TOKEN', default: null, secret: true, description: 'An `slp_` token to install as admin PAT (automation)' },
  { path: 'log.level', type: 'enum', values: logLevels, env: 'SLUICE_LOG_LEVEL', default: 'info', description: '`debug`, `info`, `warn`, `error`, `silent`' },
  { path: 'metadata.refreshIntervalMs', type: 'positiveInt', env: 'SLUICE_METADATA_REFRESH_MS', default: 5000, unit: 'ms', description: 'ms between reloads of tokens and streams from ClickHouse (how soon other nodes see a revoke)' },
  { path: 'tokens.defaultIngestTtlS', type: 'positiveInt', default: 15552000, unit: 's', description: 'Ingest token lifetime in s when `ttl` is not given (180 days)' },
  { path: 'tokens.defaultPatTtlS', type: 'nonNegativeInt', default: 0, unit: 's', description: 'PAT lifetime in s when `ttl` is not given; 0: no expiry' },
  { path: 'ingest.maxRawBytes', type: 'positiveInt', env: 'SLUICE_MAX_RAW_BYTES', default: 16777216, unit: 'bytes', description: 'Bytes on the wire per request (16 MiB)' },
  { path: 'ingest.maxDecodedBytes', type: 'positiveInt', env: 'SLUICE_MAX_DECODED_BYTES', default: 67108864, unit: 'bytes', description: 'Bytes after decompression per request (64 MiB)' },
  { path: 'ingest.maxLineBytes', type: 'positiveInt', env: 'SLUICE_MAX_LINE_BYTES', default: 262144, unit: 'bytes', description: 'Bytes per line (256 KiB); longer lines fail alone' },
  { path: 'ingest.taskBytes', type: 'positiveInt', default: 122880, unit: 'bytes', description: "Bytes of lines per worker task (120 KiB: below V8's large-object size once joined)" },
  { path: 'ingest.workers', type: 'positiveInt', env: 'SLUICE_WORKERS', default: 2, unit: 'threads', description: 'Parse worker threads' },
  { path: 'ingest.minBytesPerSecond', type: 'nonNegativeInt', env: 'SLUICE_MIN_BYTES_PER_SECOND', default: 16384, unit: 'bytes/s', description: 'Bytes per second a body must average while the server waits for it (16 KiB/s); slower bodies get `408 request_timeout` and their connection is closed. Time the server itself is not reading (backpressure, the wait for a reading slot) does not count; 0: no minimum' },
  { path: 'ingest.minRateGraceMs', type: 'positiveInt', default: 5000, unit: 'ms', description: 'ms a body may lag behind `ingest.minBytesPerSecond`: silence allowed at its start, and the most that sending faster earns in advance' },
  { path: 'ingest.dedupeRetries', type: 'enum', values: ['on', 'off'], env: 'SLUICE_DEDUPE_RETRIES', default: 'on', description: "`on`: a body byte-identical to one this token sent to this stream within the idempotency window (10 min), whose every event carries its own timestamp, is a shipper's retry: the first answer is replayed and nothing is stored twice (docs/api.md section 6.7). A body with any event without a timestamp is never taken for a retry. `off` for benchmarks that send one fixed body" },
  { path: 'writer.maxBatchRows', type: 'positiveInt', default: 100000, unit: 'rows', description: "Rows per ClickHouse insert (a request's rows are never split)" },
  { path: 'writer.flushIntervalMs', type: 'positiveInt', env: 'SLUICE_FLUSH_INTERVAL_MS', default: 250, unit: 'ms', description: "ms the oldest waiting row waits, counted from its request's arrival, before its batch is sent, while an insert is in flight or waiting; a write to an idle writer does not wait for company" },
  { path: 'writer.minInsertIntervalMs', type: 'nonNegativeInt', default: 200, unit: 'ms', description: 'ms between the starts of two inserts while writes queue up (few parts under load)' },
  { path: 'writer.idleInsertIntervalMs', type: 'nonNegativeInt', default: 50, unit: 'ms', description: 'ms a write to an idle writer waits since the previous insert started (at most 20 inserts/s from clients that send one request at a time); at most `minInsertIntervalMs`' },
  { path: 'writer.retryTimeoutMs', type: 'positiveInt', default: 10000, unit: 'ms', description: 'ms a failing insert is retried before its requests get 503' },
  { path: 'writer.attemptTimeoutMs', type: 'positiveInt', default: 5000, unit: 'ms', description: 'ms one insert attempt may take before it is aborted; a request waits for storage at most `retryTimeoutMs` + this once its body is parsed (README "Guarantees", client timeout: clients should wait 20 s; for clients that wait 10 s, 4000 + 4000)' },
  { path: 'tail.maxPerOrg', type: 'positiveInt', env: 'SLUICE_MAX_TAILS_PER_ORG', default: 10, unit: 'tails', description: 'Live tails open at once per org' },
  { path: 'tail.maxBufferedBytes', type: 'positiveInt', default: 1048576, unit: 'bytes', description: 'Bytes queued to one tail client before its events are dropped (and counted)' },
  { path: 'tail.eventsPerSecond', type: 'positiveInt', default: 2000, unit: 'events/s', description: 'Events per second sent to one tail client at most; the rest are counted as dropped' },
  { path: 'query.maxConcurrentPerOrg', type: 'positiveInt', env: 'SLUICE_MAX_READS_PER_ORG', default: 4, unit: 'requests', description: 'Reads (events, stats, fields, context, export) running at once per org; more wait in the org\'s queue (`query.maxQueueMs`), then get `429 too_many_reads` with `Retry-After`' },
  { path: 'query.maxScansPerOrg', type: 'positiveInt', env: 'SLUICE_MAX_SCANS_PER_ORG', default: 1, unit: 'requests', description: 'Of those, reads scanning raw events over more than an hour (a `q` on events, stats or fields, `stats?by=` a field no rollup holds, an export) at once per org; more wait in the queue, then get `429 too_many_reads`. One keeps heavy reads from starving ingest (bench/README.md, reads against ingest)' },
  { path: 'query.maxQueueMs', type: 'nonNegativeInt', env: 'SLUICE_READ_QUEUE_MS', default: 10000, unit: 'ms', description: 'ms a read that finds its slots taken waits for one, first come first served, before it answers `429 too_many_reads` (like VictoriaLogs\' `-search.maxQueueDuration`); 0: at once. At most 4 x `query.maxConcurrentPerOrg` reads of an org wait' },
  { path: 'query.timeoutMs', type: 'positiveInt', env: 'SLUICE_QUERY_TIMEOUT_MS', default: 20000, unit: 'ms', description: 'ms one ClickHouse query of a read may run (its `max_execution_time`) before the read answers `504 query_timeout`; not an export\'s windows, whose rows are bounded and which last as long as the client downloads (docs/api.md section 7.8)' },
  { path: 'query.exportStallMs', type: 'positiveInt', default: 60000, unit: 'ms', description: 'ms an export waits for its client to take more before it cuts the download: a client that stops reading (a paused download, a dead path) would hold a read slot of its org and a ClickHouse query for as long as it keeps the connection (docs/api.md section 7.8)' },
  { path: 'query.maxMemoryBytes', type: 'positiveInt', default: 1073741824, unit: 'bytes', description: 'Memory one ClickHouse query of a read may use (its `max_memory_usage`, 1 GiB) before the read answers `422 query_too_expensive`' },
  { path: 'query.maxGroupKeys', type: 'positiveInt', default: 1000000, unit: 'rows', description: 'Keys one grouping statement of a read may hold (ClickHouse `max_rows_to_group_by`) before the read answers `422 query_too_expensive`: for `stats?by=` a value per series point (40 values over 100 points: up to 4,000), for `/fields` a value per field' },
  { path: 'query.maxThreads', type: 'positiveInt', default: 1, unit: 'threads', description: 'ClickHouse threads per query of a read (`max_threads`): 1 keeps a heavy read to one core so that ingest keeps the rest (bench/README.md, reads against ingest)' },
  { path: 'query.idleThreads', type: 'nonNegativeInt', env: 'SLUICE_IDLE_READ_THREADS', default: 0, unit: 'threads', description: 'ClickHouse threads per query of a read while the server is otherwise idle: no ingest for 1 s and no other statement of a read running (`query.maxThreads` otherwise). 0: the cores of this machine, where the managed and the embedded engine run; set it for a remote server. Single-node mode only (docs/api.md section 7.9)' },
  { path: 'limits.requestsPerMinute', type: 'positiveInt', env: 'SLUICE_REQUESTS_PER_MINUTE', default: 3000, unit: 'requests/min', perOrg: true, description: 'Ingest requests per minute per org' },
  { path: 'limits.concurrentRequests', type: 'positiveInt', env: 'SLUICE_CONCURRENT_REQUESTS', default: 32, unit: 'requests', perOrg: true, description: 'Ingest requests in progress per org' },
  { path: 'limits.maxUncommittedBytes', type: 'positiveInt', env: 'SLUICE_MAX_UNCOMMITTED_BYTES', default: 67108864, unit: 'bytes', description: "Bytes accepted but not yet committed, per server (64 MiB; a request's Content-Length is reserved at admission). Shared fairly: an org within its share (the limit / orgs with requests in progress; an org's bytes count until its requests are answered) is admitted even when others hold the rest or fill the batch writer, so the total can pass the limit, never twice it. Also the batch writer's bound on bytes waiting and in flight" },
  { path: 'limits.maxReadingRequests', type: 'positiveInt', env: 'SLUICE_MAX_READING_REQUESTS', default: 64, unit: 'requests', description: "Ingest requests reading and parsing their bodies at once, per server; more wait their turn with their sockets paused, and a request waiting for its commit does not count. Bounds memory when thousands of clients upload at once (like VictoriaLogs' `-maxConcurrentInserts`). Shared fairly: while another org waits, an org holding its share (ceil(slots / orgs reading or waiting)) gets no freed slot, freed slots go to the waiting orgs in turn, and its bodies that lag `ingest.minBytesPerSecond` are cut at once (408)" },
  { path: 'limits.maxReadingWaitMs', type: 'positiveInt', default: 10000, unit: 'ms', description: 'How long an admitted request waits for a reading slot (or for room under `limits.maxReadingBytes`) before its 429 `server_busy`' },
  { path: 'limits.maxReadingBytes', type: 'positiveInt', env: 'SLUICE_MAX_READING_BYTES', default: 16777216, unit: 'bytes', description: "Decompressed bytes of the bodies being read at once, per server (16 MiB); a body that does not fit waits with its socket paused, except the one reading longest. Bounds memory under concurrent compression bombs: at most this plus one body's `ingest.maxDecodedBytes` are being turned into lines and rows at once. Short lines become rows about 2.3 times their size, which reach the writer even while it is full: at 32 MiB its queue reached 135 MiB and peak RSS 474-502 MiB under overload, at 16 MiB 73 MiB and 387 MiB (bench/README.md, \"Overload memory\")" },
  { path: 'limits.orgs', type: 'orgLimits', default: {}, description: 'Per-org overrides of `requestsPerMinute` and `concurrentRequests`' },
] as const satisfies readonly Setting[]

export const settings: readonly Setting[] = table

/** Every setting's path, as a type: lib/config.ts checks at compile time that Config has exactly these leaves. */
export type SettingPath = typeof table[number]['path']

/** The settings that limits.orgs.<org name> may override, by their key there. */
export const perOrgSettings: ReadonlyMap<string, Setting> = new Map(
  settings.filter((s) => s.perOrg).map((s) => [s.path.slice(s.path.lastIndexOf('.') + 1), s]))

/** The README's default column for a setting: the value in backquotes, then its unit. */
function shownDefault (s: Setting): string {
  if (s.shownDefault !== undefined) return s.shownDefault
  if (s.default === null) return 'none'
  if (s.default === '') return 'empty'
  const value = '`' + (typeof s.default === 'object' ? JSON.stringify(s.default) : String(s.default)) + '`'
  return s.unit ? `${value} ${s.unit}` : value
}

/** The README's configuration table, header included, one line per setting. */
export function renderSettingsTable (): string {
  const lines = [
    '| Setting (JSON path) | Environment | Default | Meaning |',
    '|---|---|---|---|',
  ]
  for (const s of settings) {
    const path = s.type === 'orgLimits' ? `${s.path}.<org name>` : s.path
    const env = s.env ? ` \`${s.env}\` ` : ' '
    lines.push(`| \`${path}\` |${env}| ${shownDefault(s)} | ${s.description} |`)
  }
  return lines.join('\n')
}

/** The defaults as a config object (the shape of config/default.json). */
export function defaultValues (): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const s of settings) {
    const keys = s.path.split('.')
    let cur = out
    for (const key of keys.slice(0, -1)) {
      cur[key] ??= {}
      cur = cur[key] as Record<string, unknown>
    }
    cur[keys[keys.length - 1]] = typeof s.default === 'object' && s.default !== null ? { ...s.default } : s.default
  }
  return out
}
