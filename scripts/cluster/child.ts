// Child processes of the local cluster (scripts/cluster/local-cluster.ts): ZooKeeper, ClickHouse,
// Sluice and haproxy, each started in its own process group with its output in a log file.
//
// Contract:
// - spawnChild() starts the command detached (own process group: a Ctrl-C in the terminal reaches
//   the children only through stop(), in the cluster's order) with stdout and stderr appended to
//   `logFile`, and registers a synchronous 'exit' hook that SIGKILLs the group if this process
//   exits without stopping it, so no child outlives a crashed launcher or test.
// - waitUntil() polls a probe every pollMs until it answers true, the child exits (rejects with
//   the log's tail) or timeoutMs pass (rejects likewise).
// - stop() sends SIGTERM to the group, SIGKILL after timeoutMs, and resolves once the child is
//   gone; idempotent. kill(signal) sends any signal (SIGSTOP/SIGCONT for fault tests).
import { spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { closeSync, openSync } from 'node:fs'
import { setTimeout as sleep } from 'node:timers/promises'
import { tailOf } from '../../lib/storage/managed-clickhouse.ts'

export interface ChildOptions {
  name: string
  command: string
  args: string[]
  logFile: string
  cwd?: string
  env?: NodeJS.ProcessEnv
}

const pollMs = 100 // every probe here answers in ms once up; 100 ms wastes little

export class Child {
  readonly name: string
  readonly logFile: string
  readonly #process: ChildProcess
  #stopped: Promise<void> | undefined
  readonly #exited: Promise<void>
  #killOnExit = (): void => { this.kill('SIGKILL') }

  constructor (options: ChildOptions) {
    this.name = options.name
    this.logFile = options.logFile
    const out = openSync(options.logFile, 'a')
    try {
      this.#process = spawn(options.command, options.args, {
        cwd: options.cwd, env: options.env ?? process.env, detached: true, stdio: ['ignore', out, out],
      })
    } finally {
      closeSync(out)
    }
    this.#process.on('error', () => {}) // a failed spawn sets exitCode; waitUntil reports it
    this.#exited = new Promise((resolve) => this.#process.once('exit', () => resolve()))
    process.on('exit', this.#killOnExit)
  }

  get pid (): number | undefined { return this.#process.pid }

  get hasExited (): boolean { return this.#process.exitCode !== null || this.#process.signalCode !== null }

  /** Sends a signal to the child's whole process group (java and haproxy fork nothing, ClickHouse does). */
  kill (signal: NodeJS.Signals): void {
    if (this.hasExited || this.#process.pid === undefined) return
    try { process.kill(-this.#process.pid, signal) } catch {}
  }

  /** Resolves when probe() answers true; rejects when the child exits or timeoutMs pass. */
  async waitUntil (probe: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      if (this.hasExited) throw new Error(`${this.name} exited before ${what}; ${this.logFile} ends with:\n${tailOf(this.logFile, 2048)}`)
      if (await probe().catch(() => false)) return
      if (Date.now() >= deadline) throw new Error(`${this.name}: no ${what} within ${timeoutMs} ms; ${this.logFile} ends with:\n${tailOf(this.logFile, 2048)}`)
      await sleep(pollMs)
    }
  }

  /** SIGTERM, SIGKILL after timeoutMs; resolves once the child is gone. */
  stop (timeoutMs = 15_000): Promise<void> {
    this.#stopped ??= (async () => {
      this.kill('SIGCONT') // a SIGSTOPped child cannot act on SIGTERM
      this.kill('SIGTERM')
      const timer = setTimeout(() => this.kill('SIGKILL'), timeoutMs)
      await this.#exited
      clearTimeout(timer)
      process.off('exit', this.#killOnExit)
    })()
    return this.#stopped
  }
}

export function spawnChild (options: ChildOptions): Child {
  return new Child(options)
}
