// Configuration: the defaults of lib/config-schema.ts, then config/default.json, then an optional
// file named by SLUICE_CONFIG, then environment variables, then `overrides` from code. Every
// setting (path, type, env variable, default, description) is written once, in
// lib/config-schema.ts; the Config interface below gives the code its types and is held equal
// to that table by test/config.test.ts. loadConfig() validates everything, refuses keys the table
// does not know (a misspelt key in a file would otherwise be silently ignored), collects every
// problem with where the value came from, throws once (ConfigError), and returns a frozen object.
// Only lib/main.ts and the CLI read process.env; they pass it in here.
import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import type { LogLevel } from './logger.ts'
import { defaultValues, perOrgSettings, settings } from './config-schema.ts'
import type { Setting, SettingPath } from './config-schema.ts'

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
    /** Cluster name in remote_servers; null: single node (lib/storage/cluster-ddl.ts). */
    cluster: string | null
    /** Comma-separated HTTP URLs of the hosts batches are inserted into; null: `url` only. */
    insertUrls: string | null
    /** insert_quorum of event inserts in cluster mode; 0: off. */
    insertQuorum: number
  }
  cluster: {
    /** This node's URL for its peers (live tail across nodes); null: off. */
    nodeUrl: string | null
    /** Secret of POST /internal/live, the same on every node; null: off. */
    secret: string | null
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
    /** 'on': byte-identical bodies of timestamped events are recognised as retries (docs/api.md section 6.7). */
    dedupeRetries: 'on' | 'off'
  }
  writer: {
    /** Rows in one INSERT at most (one request's rows are never split). */
    maxBatchRows: number
    /** ms the oldest waiting row waits for company before its batch is sent. */
    flushIntervalMs: number
    /** ms between two inserts at least, so that low load makes few parts. */
    minInsertIntervalMs: number
    /** ms a write to an idle writer waits since the previous insert started (capped at minInsertIntervalMs). */
    idleInsertIntervalMs: number
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
  query: {
    /** Reads running at once per org (429 too_many_reads past it). */
    maxConcurrentPerOrg: number
    /** Of those, reads scanning raw rows over more than an hour (429 too_many_reads past it). */
    maxScansPerOrg: number
    /** ms a read waits in its org's queue for a slot before 429 too_many_reads (0: none). */
    maxQueueMs: number
    /** ms one ClickHouse query of a read may run (max_execution_time); past it 504 query_timeout. */
    timeoutMs: number
    /** ms an export waits for its client to take more before it cuts the download. */
    exportStallMs: number
    /** Bytes one ClickHouse query of a read may use (max_memory_usage); past it 422 query_too_expensive. */
    maxMemoryBytes: number
    /** Distinct keys a grouping read may count (max_rows_to_group_by); past it 422 query_too_expensive. */
    maxGroupKeys: number
    /** ClickHouse threads per read query (max_threads). */
    maxThreads: number
    /** max_threads of a read's query while no ingest and no other read runs; 0: this machine's cores. */
    idleThreads: number
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

/**
 * The dotted paths of an object type's leaves; a map with an index signature (limits.orgs) is
 * one leaf, as it is one setting.
 */
type LeafPaths<T, P extends string = ''> = {
  [K in keyof T & string]: T[K] extends object
    ? (string extends keyof T[K] ? `${P}${K}` : LeafPaths<T[K], `${P}${K}.`>)
    : `${P}${K}`
}[keyof T & string]
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false
type Assert<T extends true> = T
/** Fails the typecheck when lib/config-schema.ts and the Config interface name different settings. */
export type ConfigMatchesSchema = Assert<Same<LeafPaths<Config>, SettingPath>>

export class ConfigError extends Error {
  readonly problems: string[]
  constructor (problems: string[]) {
    super('invalid configuration:\n  - ' + problems.join('\n  - '))
    this.name = 'ConfigError'
    this.problems = problems
  }
}

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
const identifierPattern = /^[A-Za-z_][A-Za-z0-9_]*$/

/** Reads one value of a setting from a layer; env values are strings, so numbers are parsed there. */
function parseValue (setting: Setting, raw: unknown, fromEnv: boolean): { value?: unknown, problem?: string } {
  switch (setting.type) {
    case 'string':
      return typeof raw === 'string' ? { value: raw } : { problem: 'must be a string' }
    case 'nullableString':
      if (raw === null || raw === '') return { value: null }
      return typeof raw === 'string' ? { value: raw } : { problem: 'must be a string or null' }
    case 'enum': {
      const values = setting.values ?? []
      return typeof raw === 'string' && values.includes(raw) ? { value: raw } : { problem: `must be one of ${values.join(', ')}` }
    }
    case 'httpUrl': {
      if (raw === null || raw === '') return { value: null }
      let ok = false
      try {
        const protocol = typeof raw === 'string' ? new URL(raw).protocol : ''
        ok = protocol === 'http:' || protocol === 'https:'
      } catch { /* not a URL: reported below */ }
      return ok ? { value: raw } : { problem: 'must be an http(s) URL' }
    }
    case 'clickhouseUrl': {
      if (typeof raw === 'string' && raw.startsWith('chdb:')) {
        // The directory as written: an env file's stray blank or a `~` no shell expanded would
        // start an empty database somewhere else (explore34b G6).
        const directory = raw.slice('chdb:'.length)
        if (directory === '') return { problem: 'must name a data directory after chdb: (chdb:./data/chdb)' }
        if (directory.trim() !== directory) return { problem: 'has a blank at the start or end of the directory after chdb: (a stray space?)' }
        if (directory.startsWith('~')) return { problem: 'starts the directory after chdb: with ~, which Sluice does not expand: write the full path' }
        return { value: raw }
      }
      return parseValue({ ...setting, type: 'httpUrl' }, raw, fromEnv)
    }
    case 'nullableIdentifier':
      if (raw === null || raw === '') return { value: null }
      return typeof raw === 'string' && identifierPattern.test(raw) ? { value: raw } : { problem: 'must be a plain identifier or null' }
    case 'httpUrlList': {
      if (raw === null || raw === '') return { value: null }
      const urls = typeof raw === 'string' ? raw.split(',').map((u) => u.trim()) : []
      const isHttp = (u: string): boolean => {
        try { return ['http:', 'https:'].includes(new URL(u).protocol) } catch { return false }
      }
      return urls.length > 0 && urls.every(isHttp) ? { value: urls.join(',') } : { problem: 'must be http(s) URLs separated by commas' }
    }
    case 'identifier':
      return typeof raw === 'string' && identifierPattern.test(raw) ? { value: raw } : { problem: 'must be a plain identifier' }
    case 'slpToken':
      if (raw === null || raw === '') return { value: null }
      // (Its checksum: lib/accounts/bootstrap.ts bootstrapTokenProblem, at start.)
      return typeof raw === 'string' && tokenPattern.test(raw) ? { value: raw } : { problem: 'must be a well-formed slp_ token: slp_ then 36 base62 characters' }
    case 'port':
    case 'positiveInt':
    case 'nonNegativeInt': {
      const n = fromEnv && typeof raw === 'string' && /^-?\d+$/.test(raw.trim()) ? Number(raw) : raw
      const min = setting.type === 'positiveInt' ? 1 : 0
      const max = setting.type === 'port' ? 65535 : Number.MAX_SAFE_INTEGER
      if (typeof n !== 'number' || !Number.isInteger(n) || n < min || n > max) {
        const what = setting.type === 'port' ? 'a port number 0-65535' : setting.type === 'positiveInt' ? 'a positive integer' : 'a non-negative integer'
        return { problem: `must be ${what}` }
      }
      return { value: n }
    }
    case 'orgLimits':
      // Checked key by key in checkOrgLimits; never set from one string.
      return { problem: 'can only be set in a config file' }
  }
}

function problemOf (setting: Setting, problem: string, raw: unknown, source: string): string {
  const got = setting.secret ? '' : `got ${describe(raw)} `
  return `${setting.path} ${problem} (${got}from ${source})`
}

const settingsByPath: ReadonlyMap<string, Setting> = new Map(settings.map((s) => [s.path, s]))
/** Paths of the objects that hold settings ('server', 'limits', ...). */
const groupPaths: ReadonlySet<string> = new Set(settings.flatMap((s) => {
  const keys = s.path.split('.')
  return keys.slice(0, -1).map((_, i) => keys.slice(0, i + 1).join('.'))
}))

/** Edit distance, to name the setting a misspelt key most likely meant. */
function editDistance (a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const cur = [i]
    for (let j = 1; j <= b.length; j++) {
      cur[j] = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1))
    }
    prev = cur
  }
  return prev[b.length]
}

