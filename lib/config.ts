// Configuration: config/default.json, then an optional file named by SLUICE_CONFIG, then
// environment variables. loadConfig() validates everything, collects every problem with where
// the value came from, throws once (ConfigError), and returns a frozen object. Only lib/main.ts
// and the CLI read process.env; they pass it in here.
import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { logLevels } from './logger.ts'
import type { LogLevel } from './logger.ts'

export interface OrgLimits {
  /** Ingest requests per minute per org. */
  requestsPerMinute: number
  /** Ingest requests in progress at once per org. */
  concurrentRequests: number
}

export interface Config {
  server: {
    host: string
    port: number
    /** ms to receive the request headers before the socket is closed (slow-loris guard). */
    headersTimeoutMs: number
    /** ms to receive a whole request. */
    requestTimeoutMs: number
    /** ms an idle keep-alive socket is kept. */
    keepAliveTimeoutMs: number
    /** ms that shutdown waits for requests in flight before closing their sockets. */
    shutdownTimeoutMs: number
  }
  clickhouse: {
    /** null: start and supervise a local ClickHouse (the embedded default). */
    url: string | null
    user: string
    password: string
    database: string
    /** ms a single HTTP request to ClickHouse may take. */
    requestTimeoutMs: number
    /** Binary for the managed server; null: look on PATH. */
    binary: string | null
    /** ms to wait for the managed server to answer after it starts. */
    startTimeoutMs: number
  }
  dataDir: string
  /** An slp_ token the start ensures exists as an admin PAT (automation); null: none. */
  bootstrapToken: string | null
  log: { level: LogLevel }
  metadata: {
    /** ms between reloads of orgs, users, tokens and streams from ClickHouse. */
    refreshIntervalMs: number
  }
  tokens: {
    /** Seconds an ingest token lives when `ttl` is not given: 180 days (the seed's default). */
    defaultIngestTtlS: number
    /** Seconds a PAT lives when `ttl` is not given; 0: no expiry. */
    defaultPatTtlS: number
  }
  ingest: {
    /** Bytes on the wire per request (413 past it). */
    maxRawBytes: number
    /** Bytes after decompression per request (413 past it; the zip-bomb guard). */
    maxDecodedBytes: number
    /** Bytes in one line; a longer line fails alone (line_too_long). */
    maxLineBytes: number
    /** Bytes of lines handed to a worker in one task. */
    taskBytes: number
    /** Parse worker threads. */
    workers: number
    /**
     * Bytes per second a body must keep arriving at, on average over minRateGraceMs, while the
     * server waits for it (408 request_timeout when slower); 0: no minimum.
     */
    minBytesPerSecond: number
    /** ms a body may lag behind minBytesPerSecond: at its start, or banked by faster sending. */
    minRateGraceMs: number
  }
  writer: {
    /** Rows in one INSERT at most (one request's rows are never split). */
    maxBatchRows: number
    /** ms the oldest waiting row waits for company before its batch is sent. */
    flushIntervalMs: number
    /** ms between two inserts at least, so that low load makes few parts. */
    minInsertIntervalMs: number
    /** ms a failing insert is retried before its requests get 503. */
    retryTimeoutMs: number
    /** ms one insert attempt may take before it is aborted; a request waits for storage at most retryTimeoutMs + this. */
    attemptTimeoutMs: number
  }
  tail: {
    /** Live tails open at once per org (429 too_many_tails past it). */
    maxPerOrg: number
    /** Bytes written to a tail client and not yet sent before its events are dropped. */
    maxBufferedBytes: number
    /** Events per second sent to one tail client at most; the rest are counted as dropped. */
    eventsPerSecond: number
  }
  limits: OrgLimits & {
    /** Bytes accepted but not yet committed, server-wide (429 server_busy past it). */
    maxUncommittedBytes: number
    /**
     * Ingest requests reading and parsing their bodies at once, server-wide; more wait, their
     * sockets paused. A request waiting for its commit no longer counts.
     */
    maxReadingRequests: number
    /** ms a request waits for a reading slot before its 429 server_busy. */
    maxReadingWaitMs: number
    /**
     * Decoded bytes of the bodies being read at once, server-wide; a body that does not fit waits
     * (the one reading longest never does). Bounds memory under concurrent compression bombs.
     */
    maxReadingBytes: number
    /** Per-org overrides, by org name. */
    orgs: Record<string, Partial<OrgLimits>>
  }
}

