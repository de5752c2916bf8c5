// The fault suite's tools: Sluice as a child process (so it can be SIGTERMed or SIGKILLed), a
// sequence-numbered load whose every event carries a unique number in `path` ("/s/<n>"), and a
// checker that reads ClickHouse afterwards and classifies every acknowledged (200) event as
// present, missing or duplicated. A request answered 429 or 503 is retried with the same events,
// as a client would, so a duplicate can be traced to the answers its request got: after a
// dropped connection or storage_outcome_unknown a duplicate is allowed (the answer said so);
// after only 503 storage_unavailable / shutting_down / 429 it contradicts the answer.
import { spawn } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import type { ChildProcess } from 'node:child_process'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import { request, Agent } from 'undici'
import { createClickHouse } from '../../lib/storage/clickhouse.ts'
import type { ClickHouse } from '../../lib/storage/clickhouse.ts'
import { serverEnv, serverNodeFlags } from '../../lib/node-flags.ts'

const main = new URL('../../lib/main.ts', import.meta.url).pathname

export interface SluiceProcess {
  child: ChildProcess
  url: string
  /** The ClickHouse Sluice writes to (its managed one when it runs one). */
  clickhouseUrl: string
  database: string
  dataDir: string
  adminToken: string
  /** Resolves with the exit code or signal once the process is gone. */
  exited: Promise<string>
  stop (): Promise<void>
}

export interface SluiceProcessOptions {
  /** null: Sluice starts and supervises its own ClickHouse. */
  clickhouseUrl: string | null
  /** Deep-merged over the defaults, as a SLUICE_CONFIG file. */
  config?: Record<string, unknown>
  dataDir?: string
  database?: string
}

/** Starts `node lib/main.ts` and waits for its welcome; stopped (SIGKILL) by stop() if still running. */
export async function startSluiceProcess (options: SluiceProcessOptions): Promise<SluiceProcess> {
  const dataDir = options.dataDir ?? await mkdtemp(join(tmpdir(), 'sluice-faults-'))
  const database = options.database ?? `sluice_faults_${Math.random().toString(16).slice(2, 10)}`
  const configFile = join(dataDir, 'faults-config.json')
  await writeFile(configFile, JSON.stringify({ ...options.config, log: { level: 'info' } }))
  const env: NodeJS.ProcessEnv = {
    ...process.env, ...serverEnv, SLUICE_DATA_DIR: dataDir, SLUICE_PORT: '0', SLUICE_CONFIG: configFile, CLICKHOUSE_DATABASE: database,
  }
  if (options.clickhouseUrl === null) delete env.CLICKHOUSE_URL
  else env.CLICKHOUSE_URL = options.clickhouseUrl
  const child = spawn(process.execPath, [...serverNodeFlags, main], { env, stdio: ['ignore', 'pipe', 'pipe'] })
  const exited = new Promise<string>((resolve) => child.once('exit', (code, signal) => resolve(signal ?? String(code))))
  let stderr = ''
  let stdout = ''
  let clickhouseUrl = options.clickhouseUrl ?? ''
  child.stdout!.setEncoding('utf8').on('data', (d: string) => {
    stdout += d
    if (!clickhouseUrl) {
      const m = /"msg":"listening".*?"clickhouse":"([^"]+)"/.exec(stdout)
      if (m) clickhouseUrl = m[1]
    }
    if (stdout.length > 1_000_000) stdout = stdout.slice(-100_000) // the clickhouse url is found by then
  })
  const url = await new Promise<string>((resolve, reject) => {
    child.stderr!.setEncoding('utf8').on('data', (d: string) => {
      stderr += d
      const m = /Sluice is running at (http:\/\/\S+)/.exec(stderr)
      if (m && stderr.includes('Stop with Ctrl-C')) resolve(m[1])
    })
    void exited.then((how) => reject(new Error(`Sluice exited (${how}) before it listened: ${stderr}`)))
  })
  const adminToken = (await readFile(join(dataDir, 'admin-token'), 'utf8')).trim()
  return {
    child, url, clickhouseUrl, database, dataDir, adminToken, exited,
    async stop () {
      // SIGTERM first: a managed ClickHouse is stopped with Sluice, and SIGKILL would orphan it.
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM')
        const timer = setTimeout(() => child.kill('SIGKILL'), 30_000)
        await exited
        clearTimeout(timer)
      }
      if (options.dataDir === undefined) await rm(dataDir, { recursive: true, force: true })
    },
  }
}

