// The minimum upload data rate of a request body (slow-upload guard, issue 13 hole 1).
//
// Contract: a body must keep arriving at `minBytesPerSecond` on average while the server waits for
// it. The allowance is a budget of time, like a token bucket: it starts at `graceMs`, every ms
// the server waits for the client's next bytes costs one, every byte received earns back
// 1000 / minBytesPerSecond ms, and it never holds more than graceMs. A body whose budget runs out
// is cut with 408 request_timeout. So a client may be silent for graceMs at the start or at any
// point after sending fast enough, but cannot bank minutes by sending fast early and then
// trickle. Time during which the server is not reading (the request's socket paused by
// backpressure: workers or the writer busy) costs nothing; neither does the wait for a reading
// slot, which comes before this stage runs. Apache's mod_reqtimeout (`body=...,MinRate=...`) and
// nginx's client_body_timeout guard against the same slowloris bodies.
import { Transform } from 'node:stream'
import type { TransformCallback } from 'node:stream'
import { SluiceError } from '../errors.ts'

export interface MinDataRateOptions {
  /** Bytes per second the body must average; 0 turns the guard off. */
  minBytesPerSecond: number
  /** ms of budget: silence allowed at the start, and the most that faster sending banks. */
  graceMs: number
  /** Called when the body starts to lag (isBehind turns true), so that admission may reclaim its slot. */
  onBehind?: () => void
}

/** The time budget alone, in ms, driven by the caller's clock: unit-testable with numbers. */
export class DataRateBudget {
  readonly #msPerByte: number
  readonly #graceMs: number
  #budgetMs: number

  constructor (options: MinDataRateOptions) {
    this.#msPerByte = options.minBytesPerSecond > 0 ? 1000 / options.minBytesPerSecond : 0
    this.#graceMs = options.graceMs
    this.#budgetMs = options.graceMs
  }

  /** The server waited `ms` for the client. */
  wait (ms: number): void {
    if (this.#msPerByte > 0) this.#budgetMs -= ms
  }

  /** The client sent `bytes`. */
  receive (bytes: number): void {
    this.#budgetMs = Math.min(this.#graceMs, this.#budgetMs + bytes * this.#msPerByte)
  }

  /** ms of budget left; negative once the client is too slow. */
  get remainingMs (): number {
    return this.#budgetMs
  }

  get isExhausted (): boolean {
    return this.#budgetMs < 0
  }

  /**
   * The client lags the minimum rate: it has had more time than its bytes paid for, by more than
   * one check interval (the time is charged in those steps) or half the grace when that is
   * shorter. What admission asks before cutting a slow body that holds a slot others wait for.
   */
  get isBehind (): boolean {
    return this.#msPerByte > 0 && this.#graceMs - this.#budgetMs > Math.min(maxCheckIntervalMs, this.#graceMs / 2)
  }
}

/** ms between two looks at a body's budget, at most: an exhausted one is cut this late at most. */
const maxCheckIntervalMs = 250

/**
 * A pass-through stage right after the request: counts the body's bytes into a DataRateBudget,
 * and every check interval charges the time elapsed to it when the stage was waiting for input
 * (nothing written to it and not yet passed on: a stage held up by the stages after it has
 * bytes waiting). Errors with 408 request_timeout when the budget runs out, or on cut().
 */
export class MinDataRate extends Transform {
  readonly #budget: DataRateBudget
  readonly #options: MinDataRateOptions
  readonly #now: () => number
  #lastCheck: number
  #timer: NodeJS.Timeout | null = null
  #wasBehind = false

  constructor (options: MinDataRateOptions, now: () => number = performance.now.bind(performance)) {
    super()
    this.#options = options
    this.#budget = new DataRateBudget(options)
    this.#now = now
    this.#lastCheck = now()
    if (options.minBytesPerSecond > 0) {
      const every = Math.max(1, Math.min(maxCheckIntervalMs, Math.floor(options.graceMs / 4)))
      this.#timer = setInterval(() => { this.check() }, every).unref()
    }
  }

  /** The budget left (tests, admission's rate probe). */
  get budget (): DataRateBudget {
    return this.#budget
  }

  /** Charges the time since the last check if the stage waits for input; cuts the body when due. */
  check (): void {
    const now = this.#now()
    if (this.writableLength === 0) this.#budget.wait(now - this.#lastCheck)
    this.#lastCheck = now
    if (this.#budget.isExhausted) {
      this.cut()
      return
    }
    const behind = this.#budget.isBehind
    if (behind && !this.#wasBehind) this.#options.onBehind?.()
    this.#wasBehind = behind
  }

  /** Ends the body with 408 request_timeout. */
  cut (): void {
    this.#stop()
    this.destroy(new SluiceError('request_timeout',
      `The request body arrived slower than ${this.#options.minBytesPerSecond} bytes/s`))
  }

  override _transform (chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.#budget.receive(chunk.length)
    callback(null, chunk)
  }

  override _flush (callback: TransformCallback): void {
    this.#stop() // the whole body is in: nothing left to wait for
    callback()
  }

  override _destroy (err: Error | null, callback: (error?: Error | null) => void): void {
    this.#stop()
    callback(err)
  }

  #stop (): void {
    if (this.#timer !== null) clearInterval(this.#timer)
    this.#timer = null
  }
}