function suggestionFor (path: string, candidates: Iterable<string>): string {
  let best: string | undefined
  let bestDistance = Infinity
  for (const candidate of candidates) {
    const d = editDistance(path.toLowerCase(), candidate.toLowerCase())
    if (d < bestDistance) { best = candidate; bestDistance = d }
  }
  // A few edits: a typo or a wrong case; further away it is more likely a setting we do not have.
  return best !== undefined && bestDistance <= Math.max(2, Math.floor(path.length / 6)) ? ` (did you mean "${best}"?)` : ''
}

/**
 * Refuses keys of a layer that name no setting, and objects where a value belongs (or the
 * reverse), so that a misspelt key stops the start instead of leaving its default in force.
 */
function checkKeys (data: Json, prefix: string, source: string, problems: string[]): void {
  for (const [key, value] of Object.entries(data)) {
    const path = prefix === '' ? key : `${prefix}.${key}`
    const setting = settingsByPath.get(path)
    if (groupPaths.has(path)) {
      if (isObject(value)) checkKeys(value, path, source, problems)
      else problems.push(`${path} must be an object of settings (got ${describe(value)} from ${source})`)
    } else if (setting?.type === 'orgLimits') {
      checkOrgLimits(setting, value, source, problems)
    } else if (setting === undefined) {
      problems.push(`unknown setting "${path}" in ${source}${suggestionFor(path, [...settingsByPath.keys()])}`)
    }
  }
}