/** Creates a stream and an ingest token for it through the API; returns the token. */
export async function createStream (baseUrl: string, adminToken: string, stream: string): Promise<string> {
  const call = async (path: string, body: unknown) => {
    const res = await request(baseUrl + path, {
      method: 'POST', body: JSON.stringify(body), headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
    })
    const json = await res.body.json() as Record<string, unknown>
    if (res.statusCode !== 201) throw new Error(`${path}: ${res.statusCode} ${JSON.stringify(json)}`)
    return json
  }
  await call('/api/streams', { name: stream })
  return (await call(`/api/streams/${stream}/ingest-token`, {})).token as string
}

/**
 * How a load client retries (docs/api.md section 6.7):
 * - legacy: the same body again, no key, events without a timestamp (a retry may store twice);
 * - keyed: the same body with the same Idempotency-Key (sluice send);
 * - timestamped: the same bytes again, no key, every event with its own ts (Fluent Bit, OTel, syslog);
 * - changing: no key, every event with its ts, but each attempt's body differs (an `attempt`
 *   field): not recognisable as a retry, so duplicates are possible and counted.
 */
export const loadClients = ['legacy', 'keyed', 'timestamped', 'changing'] as const
export type LoadClient = typeof loadClients[number]

/** One answer a batch got: an HTTP status and error code, or 'dropped' (no answer). */
export interface Answer {
  status: number
  code: string | null
  ms: number
  /** Why a dropped request (status 0) got no answer: the client's error code (ECONNRESET, ...). */
  cause?: string
}

export interface BatchRecord {
  first: number
  count: number
  answers: Answer[]
}

export interface LoadOptions {
  /** A function, so the target may change (a restarted Sluice). */
  url: () => string
  stream: string
  token: string
  clients: number
  linesPerRequest: number
  /** Stops starting new batches once this returns true. */
  stopped: () => boolean
  /** Attempts per batch (first try included); default 50. */
  maxAttempts?: number
  /**
   * Once stopped(), a refused batch is given up instead of retried (it counts as unacknowledged).
   * For overload, where every client's last body would otherwise be sent again up to maxAttempts
   * times after the load ends; default false.
   */
  giveUpWhenStopped?: boolean
  /** ms a client waits before a retry, instead of Retry-After (tests keep the load going); default 100. */
  retryDelayMs?: number
  /** ms an HTTP request may take before the load gives up on it (counted as dropped); default 120_000. */
  requestTimeoutMs?: number
  /** How retries are sent; default legacy. */
  client?: LoadClient
  /** First event number (several loads into one check keep their numbers apart); default 0. */
  firstNumber?: number
  /** Called with every answer (or drop) as it comes. */
  onAnswer?: (answer: Answer) => void
}

export interface LoadResult {
  batches: BatchRecord[]
  /** Every answer (or drop) with the time it took. */
  answers: Answer[]
}

/** Sequence-numbered load: each client sends batches of consecutive numbers until stopped. */
/**
 * One line of a batch; its `path` carries the event's number, which the checker looks for. How
 * the client retries (loadClients) decides whether it carries a ts, and an attempt number.
 */
