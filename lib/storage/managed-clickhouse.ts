// A local ClickHouse that Sluice starts and supervises when CLICKHOUSE_URL is not set.
//
// Contract:
// - startManagedClickHouse() resolves only once the server answers `GET /ping` with `Ok.`; it
//   rejects with MissingClickHouseError when no binary is found, and otherwise with an error that
//   quotes the tail of the server's logs when the server exits or stays silent past startTimeoutMs.
// - The server listens on 127.0.0.1 only, on ports picked free at start; `url` never changes for
//   the life of the object, restarts included.
// - An unexpected exit is logged and followed by a restart after a backoff (250 ms doubling to
//   30 s, reset after 60 s of health); 'crash' is emitted at the exit, 'restart' once the new
//   process answers. With `restart: false` only 'crash' is emitted.
// - stop() sends SIGTERM, SIGKILLs after stopTimeoutMs, and resolves when the process is gone.
//   If Node exits without stop(), the 'exit' hook SIGKILLs the server synchronously. If Node is
//   SIGKILLed itself nothing can run, so the next start on the same data dir kills the leftover
//   server (found by pid file or ClickHouse's `status` file, checked to be ours by command line),
//   unless the Sluice that started it still runs: then starting fails and nothing is killed.
// - Callers close their keep-alive connections before stop(): ClickHouse holds its shutdown for
//   seconds while an idle connection stays open.
import { execFileSync, spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { EventEmitter, once } from 'node:events'
import { accessSync, closeSync, constants, fstatSync, mkdirSync, openSync, readFileSync, readSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { get } from 'node:http'
import { createServer } from 'node:net'
import type { AddressInfo, Server } from 'node:net'
import { basename, delimiter, join, resolve } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import type { Logger } from '../logger.ts'

export interface ClickHouseCommand { command: string, args: string[] }
export interface ClickHousePorts { http: number, tcp: number }

export interface ManagedClickHouseOptions {
  /** Data, config, logs and pid file all live here: `${SLUICE_DATA_DIR}/clickhouse`. */
  dataDir: string
  /** Path or name of the server binary; searched for when absent. */
  binary?: string | null
  /** Milliseconds a (re)started server has to answer /ping. */
  startTimeoutMs: number
  /** Milliseconds stop() waits after SIGTERM before SIGKILL; 15 000 by default. */
  stopTimeoutMs?: number
  log: Logger
  /** Restart the server when it dies unexpectedly; true by default. */
  restart?: boolean
}

/** 'crash' when the server exits unasked; 'restart' once its replacement answers /ping. */
export interface ManagedClickHouseEvents {
  crash: [{ pid: number | undefined, code: number | null, signal: NodeJS.Signals | null }]
  restart: [{ pid: number, attempt: number }]
}

const searchDirs = ['/usr/sbin', '/usr/bin', '/usr/local/bin']
const pidFileName = 'sluice-clickhouse.pid'
const pollIntervalMs = 50 // /ping answers within a few ms of the port opening; 50 ms wastes little
const backoffBaseMs = 250
const backoffMaxMs = 30_000 // a server that cannot start should not spin, nor wait minutes once fixed
const healthyAfterMs = 60_000 // up this long and a crash counts as the first, not the nth
const startAttempts = 3 // a port picked free can be taken before ClickHouse binds it
const defaultStopTimeoutMs = 15_000 // ClickHouse lets running queries finish for up to 5 s first

export class MissingClickHouseError extends Error {
  constructor (binary?: string | null) {
    super((binary
      ? `The ClickHouse binary "${binary}" was not found or is not executable.`
      : `No ClickHouse binary found (looked for clickhouse-server and clickhouse on PATH and in ${searchDirs.join(', ')}).`) +
      ' Without CLICKHOUSE_URL Sluice runs its own ClickHouse, so either install it' +
      ' (Debian/Ubuntu: `sudo apt-get install clickhouse-server`; elsewhere: https://clickhouse.com/docs/en/install)' +
      ' or set CLICKHOUSE_URL to an existing server, e.g. CLICKHOUSE_URL=http://127.0.0.1:8123.')
    this.name = 'MissingClickHouseError'
  }
}

function isExecutableFile (file: string): boolean {
  try {
    accessSync(file, constants.X_OK)
    return statSync(file).isFile()
  } catch {
    return false
  }
}

/** `clickhouse-server` is preferred; the single `clickhouse` binary needs `server` as first argument. */
export function findClickHouseBinary (
  explicit?: string | null,
  dirs: readonly string[] = [...(process.env.PATH ?? '').split(delimiter), ...searchDirs],
): ClickHouseCommand | null {
  const names = explicit ? [explicit] : ['clickhouse-server', 'clickhouse']
  for (const name of names) {
    const candidates = name.includes('/') ? [resolve(name)] : dirs.filter(Boolean).map((dir) => join(dir, name))
    const found = candidates.find(isExecutableFile)
    if (found) return { command: found, args: basename(found) === 'clickhouse' ? ['server'] : [] }
  }
  return null
}

const escapeXml = (text: string): string =>
  text.replace(/[<>&'"]/g, (ch) => `&#${ch.charCodeAt(0)};`)

/** Writes `config.xml` into dataDir and returns its path. Users, profiles and quotas are inline. */
export function writeClickHouseConfig (dataDir: string, ports: ClickHousePorts): string {
  const dir = resolve(dataDir)
  const at = (sub: string): string => escapeXml(join(dir, sub))
  mkdirSync(dir, { recursive: true })
  // No interserver_http_port (nor mysql/postgresql ports on newer versions): unset means unopened.
  const xml = `<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><size>100M</size><count>3</count>
    <log>${at('clickhouse-server.log')}</log><errorlog>${at('clickhouse-server.err.log')}</errorlog></logger>
  <listen_host>127.0.0.1</listen_host><http_port>${ports.http}</http_port><tcp_port>${ports.tcp}</tcp_port>
  <path>${at('data')}/</path><tmp_path>${at('tmp')}/</tmp_path>
  <user_files_path>${at('user_files')}/</user_files_path><format_schema_path>${at('format_schemas')}/</format_schema_path>
  <timezone>UTC</timezone>
  <!-- The defaults (5 GiB of marks, 8 GiB uncompressed) assume a host of its own; this one shares it. -->
  <mark_cache_size>536870912</mark_cache_size><uncompressed_cache_size>536870912</uncompressed_cache_size>
  <max_concurrent_queries>100</max_concurrent_queries>
  <default_profile>default</default_profile><default_database>default</default_database>
  <users><default><password></password><networks><ip>127.0.0.1</ip><ip>::1</ip></networks>
    <profile>default</profile><quota>default</quota></default></users>
  <profiles><default></default></profiles><quotas><default></default></quotas>
</yandex>
`
  const file = join(dir, 'config.xml')
  writeFileSync(file, xml)
  return file
}

/** Two distinct free ports: both are held at once so the OS cannot hand out the same one twice. */
async function reservePorts (): Promise<ClickHousePorts> {
  const servers: Server[] = [createServer(), createServer()]
  for (const server of servers) {
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
  }
  const [http, tcp] = servers.map((server) => (server.address() as AddressInfo).port)
  await Promise.all(servers.map((server) => new Promise((done) => server.close(done))))
  return { http, tcp }
}

function commandLineOf (pid: number): string {
  try {
    if (process.platform === 'linux') return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ') // '' for a zombie
    return execFileSync('ps', ['-o', 'command=', '-p', String(pid)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })
  } catch {
    return ''
  }
}

/** True while pid is a live ClickHouse started on dataDir's config, so a reused pid is never hit. */
function isClickHouseOf (pid: number, dataDir: string): boolean {
  const commandLine = ` ${commandLineOf(pid).trim()} `
  return commandLine.includes('clickhouse') && commandLine.includes(` --config-file=${join(resolve(dataDir), 'config.xml')} `)
}

/**
 * Stops a ClickHouse this process did not spawn (a leftover, or one started detached): SIGTERM,
 * SIGKILL after timeoutMs. Does nothing unless pid runs on dataDir's config; returns whether it did.
 */
export async function terminateClickHouse (pid: number, dataDir: string, timeoutMs: number): Promise<boolean> {
  if (!Number.isInteger(pid) || pid <= 0 || !isClickHouseOf(pid, dataDir)) return false
  for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
    try { process.kill(pid, signal) } catch {}
    for (const deadline = Date.now() + timeoutMs; Date.now() < deadline; await sleep(pollIntervalMs)) {
      if (!isClickHouseOf(pid, dataDir)) return true
    }
  }
  return true
}

/** The last `bytes` of a log file (which may be 100 MB), or '' when there is none. */
function tailOf (file: string, bytes = 1024): string {
  let fd: number | undefined
  try {
    fd = openSync(file, 'r')
    const buffer = Buffer.alloc(bytes)
    const length = readSync(fd, buffer, 0, bytes, Math.max(0, fstatSync(fd).size - bytes))
    return buffer.toString('utf8', 0, length).trim()
  } catch {
    return ''
  } finally {
    if (fd !== undefined) closeSync(fd)
  }
}

function answersPing (url: string): Promise<boolean> {
  return new Promise((done) => {
    // No keep-alive: ClickHouse holds its shutdown for seconds while an idle connection is open.
    const req = get(`${url}/ping`, { agent: false, timeout: 1_000 }, (res) => {
      let body = ''
      res.setEncoding('utf8').on('data', (chunk: string) => { body += chunk })
        .on('end', () => done(body === 'Ok.\n')).on('error', () => done(false))
    })
    req.on('timeout', () => req.destroy()).on('error', () => done(false))
  })
}

function isRunning (pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/**
 * A ClickHouse still running on dataDir is killed when the Sluice that started it is gone (it
 * crashed or was SIGKILLed). One whose Sluice still runs is left alone: starting fails instead.
 */
async function clearLeftovers (dataDir: string, options: ManagedClickHouseOptions): Promise<void> {
  const pidsIn = (file: string): number[] => (tailOf(join(dataDir, file)).match(/\d+/g) ?? []).map(Number)
  const [pid, owner] = pidsIn(pidFileName) // `${clickhouse} ${sluice}`, written by #spawn
  if (owner !== undefined && owner !== process.pid && isRunning(owner) && isClickHouseOf(pid, dataDir)) {
    throw new Error(`${dataDir} is in use by ClickHouse pid ${pid} of the running Sluice pid ${owner}; stop that one or give this one another data dir`)
  }
  for (const leftover of [pid, pidsIn('data/status')[0]]) { // ClickHouse writes `PID: n` to status
    if (await terminateClickHouse(leftover, dataDir, options.stopTimeoutMs ?? defaultStopTimeoutMs)) {
      options.log.warn('stopped a leftover ClickHouse on this data dir', { pid: leftover, dataDir })
    }
  }
}

async function stopChild (child: ChildProcess | undefined, timeoutMs: number): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise((done) => child.once('exit', done))
  child.kill('SIGTERM')
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs)
  await exited
  clearTimeout(timer)
}

export class ManagedClickHouse extends EventEmitter<ManagedClickHouseEvents> {
  readonly url: string
  #command: ClickHouseCommand
  #dataDir: string
  #options: ManagedClickHouseOptions
  #log: Logger
  #child: ChildProcess | undefined
  #isReady = false
  #isStopping = false
  #stopped: Promise<void> | undefined
  #restartTimer: NodeJS.Timeout | undefined
  #failures = 0 // restarts since the server was last healthy; drives the backoff
  #readyAt = 0
  // A server outliving us would hold the data dir lock. SIGKILL loses only in-flight work: parts
  // become visible by an atomic rename, so they are never half-written.
  #killOnExit = (): void => { this.#child?.kill('SIGKILL') }

  /** Use startManagedClickHouse(); the constructor only wires state. */
  constructor (command: ClickHouseCommand, dataDir: string, ports: ClickHousePorts, options: ManagedClickHouseOptions) {
    super()
    this.url = `http://127.0.0.1:${ports.http}`
    this.#command = command
    this.#dataDir = dataDir
    this.#options = options
    this.#log = options.log.child({ component: 'managed-clickhouse' })
    process.on('exit', this.#killOnExit)
  }

  /** The current server process; it changes on restart. */
  get pid (): number | undefined { return this.#child?.pid }

  static async start (options: ManagedClickHouseOptions): Promise<ManagedClickHouse> {
    const command = findClickHouseBinary(options.binary)
    if (!command) throw new MissingClickHouseError(options.binary)
    const dataDir = resolve(options.dataDir)
    mkdirSync(dataDir, { recursive: true })
    await clearLeftovers(dataDir, options)
    for (let attempt = 1; ; attempt++) {
      const ports = await reservePorts()
      writeClickHouseConfig(dataDir, ports)
      const ch = new ManagedClickHouse(command, dataDir, ports, options)
      try {
        await ch.#launch()
        return ch
      } catch (err) {
        const hasExited = ch.#child?.exitCode !== null || ch.#child?.signalCode !== null
        await ch.stop()
        if (!hasExited || attempt === startAttempts) throw err
        options.log.warn('ClickHouse exited while starting; retrying on other ports', { err, attempt })
      }
    }
  }

  /** Sends SIGTERM, SIGKILL after stopTimeoutMs; resolves once the process is gone. Idempotent. */
  stop (): Promise<void> {
    this.#stopped ??= (async () => {
      this.#isStopping = true
      clearTimeout(this.#restartTimer)
      await stopChild(this.#child, this.#options.stopTimeoutMs ?? defaultStopTimeoutMs)
      process.off('exit', this.#killOnExit)
      rmSync(join(this.#dataDir, pidFileName), { force: true })
    })()
    return this.#stopped
  }

  /** Stops supervising and lets the server outlive this process; returns its pid. */
  detach (): number | undefined {
    this.#isStopping = true
    clearTimeout(this.#restartTimer)
    process.off('exit', this.#killOnExit)
    this.#child?.unref()
    return this.#child?.pid
  }

  #spawn (): ChildProcess {
    const out = openSync(join(this.#dataDir, 'clickhouse-server.stdout.log'), 'a')
    const args = [...this.#command.args, `--config-file=${join(this.#dataDir, 'config.xml')}`]
    let child: ChildProcess
    try {
      // Its own process group: a Ctrl-C meant for Sluice reaches ClickHouse only through stop(),
      // so an orderly shutdown is never mistaken for a crash.
      child = spawn(this.#command.command, args, { cwd: this.#dataDir, detached: true, stdio: ['ignore', out, out] })
    } finally {
      closeSync(out)
    }
    this.#child = child
    child.on('error', () => {}) // a failed spawn sets exitCode, which #launch checks
    child.on('exit', (code, signal) => this.#onExit(child, code, signal))
    if (child.pid) writeFileSync(join(this.#dataDir, pidFileName), `${child.pid} ${process.pid}\n`)
    return child
  }

  async #launch (): Promise<void> {
    const child = this.#spawn()
    const deadline = Date.now() + this.#options.startTimeoutMs
    for (;;) {
      const isUp = await answersPing(this.url)
      // Checked after the ping too: an answer while our process is dead came from someone else.
      const hasExited = child.exitCode !== null || child.signalCode !== null
      if (isUp && !hasExited) break
      if (hasExited || this.#isStopping || Date.now() >= deadline) {
        const why = hasExited ? `exited (${child.signalCode ?? `code ${child.exitCode}`})`
          : this.#isStopping ? 'was stopped' : `did not answer within ${this.#options.startTimeoutMs} ms`
        throw new Error(`ClickHouse (${this.#command.command}) ${why} before ${this.url}/ping answered; ${this.#logTail()}`)
      }
      await sleep(pollIntervalMs)
    }
    this.#isReady = true
    this.#readyAt = Date.now()
  }

  #onExit (child: ChildProcess, code: number | null, signal: NodeJS.Signals | null): void {
    // Exits while (re)starting are reported by #launch, where they are awaited.
    if (child !== this.#child || !this.#isReady || this.#isStopping) return
    this.#isReady = false
    if (Date.now() - this.#readyAt >= healthyAfterMs) this.#failures = 0
    this.#log.error('ClickHouse exited unexpectedly', { pid: child.pid, code, signal, logs: this.#logTail() })
    this.emit('crash', { pid: child.pid, code, signal })
    if (this.#options.restart ?? true) this.#scheduleRestart()
  }

  #scheduleRestart (): void {
    const delayMs = Math.min(backoffBaseMs * 2 ** this.#failures, backoffMaxMs)
    this.#failures++
    this.#log.warn('restarting ClickHouse', { delayMs, attempt: this.#failures })
    this.#restartTimer = setTimeout(() => { void this.#restart() }, delayMs)
  }

  async #restart (): Promise<void> {
    try {
      await this.#launch()
      const pid = this.#child?.pid ?? 0
      this.#log.info('ClickHouse restarted', { pid, attempt: this.#failures })
      this.emit('restart', { pid, attempt: this.#failures })
    } catch (err) {
      if (this.#isStopping) return
      this.#log.error('ClickHouse restart failed', { err })
      await stopChild(this.#child, 0) // it never served: kill it now so it cannot hold the port on the next try
      if (!this.#isStopping) this.#scheduleRestart()
    }
  }

  #logTail (): string {
    return ['clickhouse-server.err.log', 'clickhouse-server.stdout.log']
      .map((name) => `${name} ends with:\n${tailOf(join(this.#dataDir, name)) || '(empty)'}`)
      .join('\n')
  }
}

/** Starts a supervised ClickHouse on dataDir; see the contract at the top of this file. */
export function startManagedClickHouse (options: ManagedClickHouseOptions): Promise<ManagedClickHouse> {
  return ManagedClickHouse.start(options)
}
