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
//   `eventsPerSecond` (its TokenBucket), events are dropped for that client and counted, and the
//   count is sent as `event: dropped` once its socket drains. The same rate, per filter and
//   second, caps how many events the workers serialize for the tail (FilterAllowance,
//   tail-allowance.ts), so a busy stream costs them little.
// - Stats ticks, heartbeats and allowances run on the injected LiveClock (wall time by default).
// - At most `maxTailsPerOrg` clients per org (429 too_many_tails). close() ends every stream.
// - A client that may no longer read (its `current` check gives a reason: its stream gone,
//   deleted here or, after a metadata refresh, on another node, or deleted and made again under
//   the same name; or its token revoked or expired) gets `event: end` with that reason, before
//   any further event and at the latest at the next stats tick, and its response ends: no tail
//   outlives its stream or its token, or shows a new stream's events under the old one's name
//   (docs/api.md section 7.5).
// - Cluster mode (optional `peers`, lib/live/cluster-live.ts): the filters other nodes' clients
//   have open on a stream join the workers' request even without a local client, and every
//   committed request's output is also handed to peers.forward(). What a peer forwards here comes
//   in through publishForwarded(): its stats merge into the stream's window and its frames go to
//   the clients of the same filter under the same per-client limits. onTailsChange fires when a
//   client comes or goes, so the node can tell its peers (openTails()). Without peers: nothing
//   of this runs.
import type { ServerResponse } from 'node:http'
import { SluiceError } from '../errors.ts'
import type { LiveOutput, LiveRequest } from './live-protocol.ts'
import type { LiveStatsPartial } from './live-stats.ts'
import { systemClock } from './live-clock.ts'
import type { LiveClock } from './live-clock.ts'
import { LiveStats } from './live-stats.ts'
import { sseComment, sseEvent, sseOpening, writeSseEvent } from './sse-writer.ts'
import { FilterAllowance, TokenBucket } from './tail-allowance.ts'
import type { AllowanceCharge } from './tail-allowance.ts'
import { countFor, framesFor, framesWhile } from './tail-frame-join.ts'
import type { FilterFrames } from './tail-frame-join.ts'

export interface TailHubOptions {
  maxTailsPerOrg?: number
  /** Bytes written to a client and not yet sent before its events are dropped. */
  maxBufferedBytes?: number
  /** Events per second one client is sent at most; a person reads far fewer. */
  eventsPerSecond?: number
  /** ms between `event: stats`. */
  statsIntervalMs?: number
  /** ms between heartbeat comments. */
  heartbeatMs?: number
  /** Time for stats, heartbeats and allowances; wall time unless a test moves it by hand. */
  clock?: LiveClock
  /** Cluster mode: the other nodes' tails (lib/live/cluster-live.ts); none on a single node. */
  peers?: TailPeers
  /** Called when a client opens or closes a tail (cluster mode: the node re-advertises its tails). */
  onTailsChange?: () => void
}

/** The other nodes of a cluster, as the hub sees them. */
export interface TailPeers {
  /** The filters other nodes' clients have open on (org, stream); empty when none. */
  filtersFor (orgId: string, stream: string): readonly string[]
  /** Hands a committed request's output to the nodes tailing the stream (never blocks). */
  forward (orgId: string, stream: string, filters: readonly string[], outputs: readonly LiveOutput[]): void
}

/** One filter's frames forwarded by a peer (an output of that one filter: every mask is bit 0). */
export interface ForwardedPart { q: string, output: LiveOutput }

/** Why a tail ends before its client leaves: the `reason` of its `event: end`. */
export type TailEndReason = 'stream_deleted' | 'token_invalid'

/** A stream and the distinct filters of its clients on this node. */
export interface OpenTail { org: string, stream: string, q: string[] }

interface TailClient {
  orgId: string
  q: string
  /** Why this client may no longer read (its stream gone, its token revoked), or null. */
  current: () => TailEndReason | null
  res: ServerResponse
  /** Events dropped for this client and not yet reported. */
  dropped: number
  tokens: TokenBucket
}

