// One node's link to one peer for the live tail across nodes (cluster-live.ts): forwarded
// messages go out in order, one POST /internal/live at a time, best effort.
//
// Contract:
// - enqueue() never blocks and never throws: ingest calls it after a commit. A message that does
//   not fit in maxQueuedBytes, or comes while the peer is backed off, is dropped and counted
//   (onDropped with its events; its per-filter counts come back through takeLost(), so the next
//   message of that filter tells the clients as `dropped`).
// - What queued while a POST was in flight goes in the next POST, as one body (at most
//   maxQueuedBytes, which the receiving route also takes at most).
// - A POST that fails or does not answer within timeoutMs drops its messages and backs the peer
//   off for backoffMs: a dead or hung peer costs the node one timeout per backoffMs, not one per
//   commit.
// - close() aborts the POST in flight and drops what is queued.
import type { Logger } from '../logger.ts'

/** Header that carries cluster.secret on POST /internal/live. */
export const clusterSecretHeader = 'x-sluice-cluster-secret'

export interface QueuedForward {
  bytes: Buffer
  /** Events (frames) the message carries. */
  events: number
  /** Per filter key (org/stream, newline, q): its frames in the message. */
  perFilter: Array<[string, number]>
}

export interface PeerLinkOptions {
  /** The peer's base URL (its cluster.nodeUrl). */
  url: string
  secret: string
  maxQueuedBytes: number
  /** ms a POST may take. */
  timeoutMs: number
  /** ms messages are dropped for after a failed POST. */
  backoffMs: number
  onSent: (events: number) => void
  onDropped: (events: number) => void
  log: Logger
  /** Clock in ms; default Date.now. */
  now?: () => number
  /** Lost counts of an earlier link to the same peer (lost()), to tell its clients still. */
  lost?: Map<string, number>
}

export class PeerLink {
  readonly url: string
  readonly #o: PeerLinkOptions
  readonly #now: () => number
  #queue: QueuedForward[] = []
  #queuedBytes = 0
  #sending = false
  #downUntil = 0
  #closed = false
  readonly #abort = new AbortController()
  readonly #lost: Map<string, number>

  constructor (options: PeerLinkOptions) {
    this.url = options.url
    this.#o = options
    this.#now = options.now ?? Date.now
    this.#lost = options.lost ?? new Map()
  }

  /** Per filter key, the events dropped and not yet told (for a later link to the same peer). */
  lost (): Map<string, number> { return this.#lost }

  /** Events of this filter key dropped since the last call (added to the next message's `d`). */
  takeLost (key: string): number {
    const n = this.#lost.get(key) ?? 0
    if (n > 0) this.#lost.delete(key)
    return n
  }

  enqueue (message: QueuedForward): void {
    if (this.#closed || this.#now() < this.#downUntil || this.#queuedBytes + message.bytes.byteLength > this.#o.maxQueuedBytes) {
      this.#drop(message)
      return
    }
    this.#queue.push(message)
    this.#queuedBytes += message.bytes.byteLength
    if (!this.#sending) void this.#pump()
  }

  close (): void {
    this.#closed = true
    this.#abort.abort()
    for (const m of this.#queue.splice(0)) this.#drop(m)
    this.#queuedBytes = 0
  }

  #drop (message: QueuedForward): void {
    this.#o.onDropped(message.events)
    for (const [key, n] of message.perFilter) if (n > 0) this.#lost.set(key, (this.#lost.get(key) ?? 0) + n)
  }

  async #pump (): Promise<void> {
    this.#sending = true
    while (this.#queue.length > 0 && !this.#closed) {
      const batch = this.#queue.splice(0)
      this.#queuedBytes = 0
      try {
        await this.#post(Buffer.concat(batch.map((m) => m.bytes)))
        let events = 0
        for (const m of batch) events += m.events
        this.#o.onSent(events)
      } catch (err) {
        if (this.#now() >= this.#downUntil) this.#o.log.warn('live tail: a peer did not take forwarded events; dropping them for a while', { peer: this.url, backoffMs: this.#o.backoffMs, err })
        this.#downUntil = this.#now() + this.#o.backoffMs
        for (const m of batch) this.#drop(m)
        for (const m of this.#queue.splice(0)) this.#drop(m)
        this.#queuedBytes = 0
      }
    }
    this.#sending = false
  }

  async #post (body: Buffer): Promise<void> {
    const res = await fetch(this.#o.url + '/internal/live', {
      method: 'POST',
      headers: { 'content-type': 'application/octet-stream', [clusterSecretHeader]: this.#o.secret },
      body,
      signal: AbortSignal.any([this.#abort.signal, AbortSignal.timeout(this.#o.timeoutMs)]),
    })
    await res.arrayBuffer()
    if (res.status !== 204) throw new Error(`POST /internal/live answered ${res.status}`)
  }
}