export class ConfigError extends Error {
  readonly problems: string[]
  constructor (problems: string[]) {
    super('invalid configuration:\n  - ' + problems.join('\n  - '))
    this.name = 'ConfigError'
    this.problems = problems
  }
}

type Kind = 'string' | 'nullableString' | 'port' | 'positiveInt' | 'nonNegativeInt' | 'logLevel'

interface Field {
  path: string
  kind: Kind
  env?: string
}

// Every leaf of Config, its kind and the environment variable that may set it.
const fields: Field[] = [
  { path: 'server.host', kind: 'string', env: 'SLUICE_HOST' },
  { path: 'server.port', kind: 'port', env: 'SLUICE_PORT' },
  { path: 'server.headersTimeoutMs', kind: 'positiveInt', env: 'SLUICE_HEADERS_TIMEOUT_MS' },
  { path: 'server.requestTimeoutMs', kind: 'positiveInt', env: 'SLUICE_REQUEST_TIMEOUT_MS' },
  { path: 'server.keepAliveTimeoutMs', kind: 'positiveInt', env: 'SLUICE_KEEP_ALIVE_TIMEOUT_MS' },
  { path: 'server.shutdownTimeoutMs', kind: 'positiveInt', env: 'SLUICE_SHUTDOWN_TIMEOUT_MS' },
  { path: 'clickhouse.url', kind: 'nullableString', env: 'CLICKHOUSE_URL' },
  { path: 'clickhouse.user', kind: 'string', env: 'CLICKHOUSE_USER' },
  { path: 'clickhouse.password', kind: 'string', env: 'CLICKHOUSE_PASSWORD' },
  { path: 'clickhouse.database', kind: 'string', env: 'CLICKHOUSE_DATABASE' },
  { path: 'clickhouse.requestTimeoutMs', kind: 'positiveInt', env: 'CLICKHOUSE_REQUEST_TIMEOUT_MS' },
  { path: 'clickhouse.binary', kind: 'nullableString', env: 'CLICKHOUSE_BINARY' },
  { path: 'clickhouse.startTimeoutMs', kind: 'positiveInt' },
  { path: 'dataDir', kind: 'string', env: 'SLUICE_DATA_DIR' },
  { path: 'bootstrapToken', kind: 'nullableString', env: 'SLUICE_BOOTSTRAP_TOKEN' },
  { path: 'log.level', kind: 'logLevel', env: 'SLUICE_LOG_LEVEL' },
  { path: 'metadata.refreshIntervalMs', kind: 'positiveInt', env: 'SLUICE_METADATA_REFRESH_MS' },
  { path: 'tokens.defaultIngestTtlS', kind: 'positiveInt' },
  { path: 'tokens.defaultPatTtlS', kind: 'nonNegativeInt' },
  { path: 'ingest.maxRawBytes', kind: 'positiveInt', env: 'SLUICE_MAX_RAW_BYTES' },
  { path: 'ingest.maxDecodedBytes', kind: 'positiveInt', env: 'SLUICE_MAX_DECODED_BYTES' },
  { path: 'ingest.maxLineBytes', kind: 'positiveInt', env: 'SLUICE_MAX_LINE_BYTES' },
  { path: 'ingest.taskBytes', kind: 'positiveInt' },
  { path: 'ingest.workers', kind: 'positiveInt', env: 'SLUICE_WORKERS' },
  { path: 'ingest.minBytesPerSecond', kind: 'nonNegativeInt', env: 'SLUICE_MIN_BYTES_PER_SECOND' },
  { path: 'ingest.minRateGraceMs', kind: 'positiveInt' },
  { path: 'writer.maxBatchRows', kind: 'positiveInt' },
  { path: 'writer.flushIntervalMs', kind: 'positiveInt', env: 'SLUICE_FLUSH_INTERVAL_MS' },
  { path: 'writer.minInsertIntervalMs', kind: 'nonNegativeInt' },
  { path: 'writer.retryTimeoutMs', kind: 'positiveInt' },
  { path: 'writer.attemptTimeoutMs', kind: 'positiveInt' },
  { path: 'tail.maxPerOrg', kind: 'positiveInt', env: 'SLUICE_MAX_TAILS_PER_ORG' },
  { path: 'tail.maxBufferedBytes', kind: 'positiveInt' },
  { path: 'tail.eventsPerSecond', kind: 'positiveInt' },
  { path: 'limits.requestsPerMinute', kind: 'positiveInt', env: 'SLUICE_REQUESTS_PER_MINUTE' },
  { path: 'limits.concurrentRequests', kind: 'positiveInt', env: 'SLUICE_CONCURRENT_REQUESTS' },
  { path: 'limits.maxUncommittedBytes', kind: 'positiveInt', env: 'SLUICE_MAX_UNCOMMITTED_BYTES' },
  { path: 'limits.maxReadingRequests', kind: 'positiveInt', env: 'SLUICE_MAX_READING_REQUESTS' },
  { path: 'limits.maxReadingWaitMs', kind: 'positiveInt' },
  { path: 'limits.maxReadingBytes', kind: 'positiveInt', env: 'SLUICE_MAX_READING_BYTES' },
]

