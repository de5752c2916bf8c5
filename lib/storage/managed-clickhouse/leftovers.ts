// Cleaning up after a Sluice that could not stop its ClickHouse (it crashed or was SIGKILLed):
// a server still running on the data dir holds its lock, so the next start stops it first. A
// process is only ever signalled when its command line shows ClickHouse on this data dir's
// config, so a reused pid is never hit; and never while the Sluice that started it still runs.
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import type { Logger } from '../../logger.ts'
import { configFileName } from './server-config.ts'
import { tailOf } from './log-tail.ts'

/** `${clickhouse pid} ${sluice pid}`, written by the supervisor at each spawn, removed at stop. */
export const pidFileName = 'sluice-clickhouse.pid'

/** Checks whether a signalled server is gone this often (ms): it exits within ms of the signal. */
const pollIntervalMs = 50

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
  return commandLine.includes('clickhouse') && commandLine.includes(` --config-file=${join(resolve(dataDir), configFileName)} `)
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

function isRunning (pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/** The data dir's ClickHouse belongs to a Sluice that still runs: said as a one-line error, not a stack (explore32c F16). */
export class DataDirInUseError extends Error {
  constructor (dataDir: string, pid: number | undefined, owner: number) {
    super(`${dataDir} is in use by ClickHouse pid ${pid} of the running Sluice pid ${owner}; stop that one or give this one another data dir (SLUICE_DATA_DIR)`)
    this.name = 'DataDirInUseError'
  }
}

/**
 * A ClickHouse still running on dataDir is killed when the Sluice that started it is gone (it
 * crashed or was SIGKILLed). One whose Sluice still runs is left alone: starting fails instead.
 */
export async function clearLeftovers (dataDir: string, stopTimeoutMs: number, log: Logger): Promise<void> {
  const pidsIn = (file: string): number[] => (tailOf(join(dataDir, file)).match(/\d+/g) ?? []).map(Number)
  const [pid, owner] = pidsIn(pidFileName)
  if (owner !== undefined && owner !== process.pid && isRunning(owner) && isClickHouseOf(pid, dataDir)) {
    throw new DataDirInUseError(dataDir, pid, owner)
  }
  for (const leftover of [pid, pidsIn('data/status')[0]]) { // ClickHouse writes `PID: n` to status
    if (await terminateClickHouse(leftover, dataDir, stopTimeoutMs)) {
      log.warn('stopped a leftover ClickHouse on this data dir', { pid: leftover, dataDir })
    }
  }
}
