// The live tail: Server-Sent Events to the clients watching a stream, fed straight from the ingest
// pipeline as requests commit (never from a ClickHouse poll).
//
// Contract:
// - While a stream has clients, ingest asks the workers for the clients' distinct filters
//   (liveRequestFor) and, once the request's rows are committed, hands the workers' output to
//   publish(): each client gets the events its filter matched, in body order, as `event: event`.
// - Every second each client gets `event: stats` with the stream's aggregates over that second
//   (all events of the stream, whatever the client's filter); every 15 s a comment heartbeat.
// - A client is never buffered without bound: past `maxBufferedBytes` unsent, or past
//   `eventsPerSecond`, events are dropped for that client and counted, and the count is sent as
//   `event: dropped` once its socket drains. The same allowance, per filter and second, caps how
//   many events the workers serialize for the tail, so a busy stream costs them little: each
//   request may serialize what is left of it, and is charged at its start what requests matched
//   of late (a moving average), the charge settled against what it serialized once it commits.
//   Charging only at commit let every request in flight see the whole allowance: at 256
//   concurrent requests the workers serialized 25,000-93,000 events a second for 12,000 sendable
//   (bench/README.md, "Real-time views"; serializing costs them 2 µs a line). A selective
//   filter's average is small, so its matches are not cut short by the requests in flight.
// - At most `maxTailsPerOrg` clients per org (429 too_many_tails). close() ends every stream.
import type { ServerResponse } from 'node:http'
import { SluiceError } from '../errors.ts'
import type { LiveOutput, LiveRequest } from './live-protocol.ts'
import { LiveStats } from './live-stats.ts'
import { sseComment, sseEvent, sseOpening, writeSseEvent } from './sse-writer.ts'

export interface TailHubOptions {
  maxTailsPerOrg?: number
  /** Bytes written to a client and not yet sent before its events are dropped. */
  maxBufferedBytes?: number
  /** Events per second one client is sent at most; a person reads far fewer. */
  eventsPerSecond?: number
  statsIntervalMs?: number
  heartbeatMs?: number
}

interface TailClient {
  orgId: string
  q: string
  res: ServerResponse
  dropped: number
  tokens: number
  refilledAt: number
}

interface StreamTail {
  clients: Set<TailClient>
  stats: LiveStats
  /** Per filter: events the workers may still serialize this second. */
  allowance: Map<string, number>
  /** Per filter: matching events per request, a moving average (what a request is charged at its start). */
  matchesPerRequest: Map<string, number>
  /** Counts allowance periods; a start charge is settled only within its own. */
  period: number
}

/** What a request was charged at its start, per filter, from which stream's allowance period. */
interface StartCharge { tail: StreamTail, period: number, charged: number[] }

/** Weight of the newest request in the moving average of matches per request. */
const averageWeight = 0.25

/** How long a client that lost its tail waits before reconnecting (the SSE `retry:` field), ms. */
const reconnectMs = 2000

/** Filters a task can carry: one bit each in a 32-bit mask. */
const maxFilters = 31

/** Headers of a tail response (tail-route.ts sends them alone to a HEAD). */
export const tailResponseHeaders = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache, no-transform',
  'x-accel-buffering': 'no', // proxies such as nginx must not hold events back
} as const

/** One filter's share of a request: its events' SSE frames, and what the workers dropped. */
interface FilterFrames { bytes: Buffer, count: number, dropped: number }

/** Bytes [start, end) of the frames the worker wrote, as a view (no copy). */
function viewOf (out: LiveOutput, start: number, end: number): Buffer {
  return Buffer.from(out.frames.buffer, out.frames.byteOffset + start, end - start)
}

/** Frame i of `out`. */
function frameOf (out: LiveOutput, i: number): Buffer {
  return viewOf(out, i === 0 ? 0 : out.ends[i - 1], out.ends[i])
}

