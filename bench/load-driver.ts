// Drives load with autocannon's programmatic API and accounts for every answer.
//
// - Bodies: the target's request list (one entry per body of the pool) is what every connection
//   cycles through, each connection from the first entry on.
// - Closed loop (`connections`): each connection sends its next request as soon as the previous is
//   answered. Open loop (`ratePerS`): autocannon's overallRate gives each connection a budget of
//   requests per whole second, all sent at the start of its second; to spread them, the load is
//   split over up to 20 autocannon instances started evenly across one second, each with one
//   connection per request/s (each connection sends once a second). While every answer comes
//   within that second, every request leaves on schedule and the measured latency is the
//   open-loop one; a later answer delays that connection's next send (then `lateSends` > 0).
// - Phases: `warmupS` (not counted), the window of `durationS` (answers received in it are the
//   run's rate and latencies; onWindowStart/onWindowEnd bracket it for CPU readings), then the
//   drain: requests already sent are waited for (up to drainTimeoutS) while each connection, once
//   answered, sends the target's `idle` request instead: headers that promise a body which never
//   comes, so the connection waits without costing the server anything until the run ends (its
//   connections are then closed) and nothing is stored. So every request that was sent gets its
//   answer counted, and the rows acknowledged must equal what the storage gained.
// - Latency is taken per request, from the send of its bytes to the end of its answer, by this
//   process's clock; autocannon's own histogram is not used (its coordinated-omission correction
//   assumes a rate per millisecond, and would invent latencies).
// - A target may rewrite each counted request's body (`prepare`, e.g. a unique marker line) and
//   follow its answer (`onAnswer`) and the phases (`onPhase`): bench/tail.bench.ts does.
import autocannon from 'autocannon'
import type { Instance, RequestContext, RequestSpec } from 'autocannon'
import { setTimeout as sleep } from 'node:timers/promises'

export interface LoadRequest {
  method: 'POST'
  path: string
  headers: Record<string, string>
  body: Buffer
  rows: number
}

export interface LoadTarget {
  url: string
  requests: readonly LoadRequest[]
  /** Sent during the drain: a request whose body never comes (see the top of this file). */
  idle: { method: 'POST', path: string, headers: Record<string, string> }
  /** Rows the answer says were stored, and an error code for an answer that is not a 2xx. */
  readAnswer (status: number, body: string, rows: number): { stored: number, code: string | null }
  /**
   * Optional, at each counted send: the body to send instead of the entry's (e.g. the entry's with
   * a unique line added) and a tag that onAnswer gets back with that request's answer.
   */
  prepare?: (request: LoadRequest) => { body: Buffer, tag: unknown }
  /** Optional, at each counted answer: prepare's tag, and this process's send and answer times (performance.now()). */
  onAnswer?: (tag: unknown, status: number, body: string, sentAt: number, answeredAt: number) => void
  /** Optional: told when the measured window starts and when the drain starts (it ends). */
  onPhase?: (phase: 'window' | 'drain') => void
}

export interface LoadOptions {
  target: LoadTarget
  /** Closed loop: this many connections. */
  connections?: number
  /** Open loop: requests per second over all connections. */
  ratePerS?: number
  warmupS: number
  durationS: number
  drainTimeoutS?: number
  /** Seconds before autocannon abandons a request and resets its connection. */
  timeoutS?: number
  onWindowStart?: () => void
  onWindowEnd?: () => void
}

export class Tally {
  sent = 0
  answered = 0
  stored = 0
  byStatus = new Map<number, number>()
  byCode = new Map<string, number>()
  okLatencyMs: number[] = []
  rejectedLatencyMs: number[] = []

  add (status: number, stored: number, code: string | null, latencyMs: number): void {
    this.answered++
    this.stored += stored
    this.byStatus.set(status, (this.byStatus.get(status) ?? 0) + 1)
    if (code !== null) this.byCode.set(code, (this.byCode.get(code) ?? 0) + 1)
    if (status >= 200 && status < 300) this.okLatencyMs.push(latencyMs)
    else if (status === 429) this.rejectedLatencyMs.push(latencyMs)
  }

  count (predicate: (status: number) => boolean): number {
    let n = 0
    for (const [status, count] of this.byStatus) if (predicate(status)) n += count
    return n
  }
}

export interface LoadResult {
  mode: 'closed' | 'open'
  connections: number
  /** Requests per second asked for (open loop). */
  targetRatePerS: number | null
  windowS: number
  /** Requests sent and answers received during the window. */
  window: Tally
  /** Every request of the run, warm-up and drain included. */
  total: Tally
  /** Requests that never got an answer (timed out, connection reset, or the drain timed out). */
  unanswered: number
  /** Open loop: sends that left later than their second (an answer took longer than 1 s). */
  lateSends: number
  drainS: number
  /** Connection errors and timeouts autocannon reported (a request lost with its connection). */
  requestErrors: number
  timeouts: number
}

const maxInstances = 20