/** limits.orgs: org name -> object of the perOrg settings, each validated like its server-wide value. */
function checkOrgLimits (setting: Setting, value: unknown, source: string, problems: string[]): void {
  if (!isObject(value)) { problems.push(`${setting.path} must be an object (got ${describe(value)} from ${source})`); return }
  const allowed = [...perOrgSettings.keys()]
  for (const [name, limits] of Object.entries(value)) {
    const orgPath = `${setting.path}.${name}`
    if (!isObject(limits)) { problems.push(`${orgPath} must be an object (got ${describe(limits)} from ${source})`); continue }
    for (const [key, raw] of Object.entries(limits)) {
      const limit = perOrgSettings.get(key)
      if (limit === undefined) {
        problems.push(`unknown setting "${orgPath}.${key}" in ${source}: per-org limits are ${allowed.join(', ')}${suggestionFor(key, allowed)}`)
        continue
      }
      const parsed = parseValue(limit, raw, false)
      if (parsed.problem) problems.push(`${orgPath}.${key} ${parsed.problem} (got ${describe(raw)} from ${source})`)
    }
  }
}

export function loadConfig (options: LoadConfigOptions = {}): Config {
  const problems: string[] = []
  const env = options.env ?? {}
  const file = options.file ?? env.SLUICE_CONFIG
  const layers: Array<{ source: string, data: Json }> = [{ source: 'config/default.json', data: readJsonFile(defaultConfigFile, problems) }]
  if (file) layers.push({ source: file, data: readJsonFile(file, problems) })
  const overrides = { source: 'overrides', data: options.overrides ?? {} }
  const fileLayers = [...layers, overrides]
  for (const layer of fileLayers) checkKeys(layer.data, '', layer.source, problems)

  const merged = defaultValues()
  for (const setting of settings) {
    if (setting.type === 'orgLimits') continue
    const candidates: Array<{ raw: unknown, source: string, fromEnv: boolean }> = []
    for (const layer of layers) candidates.push({ raw: getPath(layer.data, setting.path), source: layer.source, fromEnv: false })
    if (setting.env) candidates.push({ raw: env[setting.env], source: setting.env, fromEnv: true })
    candidates.push({ raw: getPath(overrides.data, setting.path), source: overrides.source, fromEnv: false })
    for (const { raw, source, fromEnv } of candidates) {
      if (raw === undefined) continue
      const parsed = parseValue(setting, raw, fromEnv)
      if (parsed.problem) problems.push(problemOf(setting, parsed.problem, raw, source))
      else setPath(merged, setting.path, parsed.value)
    }
  }

  // Per-org overrides (validated by checkKeys above), merged across the layers org by org.
  let orgs: Json = {}
  for (const layer of fileLayers) {
    const raw = getPath(layer.data, 'limits.orgs')
    if (isObject(raw)) orgs = deepMerge(orgs, raw)
  }
  setPath(merged, 'limits.orgs', orgs)

  const cfg = merged as unknown as Config
  if (cfg.ingest.maxDecodedBytes < cfg.ingest.maxLineBytes) {
    problems.push('ingest.maxDecodedBytes must be at least ingest.maxLineBytes')
  }
  if (cfg.limits.maxUncommittedBytes < cfg.ingest.maxRawBytes) {
    // A request reserves up to its wire size at admission: a larger one would be 429 server_busy forever.
    problems.push('limits.maxUncommittedBytes must be at least ingest.maxRawBytes: a body of the largest size accepted must fit in it')
  }
  if (cfg.clickhouse.cluster !== null && cfg.clickhouse.url === null) {
    problems.push('clickhouse.cluster needs clickhouse.url: cluster mode runs on a ClickHouse cluster, never the managed one')
  }
  if (cfg.clickhouse.cluster !== null && cfg.clickhouse.url?.startsWith('chdb:') === true) {
    problems.push('clickhouse.cluster cannot run on the embedded engine (chdb:): cluster mode needs ClickHouse servers, set clickhouse.url to one of their HTTP URLs')
  }
  if (cfg.cluster.nodeUrl !== null && cfg.cluster.secret === null) {
    problems.push('cluster.nodeUrl needs cluster.secret: the nodes authenticate the frames they forward each other with it')
  }
  if (problems.length > 0) throw new ConfigError(problems)

  cfg.dataDir = resolve(options.cwd ?? process.cwd(), cfg.dataDir)
  // chdb:<relative directory>, like dataDir, is the working directory's.
  if (cfg.clickhouse.url?.startsWith('chdb:') === true) cfg.clickhouse.url = 'chdb:' + resolve(options.cwd ?? process.cwd(), cfg.clickhouse.url.slice('chdb:'.length))
  return deepFreeze(cfg)
}