/** The frames of the events that matched filter `bit`, joined (runs of them as one view each). */
function framesFor (outputs: LiveOutput[], bit: number): FilterFrames {
  const parts: Buffer[] = []
  let count = 0
  let dropped = 0
  for (const out of outputs) {
    dropped += out.dropped[bit]
    let runStart = -1
    let runEnd = 0
    for (let i = 0; i < out.ends.length; i++) {
      if ((out.masks[i] & (1 << bit)) === 0) continue
      const start = i === 0 ? 0 : out.ends[i - 1]
      if (start !== runEnd || runStart < 0) {
        if (runStart >= 0) parts.push(viewOf(out, runStart, runEnd))
        runStart = start
      }
      runEnd = out.ends[i]
      count++
    }
    if (runStart >= 0) parts.push(viewOf(out, runStart, runEnd))
  }
  return { bytes: parts.length === 1 ? parts[0] : Buffer.concat(parts), count, dropped }
}

export class TailHub {
  readonly #maxTailsPerOrg: number
  readonly #maxBufferedBytes: number
  readonly #eventsPerSecond: number
  readonly #streams = new Map<string, StreamTail>()
  readonly #perOrg = new Map<string, number>()
  readonly #charges = new WeakMap<LiveRequest, StartCharge>()
  readonly #timers: NodeJS.Timeout[]
  #clientCount = 0
  #closed = false