export async function runLoad (options: LoadOptions): Promise<LoadResult> {
  const { target } = options
  let phase: 'warmup' | 'window' | 'drain' = 'warmup'
  const window = new Tally()
  const total = new Tally()
  let lateSends = 0
  const isOpen = options.ratePerS !== undefined

  const setupRequest = (request: RequestSpec, context: RequestContext, entry: LoadRequest): RequestSpec => {
    const now = performance.now()
    // An answer followed at once by a send: the connection's second had already come (1 in 50
    // goes unseen: autocannon clears the context when a connection starts the list over).
    if (isOpen && phase !== 'drain' && typeof context.answeredAt === 'number' && now - (context.answeredAt as number) < 5) lateSends++
    context.sentAt = now
    if (phase === 'drain') {
      context.isCounted = false
      return { ...request, method: target.idle.method, path: target.idle.path, headers: target.idle.headers, body: undefined }
    }
    context.isCounted = true
    total.sent++
    if (phase === 'window') window.sent++
    if (target.prepare) {
      const { body, tag } = target.prepare(entry)
      context.tag = tag
      return { ...request, body }
    }
    return request
  }
  const requests: RequestSpec[] = target.requests.map((r) => ({
    method: r.method, path: r.path, headers: r.headers, body: r.body,
    setupRequest: (request: RequestSpec, context: RequestContext) => setupRequest(request, context, r),
    onResponse: (status: number, body: string, context: RequestContext): void => {
      const now = performance.now()
      context.answeredAt = now
      if (context.isCounted !== true) return
      const latencyMs = now - (context.sentAt as number)
      const { stored, code } = target.readAnswer(status, body, r.rows)
      total.add(status, stored, code, latencyMs)
      if (phase === 'window') window.add(status, stored, code, latencyMs)
      target.onAnswer?.(context.tag, status, body, context.sentAt as number, now)
    },
  }))

  // Closed loop: one instance. Open loop: instances of one connection per request/s, staggered.
  const plans: Array<{ connections: number, rate?: number, delayMs: number }> = []
  if (isOpen) {
    const rate = Math.max(1, Math.round(options.ratePerS!))
    const n = Math.min(maxInstances, rate)
    for (let i = 0; i < n; i++) {
      const share = Math.floor(rate / n) + (i < rate % n ? 1 : 0)
      plans.push({ connections: share, rate: share, delayMs: Math.round(i * 1000 / n) })
    }
  } else {
    plans.push({ connections: options.connections ?? 64, delayMs: 0 })
  }
  const instances: Instance[] = []
  const results: Array<Promise<unknown>> = []
  const timers: NodeJS.Timeout[] = []
  let failure: unknown = null
  let requestErrors = 0
  let timeouts = 0
  for (const plan of plans) {
    timers.push(setTimeout(() => {
      if (phase === 'drain') return
      const instance = autocannon({
        url: target.url,
        connections: plan.connections,
        // Latency is measured here, not by autocannon (see the top of this file).
        ...(plan.rate ? { overallRate: plan.rate, ignoreCoordinatedOmission: true } : {}),
        duration: 24 * 3600, // ended by stop() after the drain
        timeout: options.timeoutS ?? 60,
        requests,
      })
      // Invalid options come back as a rejected instance that cannot be stopped.
      if (typeof instance.stop === 'function') instances.push(instance)
      instance.on('reqError', () => { requestErrors++ })
      results.push(Promise.resolve(instance).then((result) => {
        timeouts += result.timeouts
      }, (err: unknown) => { failure ??= err }))
    }, plan.delayMs))
  }

  await sleep(options.warmupS * 1000)
  phase = 'window'
  target.onPhase?.('window')
  options.onWindowStart?.()
  const windowStart = performance.now()
  await sleep(options.durationS * 1000)
  options.onWindowEnd?.()
  const windowS = (performance.now() - windowStart) / 1000
  phase = 'drain'
  target.onPhase?.('drain')

  const drainStart = performance.now()
  const drainDeadline = drainStart + (options.drainTimeoutS ?? 30) * 1000
  // A request on a connection that failed (reset, EPIPE, timeout, or closed by the server right
  // after an answer) is never answered, and autocannon does not always report it: stop once every
  // request is accounted for, or when no answer came for quietS.
  const quietMs = 5_000
  let lastAnswered = total.answered
  let lastAnswerAt = performance.now()
  while (total.answered + requestErrors < total.sent && performance.now() < drainDeadline) {
    await sleep(25)
    if (total.answered !== lastAnswered) {
      lastAnswered = total.answered
      lastAnswerAt = performance.now()
    } else if (performance.now() - lastAnswerAt > quietMs) {
      break
    }
  }
  const drainS = (performance.now() - drainStart) / 1000
  for (const t of timers) clearTimeout(t)
  for (const instance of instances) instance.stop()
  await Promise.all(results)
  if (failure !== null) throw failure

  return {
    mode: isOpen ? 'open' : 'closed',
    connections: plans.reduce((sum, p) => sum + p.connections, 0),
    targetRatePerS: options.ratePerS ?? null,
    windowS,
    window,
    total,
    unanswered: total.sent - total.answered,
    lateSends,
    drainS,
    requestErrors,
    timeouts,
  }
}

/** The p-quantile (0..1) of an unsorted list, by nearest rank; NaN when empty. */
export function quantile (values: readonly number[], p: number): number {
  if (values.length === 0) return NaN
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))]
}