const defaultConfigFile = new URL('../config/default.json', import.meta.url)

type Json = Record<string, unknown>

function isObject (value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function getPath (obj: Json, path: string): unknown {
  let cur: unknown = obj
  for (const key of path.split('.')) {
    if (!isObject(cur) || !Object.hasOwn(cur, key)) return undefined
    cur = cur[key]
  }
  return cur
}

function setPath (obj: Json, path: string, value: unknown): void {
  const keys = path.split('.')
  let cur = obj
  for (const key of keys.slice(0, -1)) {
    if (!isObject(cur[key])) cur[key] = {}
    cur = cur[key] as Json
  }
  cur[keys[keys.length - 1]] = value
}

function parseValue (kind: Kind, raw: unknown, fromEnv: boolean): { value?: unknown, problem?: string } {
  switch (kind) {
    case 'string':
      return typeof raw === 'string' ? { value: raw } : { problem: 'must be a string' }
    case 'nullableString':
      if (raw === null || raw === '') return { value: null }
      return typeof raw === 'string' ? { value: raw } : { problem: 'must be a string or null' }
    case 'logLevel':
      return typeof raw === 'string' && (logLevels as readonly string[]).includes(raw)
        ? { value: raw }
        : { problem: `must be one of ${logLevels.join(', ')}` }
    case 'port':
    case 'positiveInt':
    case 'nonNegativeInt': {
      const n = fromEnv && typeof raw === 'string' && /^-?\d+$/.test(raw.trim()) ? Number(raw) : raw
      const min = kind === 'positiveInt' ? 1 : 0
      const max = kind === 'port' ? 65535 : Number.MAX_SAFE_INTEGER
      if (typeof n !== 'number' || !Number.isInteger(n) || n < min || n > max) {
        const what = kind === 'port' ? 'a port number 0-65535' : kind === 'positiveInt' ? 'a positive integer' : 'a non-negative integer'
        return { problem: `must be ${what}` }
      }
      return { value: n }
    }
  }
}

function describe (raw: unknown): string {
  return JSON.stringify(raw) ?? String(raw)
}

function readJsonFile (file: string | URL, problems: string[]): Json {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (err) {
    problems.push(`cannot read config file ${String(file)}: ${(err as Error).message}`)
    return {}
  }
  try {
    const parsed: unknown = JSON.parse(text)
    if (!isObject(parsed)) {
      problems.push(`config file ${String(file)} must hold a JSON object`)
      return {}
    }
    return parsed
  } catch (err) {
    problems.push(`config file ${String(file)} is not valid JSON: ${(err as Error).message}`)
    return {}
  }
}

export interface LoadConfigOptions {
  /** Extra config file (SLUICE_CONFIG); applied over config/default.json. */
  file?: string
  env?: Record<string, string | undefined>
  /** Values applied last, as from code (tests, CLI flags). */
  overrides?: Json
  /** Directory a relative dataDir resolves against. */
  cwd?: string
}

function deepMerge (base: Json, over: Json): Json {
  const out: Json = { ...base }
  for (const key of Object.keys(over)) {
    const value = over[key]
    out[key] = isObject(value) && isObject(out[key]) ? deepMerge(out[key] as Json, value) : value
  }
  return out
}

function deepFreeze<T> (obj: T): T {
  if (isObject(obj)) {
    for (const value of Object.values(obj)) deepFreeze(value)
    Object.freeze(obj)
  }
  return obj
}

const tokenPattern = /^slp_[0-9A-Za-z]{36}$/

export function loadConfig (options: LoadConfigOptions = {}): Config {
  const problems: string[] = []
  const env = options.env ?? {}
  const defaults = readJsonFile(defaultConfigFile, problems)
  const file = options.file ?? env.SLUICE_CONFIG
  const layers: Array<{ source: string, data: Json }> = [{ source: 'config/default.json', data: defaults }]
  if (file) layers.push({ source: file, data: readJsonFile(file, problems) })
  const overrides = options.overrides ?? {}

  const merged: Json = {}
  for (const field of fields) {
    let value: unknown
    let found = false
    for (const layer of layers) {
      const raw = getPath(layer.data, field.path)
      if (raw === undefined) continue
      const parsed = parseValue(field.kind, raw, false)
      if (parsed.problem) problems.push(`${field.path} ${parsed.problem} (got ${describe(raw)} from ${layer.source})`)
      else { value = parsed.value; found = true }
    }
    const envRaw = field.env ? env[field.env] : undefined
    if (field.env && envRaw !== undefined) {
      const parsed = parseValue(field.kind, envRaw, true)
      if (parsed.problem) problems.push(`${field.path} ${parsed.problem} (got ${describe(envRaw)} from ${field.env})`)
      else { value = parsed.value; found = true }
    }
    const overridden = getPath(overrides, field.path)
    if (overridden !== undefined) {
      const parsed = parseValue(field.kind, overridden, false)
      if (parsed.problem) problems.push(`${field.path} ${parsed.problem} (got ${describe(overridden)} from overrides)`)
      else { value = parsed.value; found = true }
    }
    if (!found) problems.push(`${field.path} is missing (set it in config/default.json)`)
    setPath(merged, field.path, value)
  }

  // Per-org overrides: objects of partial OrgLimits, merged across files.
  let orgs: Json = {}
  for (const layer of [...layers, { source: 'overrides', data: overrides }]) {
    const raw = getPath(layer.data, 'limits.orgs')
    if (raw === undefined) continue
    if (!isObject(raw)) { problems.push(`limits.orgs must be an object (from ${layer.source})`); continue }
    orgs = deepMerge(orgs, raw)
  }
  for (const [name, limits] of Object.entries(orgs)) {
    if (!isObject(limits)) { problems.push(`limits.orgs.${name} must be an object`); continue }
    for (const [key, raw] of Object.entries(limits)) {
      if (key !== 'requestsPerMinute' && key !== 'concurrentRequests') {
        problems.push(`limits.orgs.${name}.${key} is not a known limit (requestsPerMinute, concurrentRequests)`)
      } else if (parseValue('positiveInt', raw, false).problem) {
        problems.push(`limits.orgs.${name}.${key} must be a positive integer (got ${describe(raw)})`)
      }
    }
  }
  setPath(merged, 'limits.orgs', orgs)

  const cfg = merged as unknown as Config
  if (cfg.clickhouse.url !== null && cfg.clickhouse.url !== undefined) {
    try {
      const u = new URL(cfg.clickhouse.url)
      if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('protocol')
    } catch {
      problems.push(`clickhouse.url must be an http(s) URL (got ${describe(cfg.clickhouse.url)}${env.CLICKHOUSE_URL ? ' from CLICKHOUSE_URL' : ''})`)
    }
  }
  if (typeof cfg.clickhouse.database === 'string' && !/^[A-Za-z_][A-Za-z0-9_]*$/.test(cfg.clickhouse.database)) {
    problems.push(`clickhouse.database must be a plain identifier (got ${describe(cfg.clickhouse.database)})`)
  }
  if (cfg.bootstrapToken && !tokenPattern.test(cfg.bootstrapToken)) {
    problems.push('bootstrapToken must be a well-formed slp_ token (from SLUICE_BOOTSTRAP_TOKEN): slp_ then 36 base62 characters')
  }
  if (cfg.ingest.maxDecodedBytes < cfg.ingest.maxLineBytes) {
    problems.push('ingest.maxDecodedBytes must be at least ingest.maxLineBytes')
  }
  if (problems.length > 0) throw new ConfigError(problems)

  cfg.dataDir = resolve(options.cwd ?? process.cwd(), cfg.dataDir)
  return deepFreeze(cfg)
}
