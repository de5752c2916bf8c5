// Sluice as the benchmark runs it: `node lib/main.ts` in a child process (so that its CPU and
// memory are its own and measurable from /proc), against a ClickHouse the benchmark started, on
// a free port, logging warnings and errors only. start() resolves once /readyz answers; stop()
// sends SIGTERM (Sluice finishes what is in flight and flushes) and SIGKILLs after a timeout.
// The child's stdout and stderr go to files in the run's temp dir; their tail is quoted when the
// child fails to start or dies.
import { spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { closeSync, mkdirSync, openSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { serverEnv, serverNodeFlags } from '../lib/node-flags.ts'

const defaultMainFile = new URL('../lib/main.ts', import.meta.url).pathname

export interface SluiceChildOptions {
  /** Where Sluice keeps `admin-token`; logs are written next to it. */
  dataDir: string
  clickhouseUrl: string
  database: string
  /** Extra environment (SLUICE_WORKERS, SLUICE_FLUSH_INTERVAL_MS, SLUICE_CONFIG...). */
  env: Record<string, string>
  /** Options for node itself, e.g. --cpu-prof, after lib/node-flags.ts's (a later flag wins). */
  nodeArgs?: string[]
  /** lib/main.ts of another checkout, to measure a change against this one; default: this one's. */
  mainFile?: string
  startTimeoutMs?: number
}

/** `--env NAME=VALUE` arguments as an environment. */
export function envPairs (pairs: readonly string[]): Record<string, string> {
  const env: Record<string, string> = {}
  for (const pair of pairs) {
    const at = pair.indexOf('=')
    if (at <= 0) throw new Error(`--env wants NAME=VALUE (got ${pair})`)
    env[pair.slice(0, at)] = pair.slice(at + 1)
  }
  return env
}

export class SluiceChild {
  readonly url: string
  readonly pid: number
  readonly logFile: string
  readonly #dataDir: string
  #child: ChildProcess
  #exited: Promise<void>

  private constructor (child: ChildProcess, url: string, logFile: string, dataDir: string) {
    this.#child = child
    this.#dataDir = dataDir
    this.url = url
    this.pid = child.pid!
    this.logFile = logFile
    this.#exited = new Promise((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) resolve()
      else child.once('exit', () => resolve())
    })
  }

  static async start (options: SluiceChildOptions): Promise<SluiceChild> {
    mkdirSync(options.dataDir, { recursive: true })
    const logFile = join(options.dataDir, `sluice-${Date.now()}.log`)
    const out = openSync(logFile, 'a')
    let child: ChildProcess
    try {
      child = spawn(process.execPath, [...serverNodeFlags, ...(options.nodeArgs ?? []), options.mainFile ?? defaultMainFile], {
        env: {
          ...process.env,
          ...serverEnv,
          SLUICE_PORT: '0',
          SLUICE_HOST: '127.0.0.1',
          SLUICE_DATA_DIR: options.dataDir,
          CLICKHOUSE_URL: options.clickhouseUrl,
          CLICKHOUSE_DATABASE: options.database,
          SLUICE_LOG_LEVEL: 'warn',
          // The benchmarks send a few fixed bodies again and again: recognised as retries, they
          // would be answered without being stored (ingest.dedupeRetries, docs/api.md section 6.7).
          SLUICE_DEDUPE_RETRIES: 'off',
          ...options.env,
        },
        stdio: ['ignore', out, out],
      })
    } finally {
      closeSync(out)
    }
    // The welcome text on stderr names the address: the only place a port-0 server reports it.
    const deadline = Date.now() + (options.startTimeoutMs ?? 60_000)
    for (;;) {
      const text = readFileSync(logFile, 'utf8')
      const match = /Sluice is running at (http:\/\/\S+)/.exec(text)
      if (match) {
        const sluice = new SluiceChild(child, match[1], logFile, options.dataDir)
        await sluice.#waitReady(deadline)
        return sluice
      }
      if (child.exitCode !== null || child.signalCode !== null || Date.now() > deadline) {
        child.kill('SIGKILL')
        throw new Error(`Sluice did not start (${child.exitCode ?? child.signalCode ?? 'timeout'}); its log ends with:\n${text.slice(-2000)}`)
      }
      await sleep(50)
    }
  }

  get isRunning (): boolean {
    return this.#child.exitCode === null && this.#child.signalCode === null
  }

  async #waitReady (deadline: number): Promise<void> {
    for (;;) {
      try {
        const res = await fetch(`${this.url}/readyz`)
        await res.arrayBuffer()
        if (res.ok) return
      } catch {}
      if (Date.now() > deadline) throw new Error(`Sluice at ${this.url} was not ready in time`)
      await sleep(50)
    }
  }

  /** A JSON call to the management API; throws unless the answer is 2xx. */
  async api<T> (method: string, path: string, token: string, body?: unknown): Promise<T> {
    const res = await fetch(this.url + path, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    const text = await res.text()
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`)
    return JSON.parse(text) as T
  }

  /**
   * The admin token Sluice wrote at its first start, the stream (created unless it exists, as
   * after a restart on the same data) and a new ingest token for it.
   */
  async setUpStream (stream: string): Promise<{ admin: string, token: string }> {
    const admin = readFileSync(join(this.#dataDir, 'admin-token'), 'utf8').trim()
    const { streams } = await this.api<{ streams: Array<{ name: string }> }>('GET', '/api/streams', admin)
    if (!streams.some((s) => s.name === stream)) await this.api('POST', '/api/streams', admin, { name: stream })
    const { token } = await this.api<{ token: string }>('POST', `/api/streams/${stream}/ingest-token`, admin, {})
    return { admin, token }
  }

  /** /metrics as name{labels} -> value. */
  async metrics (): Promise<Map<string, number>> {
    const res = await fetch(`${this.url}/metrics`)
    const out = new Map<string, number>()
    for (const line of (await res.text()).split('\n')) {
      if (line === '' || line.startsWith('#')) continue
      const at = line.lastIndexOf(' ')
      out.set(line.slice(0, at), Number(line.slice(at + 1)))
    }
    return out
  }

  /** Waits until no request is in flight (but this one) and the writer holds no rows. */
  async waitIdle (timeoutMs = 30_000): Promise<boolean> {
    const deadline = Date.now() + timeoutMs
    while (Date.now() < deadline) {
      // Right after an overload run the listen queue can still be full: a failed scrape is retried.
      const m = await this.metrics().catch(() => null)
      if (m && (m.get('sluice_http_in_flight') ?? 0) <= 1 && (m.get('sluice_writer_pending_rows') ?? 0) === 0) return true
      await sleep(100)
    }
    return false
  }

  /** SIGTERM, SIGKILL after timeoutMs; resolves once the process is gone. */
  async stop (timeoutMs = 15_000): Promise<void> {
    if (!this.isRunning) return
    this.#child.kill('SIGTERM')
    const timer = setTimeout(() => this.#child.kill('SIGKILL'), timeoutMs)
    await this.#exited
    clearTimeout(timer)
  }

  /** For process 'exit' hooks, where nothing can be awaited. */
  killNow (): void {
    if (this.isRunning) this.#child.kill('SIGKILL')
  }
}