interface StreamTail {
  orgId: string
  stream: string
  clients: Set<TailClient>
  stats: LiveStats
  /** What the workers may serialize per filter (tail-allowance.ts). */
  allowance: FilterAllowance
}

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

export class TailHub {
  readonly #maxTailsPerOrg: number
  readonly #maxBufferedBytes: number
  readonly #eventsPerSecond: number
  readonly #clock: LiveClock
  readonly #streams = new Map<string, StreamTail>()
  readonly #perOrg = new Map<string, number>()
  /** Each request's start charge, and the stream tail that made it. */
  readonly #charges = new WeakMap<LiveRequest, { allowance: FilterAllowance, charge: AllowanceCharge }>()
  /** Allowances of streams only other nodes tail (cluster mode). */
  readonly #forwardAllowances = new Map<string, FilterAllowance>()
  readonly #peers: TailPeers | undefined
  readonly #onTailsChange: () => void
  readonly #stopTimers: Array<() => void>
  #clientCount = 0
  #closed = false

  constructor (options: TailHubOptions = {}) {
    this.#maxTailsPerOrg = options.maxTailsPerOrg ?? 10
    this.#maxBufferedBytes = options.maxBufferedBytes ?? 1024 * 1024
    this.#eventsPerSecond = options.eventsPerSecond ?? 2000
    this.#clock = options.clock ?? systemClock
    this.#peers = options.peers
    this.#onTailsChange = options.onTailsChange ?? (() => {})
    this.#stopTimers = [
      this.#clock.every(options.statsIntervalMs ?? 1000, () => this.#emitStats()),
      this.#clock.every(options.heartbeatMs ?? 15_000, () => this.#broadcast(sseComment('heartbeat'))),
    ]
  }

  get clientCount (): number { return this.#clientCount }

  /**
   * Starts an SSE response for a client of (org, stream); 429 past the org's limit. `current`
   * tells why the client may no longer read, or null (checked at each stats tick and before
   * each delivery).
   */
  open (res: ServerResponse, orgId: string, stream: string, q: string, current: () => TailEndReason | null = () => null): void {
    this.checkRoom(orgId)
    const inOrg = this.#perOrg.get(orgId) ?? 0
    const key = orgId + '/' + stream
    let tail = this.#streams.get(key)
    if (!tail) {
      tail = { orgId, stream, clients: new Set(), stats: new LiveStats(), allowance: new FilterAllowance(this.#eventsPerSecond, this.#clock) }
      this.#streams.set(key, tail)
    }
    const client: TailClient = { orgId, q, current, res, dropped: 0, tokens: new TokenBucket(this.#eventsPerSecond, this.#clock) }
    tail.clients.add(client)
    this.#perOrg.set(orgId, inOrg + 1)
    this.#clientCount++
    this.#onTailsChange()

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
      this.#onTailsChange()
    })
  }

  /** Throws what open() would refuse a new client of the org with (shutting down, 429 too_many_tails). */
  checkRoom (orgId: string): void {
    if (this.#closed) throw new SluiceError('shutting_down', undefined, { retryAfter: 1 })
    if ((this.#perOrg.get(orgId) ?? 0) >= this.#maxTailsPerOrg) {
      throw new SluiceError('too_many_tails', `At most ${this.#maxTailsPerOrg} live tails per org; close one first`, { retryAfter: 5 })
    }
  }

  /** What ingest asks the workers for this stream, or null when nobody watches it. */
  liveRequestFor (orgId: string, stream: string): LiveRequest | null {
    const key = orgId + '/' + stream
    const tail = this.#streams.get(key)
    const remote = this.#peers?.filtersFor(orgId, stream) ?? []
    if (remote.length === 0) this.#forwardAllowances.delete(key)
    if (!tail && remote.length === 0) return null
    const local = tail ? [...tail.clients].map((c) => c.q) : []
    const filters = [...new Set([...local, ...remote])].slice(0, maxFilters)
    let allowance = tail?.allowance ?? this.#forwardAllowances.get(key)
    if (allowance === undefined) {
      allowance = new FilterAllowance(this.#eventsPerSecond, this.#clock)
      this.#forwardAllowances.set(key, allowance)
    }
    const charge = allowance.start(filters)
    const request: LiveRequest = { filters, caps: charge.caps }
    this.#charges.set(request, { allowance, charge })
    return request
  }

  /** The streams with clients on this node and their distinct filters (what peers forward for). */
  openTails (): OpenTail[] {
    return [...this.#streams.values()].map((tail) => ({
      org: tail.orgId, stream: tail.stream, q: [...new Set([...tail.clients].map((c) => c.q))].slice(0, maxFilters),
    }))
  }

  /** What a peer forwarded for (org, stream): its stats partial and its frames per filter. */
  publishForwarded (orgId: string, stream: string, stats: LiveStatsPartial, parts: readonly ForwardedPart[]): void {
    const tail = this.#streams.get(orgId + '/' + stream)
    if (!tail) return
    tail.stats.merge(stats)
    for (const part of parts) this.#deliver(tail, [part.q], [part.output])
  }

  /** Hands a committed request's live output to the stream's clients. */
  publish (orgId: string, stream: string, request: LiveRequest, outputs: LiveOutput[]): void {
    const key = orgId + '/' + stream
    const tail = this.#streams.get(key)
    const allowance = tail?.allowance ?? this.#forwardAllowances.get(key)
    const started = this.#charges.get(request)
    allowance?.settle(request.filters, started?.allowance === allowance ? started.charge : undefined,
      request.filters.map((_, bit) => countFor(outputs, bit)))
    this.#peers?.forward(orgId, stream, request.filters, outputs)
    if (!tail) return
    for (const out of outputs) tail.stats.merge(out.stats)
    this.#deliver(tail, request.filters, outputs)
  }

  /** Writes each client of `tail` the frames of its filter among `filters` (bit i: filters[i]). */
  #deliver (tail: StreamTail, filters: readonly string[], outputs: readonly LiveOutput[]): void {
    // Clients with the same filter get the same frames unless one ran out of room: those are
    // joined once per filter, and written to each such client as they are.
    const framesByBit = new Map<number, FilterFrames>()
    for (const client of tail.clients) {
      const bit = filters.indexOf(client.q)
      if (bit < 0) continue // joined after the request started: from the next one on
      if (endIfNotCurrent(client)) continue
      let frames = framesByBit.get(bit)
      if (frames === undefined) {
        frames = framesFor(outputs, bit)
        framesByBit.set(bit, frames)
      }
      const drained = client.res.writableLength === 0
      client.dropped += frames.dropped
      if (frames.count > 0 && client.res.writableLength + frames.bytes.byteLength <= this.#maxBufferedBytes &&
          client.tokens.take(frames.count)) {
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
  #writeWhatFits (client: TailClient, outputs: readonly LiveOutput[], bit: number): void {
    const room = this.#maxBufferedBytes - client.res.writableLength
    const bytes = framesWhile(outputs, bit, (_frame, bytesSoFar) => {
      if (bytesSoFar > room || !client.tokens.take(1)) {
        client.dropped++
        return false
      }
      return true
    })
    if (bytes.byteLength > 0) client.res.write(bytes)
  }

  /** Ends every tail (shutdown). */
  close (): void {
    this.#closed = true
    for (const stop of this.#stopTimers) stop()
    for (const tail of this.#streams.values()) for (const client of tail.clients) client.res.end()
  }

  #emitStats (): void {
    const t = this.#clock.now()
    for (const tail of this.#streams.values()) {
      const text = sseEvent('stats', JSON.stringify(tail.stats.snapshot(t)))
      tail.stats = new LiveStats()
      for (const client of tail.clients) if (!endIfNotCurrent(client)) client.res.write(text)
    }
  }

  #broadcast (text: string): void {
    for (const tail of this.#streams.values()) for (const client of tail.clients) client.res.write(text)
  }
}

/**
 * Ends the client's response with `event: end` when it may no longer read; true then. Its
 * 'close' handler takes it out of its tail's clients (a Set: iterating on is safe).
 */
function endIfNotCurrent (client: TailClient): boolean {
  if (client.res.writableEnded) return true
  const reason = client.current()
  if (reason === null) return false
  client.res.end(sseEvent('end', JSON.stringify({ reason })))
  return true
}