  constructor (options: TailHubOptions = {}) {
    this.#maxTailsPerOrg = options.maxTailsPerOrg ?? 10
    this.#maxBufferedBytes = options.maxBufferedBytes ?? 1024 * 1024
    this.#eventsPerSecond = options.eventsPerSecond ?? 2000
    this.#timers = [
      setInterval(() => this.#emitStats(), options.statsIntervalMs ?? 1000),
      setInterval(() => this.#broadcast(sseComment('heartbeat')), options.heartbeatMs ?? 15_000),
    ]
    for (const timer of this.#timers) timer.unref()
  }

  get clientCount (): number { return this.#clientCount }

  /** Starts an SSE response for a client of (org, stream); 429 past the org's limit. */
  open (res: ServerResponse, orgId: string, stream: string, q: string): void {
    if (this.#closed) throw new SluiceError('shutting_down', undefined, { retryAfter: 1 })
    const inOrg = this.#perOrg.get(orgId) ?? 0
    if (inOrg >= this.#maxTailsPerOrg) {
      throw new SluiceError('too_many_tails', `At most ${this.#maxTailsPerOrg} live tails per org; close one first`, { retryAfter: 5 })
    }
    const key = orgId + '/' + stream
    let tail = this.#streams.get(key)
    if (!tail) {
      tail = { clients: new Set(), stats: new LiveStats(), allowance: new Map(), matchesPerRequest: new Map(), period: 0 }
      this.#streams.set(key, tail)
    }
    const client: TailClient = { orgId, q, res, dropped: 0, tokens: this.#eventsPerSecond, refilledAt: Date.now() }
    tail.clients.add(client)
    this.#perOrg.set(orgId, inOrg + 1)
    this.#clientCount++

    res.writeHead(200, tailResponseHeaders)
    res.write(sseOpening(reconnectMs, 'connected'))
    res.on('drain', () => {
      if (client.dropped > 0) {
        writeSseEvent(res, 'dropped', `{"count":${client.dropped}}`)
        client.dropped = 0
      }
    })
    res.once('close', () => {
      tail.clients.delete(client)
      if (tail.clients.size === 0 && this.#streams.get(key) === tail) this.#streams.delete(key)
      const left = (this.#perOrg.get(orgId) ?? 1) - 1
      if (left > 0) this.#perOrg.set(orgId, left)
      else this.#perOrg.delete(orgId)
      this.#clientCount--
    })
  }

  /** What ingest asks the workers for this stream, or null when nobody watches it. */
  liveRequestFor (orgId: string, stream: string): LiveRequest | null {
    const tail = this.#streams.get(orgId + '/' + stream)
    if (!tail) return null
    const filters = [...new Set([...tail.clients].map((c) => c.q))].slice(0, maxFilters)
    const caps = filters.map((q) => tail.allowance.get(q) ?? this.#eventsPerSecond)
    const charged = filters.map((q, i) => Math.min(caps[i], Math.ceil(tail.matchesPerRequest.get(q) ?? 0)))
    filters.forEach((q, i) => { tail.allowance.set(q, caps[i] - charged[i]) })
    const request: LiveRequest = { filters, caps }
    this.#charges.set(request, { tail, period: tail.period, charged })
    return request
  }

  /** Hands a committed request's live output to the stream's clients. */
  publish (orgId: string, stream: string, request: LiveRequest, outputs: LiveOutput[]): void {
    const tail = this.#streams.get(orgId + '/' + stream)
    if (!tail) return
    for (const out of outputs) tail.stats.merge(out.stats)
    const charge = this.#charges.get(request)
    request.filters.forEach((q, bit) => {
      let serialized = 0
      let matched = 0
      for (const out of outputs) {
        for (const mask of out.masks) if (mask & (1 << bit)) serialized++
        matched += out.dropped[bit]
      }
      matched += serialized
      const average = tail.matchesPerRequest.get(q)
      tail.matchesPerRequest.set(q, average === undefined ? matched : average + (matched - average) * averageWeight)
      // Within the period of its start, what was serialized replaces the start charge; a charge
      // from an earlier period stays there, and only what went beyond it is charged to this one.
      const own = charge !== undefined && charge.tail === tail
      const charged = own ? charge.charged[bit] : 0
      const delta = own && charge.period === tail.period ? serialized - charged : Math.max(0, serialized - charged)
      tail.allowance.set(q, Math.max(0, (tail.allowance.get(q) ?? this.#eventsPerSecond) - delta))
    })
    const now = Date.now()
    // Clients with the same filter get the same frames unless one ran out of room: those are
    // built and encoded once per filter, and written to each such client as they are.
    const framesByBit = new Map<number, FilterFrames>()
    for (const client of tail.clients) {
      const bit = request.filters.indexOf(client.q)
      if (bit < 0) continue // joined after the request started: from the next one on
      this.#refill(client, now)
      let frames = framesByBit.get(bit)
      if (frames === undefined) {
        frames = framesFor(outputs, bit)
        framesByBit.set(bit, frames)
      }
      const drained = client.res.writableLength === 0
      client.dropped += frames.dropped
      if (frames.count > 0 && client.tokens >= frames.count &&
          client.res.writableLength + frames.bytes.byteLength <= this.#maxBufferedBytes) {
        client.tokens -= frames.count
        client.res.write(frames.bytes)
      } else if (frames.count > 0) {
        this.#writeWhatFits(client, outputs, bit)
      }
      if (client.dropped > 0 && drained) {
        writeSseEvent(client.res, 'dropped', `{"count":${client.dropped}}`)
        client.dropped = 0
      }
    }
  }

  /** The client's events of `outputs` one by one while it has tokens and room; the rest dropped. */
  #writeWhatFits (client: TailClient, outputs: LiveOutput[], bit: number): void {
    const parts: Buffer[] = []
    let bytes = 0
    for (const out of outputs) {
      for (let i = 0; i < out.ends.length; i++) {
        if ((out.masks[i] & (1 << bit)) === 0) continue
        if (client.tokens < 1 || client.res.writableLength + bytes > this.#maxBufferedBytes) {
          client.dropped++
          continue
        }
        client.tokens--
        const frame = frameOf(out, i)
        parts.push(frame)
        bytes += frame.byteLength
      }
    }
    if (parts.length > 0) client.res.write(Buffer.concat(parts, bytes))
  }

  /** Ends every tail (shutdown). */
  close (): void {
    this.#closed = true
    for (const timer of this.#timers) clearInterval(timer)
    for (const tail of this.#streams.values()) for (const client of tail.clients) client.res.end()
  }

  #refill (client: TailClient, now: number): void {
    client.tokens = Math.min(this.#eventsPerSecond, client.tokens + ((now - client.refilledAt) / 1000) * this.#eventsPerSecond)
    client.refilledAt = now
  }

  #emitStats (): void {
    const t = Date.now()
    for (const tail of this.#streams.values()) {
      const text = sseEvent('stats', JSON.stringify(tail.stats.snapshot(t)))
      tail.stats = new LiveStats()
      tail.allowance.clear()
      tail.period++
      for (const client of tail.clients) client.res.write(text)
    }
  }

  #broadcast (text: string): void {
    for (const tail of this.#streams.values()) for (const client of tail.clients) client.res.write(text)
  }
}