function batchLine (n: number, kind: LoadClient, ts: number, attempt: number): string {
  if (kind === 'legacy' || kind === 'keyed') return `{"path":"/s/${n}","status":200}\n`
  if (kind === 'timestamped') return `{"ts":${ts},"path":"/s/${n}","status":200}\n`
  return `{"ts":${ts},"path":"/s/${n}","status":200,"attempt":${attempt}}\n`
}

/**
 * A batch's body. Up to 1 MiB it is one string; larger bodies (up to the 16 MiB ingest.maxRawBytes)
 * are generated in 64 KiB chunks for each attempt, so that 128 clients do not hold 2 GiB of bodies
 * in the test process.
 */
function batchBody (count: number, lineOf: (i: number) => string): { length: number, bytes: string | null, chunks: () => Generator<string> } {
  let length = 0
  for (let i = 0; i < count; i++) length += lineOf(i).length
  const chunks = function * (): Generator<string> {
    let chunk = ''
    for (let i = 0; i < count; i++) {
      chunk += lineOf(i)
      if (chunk.length >= 65_536) {
        yield chunk
        chunk = ''
      }
    }
    if (chunk !== '') yield chunk
  }
  return { length, bytes: length <= 1_048_576 ? [...chunks()].join('') : null, chunks }
}

export async function runLoad (options: LoadOptions): Promise<LoadResult> {
  const batches: BatchRecord[] = []
  const answers: Answer[] = []
  const maxAttempts = options.maxAttempts ?? 50
  const retryDelayMs = options.retryDelayMs ?? 100
  const dispatcher = new Agent({ connections: options.clients, headersTimeout: options.requestTimeoutMs ?? 120_000, bodyTimeout: options.requestTimeoutMs ?? 120_000 })
  let next = options.firstNumber ?? 0
  const kind = options.client ?? 'legacy'
  const client = async (): Promise<void> => {
    while (!options.stopped()) {
      const batch: BatchRecord = { first: next, count: options.linesPerRequest, answers: [] }
      next += options.linesPerRequest
      batches.push(batch)
      const ts = Date.now()
      const bodyOf = (attempt: number): ReturnType<typeof batchBody> => batchBody(batch.count, (i) => batchLine(batch.first + i, kind, ts + i, attempt))
      const key = kind === 'keyed' ? randomUUID() : undefined
      let body = bodyOf(1)
      for (let attempt = 1; attempt <= maxAttempts; attempt++) {
        if (kind === 'changing' && attempt > 1) body = bodyOf(attempt)
        const started = performance.now()
        let answer: Answer
        try {
          const res = await request(`${options.url()}/api/ingest/${options.stream}`, {
            method: 'POST', body: body.bytes === null ? Readable.from(body.chunks()) : body.bytes, dispatcher,
            headers: {
              authorization: `Bearer ${options.token}`, 'content-type': 'application/x-ndjson', 'content-length': String(body.length),
              ...(key === undefined ? {} : { 'idempotency-key': key }),
            },
          })
          const text = await res.body.text()
          let code: string | null = null
          try { code = (JSON.parse(text) as { error?: string }).error ?? null } catch {}
          answer = { status: res.statusCode, code, ms: performance.now() - started }
        } catch (err) {
          answer = { status: 0, code: 'dropped', ms: performance.now() - started, cause: (err as { code?: string }).code ?? String(err) }
        }
        batch.answers.push(answer)
        answers.push(answer)
        options.onAnswer?.(answer)
        if (answer.status === 200) break
        if (options.giveUpWhenStopped === true && options.stopped()) break
        if (answer.status !== 0 && answer.status !== 429 && answer.status !== 503) break // not retryable: a bug, reported by the checker
        await new Promise((resolve) => setTimeout(resolve, retryDelayMs))
      }
    }
  }
  await Promise.all(Array.from({ length: options.clients }, client))
  await dispatcher.close()
  return { batches, answers }
}

