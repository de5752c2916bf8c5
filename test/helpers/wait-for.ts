// The one way tests wait for something to happen elsewhere (a server, ClickHouse, a child
// process): poll a probe until it gives a truthy value, and return that value. A deadline bounds
// the wait; missing it fails with what was awaited and the probe's last value, never with a
// silent fall-through into an assertion about something else.
import { setTimeout as sleep } from 'node:timers/promises'

export interface WaitForOptions {
  /** What is awaited, for the failure message ("the request to be in flight"). */
  what?: string
  /** How long to wait before failing, in ms; default 30 000 (generous: a loaded CI machine is slow, and a wait that holds costs nothing). */
  timeoutMs?: number
  /** Pause between probes, in ms; default 10. */
  intervalMs?: number
  /**
   * Retry a probe that throws, until the deadline (a server still starting, a replica not yet
   * answering); the timeout's message quotes the last error. Default false: an error ends the wait.
   */
  retryErrors?: boolean
}

/** A waitFor that missed its deadline. */
export class WaitTimeoutError extends Error {
  constructor (what: string, timeoutMs: number, last: unknown) {
    super(`waited ${timeoutMs} ms for ${what}; the last probe gave ${describe(last)}`)
    this.name = 'WaitTimeoutError'
  }
}

function describe (value: unknown): string {
  if (value instanceof Error) return `the error ${value.message}`
  try {
    return JSON.stringify(value) ?? String(value)
  } catch {
    return String(value)
  }
}

type Truthy<T> = Exclude<T, null | undefined | false | 0 | ''>

/** An `until` for probes that answer undefined while what they wait for is not there yet. */
export function isDefined<T> (value: T | undefined): value is T {
  return value !== undefined
}

/**
 * Calls `probe` (sync or async) until its value passes `until` (default: is truthy), pausing
 * intervalMs between calls; returns that value. Throws WaitTimeoutError after timeoutMs, quoting
 * the last value. An error the probe throws ends the wait, unless `retryErrors`.
 */
export async function waitFor<T, U extends T> (probe: () => T | Promise<T>, options: WaitForOptions & { until: (value: T) => value is U }): Promise<U>
export async function waitFor<T> (probe: () => T | Promise<T>, options: WaitForOptions & { until: (value: T) => boolean }): Promise<T>
export async function waitFor<T> (probe: () => T | Promise<T>, options?: WaitForOptions): Promise<Truthy<T>>
export async function waitFor<T> (probe: () => T | Promise<T>, options: WaitForOptions & { until?: (value: T) => boolean } = {}): Promise<T> {
  const timeoutMs = options.timeoutMs ?? 30_000
  const intervalMs = options.intervalMs ?? 10
  const until = options.until ?? Boolean
  const deadline = performance.now() + timeoutMs
  for (;;) {
    let value: T | undefined
    let error: Error | undefined
    try {
      value = await probe()
      if (until(value)) return value
    } catch (err) {
      if (options.retryErrors !== true) throw err
      error = err instanceof Error ? err : new Error(String(err))
    }
    if (performance.now() >= deadline) throw new WaitTimeoutError(options.what ?? probe.toString().slice(0, 120), timeoutMs, error ?? value)
    await sleep(intervalMs)
  }
}
