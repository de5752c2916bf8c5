// The stall gate (lib/storage/batch-writer.ts, contract "A stall"; docs/api.md section 6.6):
// after an insert attempt ends without an answer (a timeout, a reset), ClickHouse may be hung
// with that insert in its socket, to commit it when it resumes. A new first attempt sent into it
// meanwhile would end the same way, and its writes would be answered storage_outcome_unknown,
// then stored twice by their clients' retries. So the gate closes: no new first attempt starts
// until a cheap probe (SELECT 1) answers; writes waiting meanwhile get storage_unavailable when
// their time is up (nothing of theirs was sent). Any answer from ClickHouse (the probe, the
// outcome check's queries, an insert) opens it again.
import type { ClickHouse } from './clickhouse.ts'
import type { Logger } from '../logger.ts'
import type { CancelTimer, SetTimer } from './pending-write.ts'

export interface StallGateOptions {
  clickhouse: ClickHouse
  log: Logger
  setTimer: SetTimer
  /** Called when the gate opens again: the writer sends what waits. */
  onOpen: () => void
  /** ms between probes while closed (default 250). */
  probeIntervalMs?: number
  /** ms one probe may take (default 1000). */
  probeTimeoutMs?: number
}

export class StallGate {
  readonly #ch: ClickHouse
  readonly #log: Logger
  readonly #setTimer: SetTimer
  readonly #onOpen: () => void
  readonly #probeIntervalMs: number
  readonly #probeTimeoutMs: number
  #open = true
  #probing = false
  #timer: CancelTimer | undefined
  #closedTimes = 0

  constructor (options: StallGateOptions) {
    this.#ch = options.clickhouse
    this.#log = options.log
    this.#setTimer = options.setTimer
    this.#onOpen = options.onOpen
    this.#probeIntervalMs = options.probeIntervalMs ?? 250
    this.#probeTimeoutMs = options.probeTimeoutMs ?? 1_000
  }

  /** True while new first attempts may start. */
  get isOpen (): boolean { return this.#open }

  /** How many times the gate closed (an attempt ended without an answer while it was open). */
  get closedTimes (): number { return this.#closedTimes }

  /** An insert attempt ended without an answer: close, and probe until ClickHouse answers. */
  noAnswer (): void {
    if (this.#open) {
      this.#open = false
      this.#closedTimes++
      this.#log.warn('ClickHouse did not answer an insert; no new insert starts until it answers a probe')
    }
    if (!this.#probing) this.#scheduleProbe(this.#probeIntervalMs)
  }

  /** ClickHouse answered something: open (and let the writer send what waits). */
  answered (): void {
    if (this.#open) return
    this.#open = true
    this.#timer?.()
    this.#timer = undefined
    this.#log.info('ClickHouse answers again; inserts resume')
    this.#onOpen()
  }

  /** Stops probing (the writer is closed). */
  stop (): void {
    this.#timer?.()
    this.#timer = undefined
  }

  #scheduleProbe (ms: number): void {
    this.#timer?.()
    this.#timer = this.#setTimer(() => { this.#timer = undefined; void this.#probe() }, ms)
  }

  async #probe (): Promise<void> {
    if (this.#open || this.#probing) return
    this.#probing = true
    const controller = new AbortController()
    const cancel = this.#setTimer(() => { controller.abort(new Error('probe timed out')) }, this.#probeTimeoutMs)
    let ok = false
    try {
      await this.#ch.query('SELECT 1', { signal: controller.signal })
      ok = true
    } catch (err) {
      this.#log.debug('stall gate: ClickHouse did not answer the probe', { err })
    } finally {
      cancel()
      this.#probing = false
    }
    if (ok) this.answered()
    else if (!this.#open) this.#scheduleProbe(this.#probeIntervalMs)
  }
}
