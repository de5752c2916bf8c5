// The one way tests wait for something to happen elsewhere (a server, ClickHouse, a child
// process): poll a probe until it gives a truthy value, and return that value. A deadline bounds
// the wait; missing it fails with what was awaited and the probe's last value, never with a
// silent fall-through into an assertion about something else.
import { setTimeout as sleep } from 'node:timers/promises'

export interface WaitForOptions {
  /** What is awaited, for the failure message ("the request to be in flight"). */
  what?: string
  /** How long to wait before failing, in ms; default 10 000. */
  timeoutMs?: number
  /** Pause between probes, in ms; default 10. */
  intervalMs?: number
}

/** A waitFor that missed its deadline. */
export class WaitTimeoutError extends Error {
  constructor (what: string, timeoutMs: number, last: unknown) {
    super(`waited ${timeoutMs} ms for ${what}; the last probe gave ${describe(last)}`)
    this.name = 'WaitTimeoutError'
  }
}

function describe (value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value)
  } catch {
    return String(value)
  }
}

type Truthy<T> = Exclude<T, null | undefined | false | 0 | ''>

/**
 * Calls `probe` (sync or async) until its value passes `until` (default: is truthy), pausing
 * intervalMs between calls; returns that value. Throws WaitTimeoutError after timeoutMs, quoting
 * the last value. An error the probe throws is not retried: it ends the wait.
 */
export async function waitFor<T> (probe: () => T | Promise<T>, options: WaitForOptions & { until: (value: T) => boolean }): Promise<T>
export async function waitFor<T> (probe: () => T | Promise<T>, options?: WaitForOptions): Promise<Truthy<T>>
export async function waitFor<T> (probe: () => T | Promise<T>, options: WaitForOptions & { until?: (value: T) => boolean } = {}): Promise<T> {
  const timeoutMs = options.timeoutMs ?? 10_000
  const intervalMs = options.intervalMs ?? 10
  const until = options.until ?? Boolean
  const deadline = performance.now() + timeoutMs
  for (;;) {
    const value = await probe()
    if (until(value)) return value
    if (performance.now() >= deadline) throw new WaitTimeoutError(options.what ?? probe.toString().slice(0, 120), timeoutMs, value)
    await sleep(intervalMs)
  }
}
