// Supervising the managed ClickHouse: start it (binary found, leftovers cleared, config written,
// ports picked), wait for /ping, restart it with a backoff when it dies, stop it. The contract is
// at the top of ../managed-clickhouse.ts, the folder's entry point.
import { spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { EventEmitter } from 'node:events'
import { closeSync, mkdirSync, openSync, rmSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import type { Logger } from '../../logger.ts'
import { MissingClickHouseError, findClickHouseBinary } from './binary.ts'
import type { ClickHouseCommand } from './binary.ts'
import { configFileName, reservePorts, writeClickHouseConfig } from './server-config.ts'
import type { ClickHousePorts } from './server-config.ts'
import { clearLeftovers, pidFileName } from './leftovers.ts'
import { tailOf } from './log-tail.ts'
import { answersPing } from './ping.ts'

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

const pollIntervalMs = 50 // /ping answers within a few ms of the port opening; 50 ms wastes little
const backoffBaseMs = 250
const backoffMaxMs = 30_000 // a server that cannot start should not spin, nor wait minutes once fixed
const healthyAfterMs = 60_000 // up this long and a crash counts as the first, not the nth
const startAttempts = 3 // a port picked free can be taken before ClickHouse binds it
const defaultStopTimeoutMs = 15_000 // ClickHouse lets running queries finish for up to 5 s first

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
    await clearLeftovers(dataDir, options.stopTimeoutMs ?? defaultStopTimeoutMs, options.log)
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
    const args = [...this.#command.args, `--config-file=${join(this.#dataDir, configFileName)}`]
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

/** Starts a supervised ClickHouse on dataDir; see the contract in ../managed-clickhouse.ts. */
export function startManagedClickHouse (options: ManagedClickHouseOptions): Promise<ManagedClickHouse> {
  return ManagedClickHouse.start(options)
}