export interface CheckResult {
  acknowledged: number
  present: number
  missing: number
  duplicated: number
  /** Duplicated events whose batch was only ever answered "nothing stored" (429, 503 unavailable/shutting_down) before its 200. */
  contradicting: number
  /** Events stored whose batch never got a 200 (allowed after a drop or an unknown outcome). */
  unacknowledgedStored: number
  /** Events of batches answered only "nothing stored" (never 200, no drop, no unknown) that are stored. */
  storedAfterNothingStored: number
  /** Answers by status/code. */
  answerCounts: Record<string, number>
  /** Answer time in ms: the largest, and the largest of the non-200 answers. */
  maxAnswerMs: number
  maxFailureAnswerMs: number
  /** Statuses other than 200, 429, 503 and drops: must be none. */
  unexpected: number
}

function gcd (a: number, b: number): number {
  return b === 0 ? a : gcd(b, a % b)
}

/**
 * Reads what ClickHouse stored for the stream and classifies every event of the load. ClickHouse
 * counts per block of `g` consecutive events (g: the largest size that tiles every batch, the
 * batch size for runLoad's loads), so that a run storing 20 million events does not bring 20
 * million rows into this process; the counts are those of a per-event check.
 */
export async function check (clickhouse: ClickHouse, stream: string, load: LoadResult): Promise<CheckResult> {
  const g = load.batches.reduce((acc, b) => gcd(gcd(acc, b.first), b.count), 0) || 1
  const rows = await clickhouse.query<{ k: number, seen: number, twice: number }>(
    `SELECT intDiv(n, ${g}) AS k, count() AS seen, countIf(c > 1) AS twice FROM (
       SELECT toUInt64(substring(path, 4)) AS n, count() AS c FROM events WHERE stream = '${stream}' GROUP BY n
     ) GROUP BY k`)
  /** Per block: events stored at least once, and of those, stored more than once. */
  const stored = new Map<number, { distinct: number, dup: number }>()
  for (const r of rows) stored.set(Number(r.k), { distinct: Number(r.seen), dup: Number(r.twice) })
  const result: CheckResult = {
    acknowledged: 0, present: 0, missing: 0, duplicated: 0, contradicting: 0, unacknowledgedStored: 0,
    storedAfterNothingStored: 0, answerCounts: {}, maxAnswerMs: 0, maxFailureAnswerMs: 0, unexpected: 0,
  }
  for (const a of load.answers) {
    const key = a.status === 200 ? '200' : `${a.status} ${a.code ?? ''}`.trim()
    result.answerCounts[key] = (result.answerCounts[key] ?? 0) + 1
    result.maxAnswerMs = Math.max(result.maxAnswerMs, a.ms)
    if (a.status !== 200) result.maxFailureAnswerMs = Math.max(result.maxFailureAnswerMs, a.ms)
    if (![0, 200, 429, 503].includes(a.status)) result.unexpected++
  }
  for (const b of load.batches) {
    const acked = b.answers.some((a) => a.status === 200)
    const mayBeStored = b.answers.some((a) => a.status === 0 || a.code === 'storage_outcome_unknown')
    for (let k = b.first / g; k < (b.first + b.count) / g; k++) {
      const { distinct, dup } = stored.get(k) ?? { distinct: 0, dup: 0 }
      if (acked) {
        result.acknowledged += g
        result.missing += g - distinct
        result.present += distinct - dup
        result.duplicated += dup
        if (!mayBeStored) result.contradicting += dup
      } else if (distinct > 0) {
        result.unacknowledgedStored += distinct
        if (!mayBeStored && b.answers.length > 0) result.storedAfterNothingStored += distinct
      }
    }
  }
  result.maxAnswerMs = Math.round(result.maxAnswerMs)
  result.maxFailureAnswerMs = Math.round(result.maxFailureAnswerMs)
  return result
}

/** A ClickHouse client for the checker. */
export function checkerClient (url: string, database: string): ClickHouse {
  return createClickHouse({ url, database, user: 'default', password: '', requestTimeoutMs: 60_000 })
}

export function sleep (ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}
