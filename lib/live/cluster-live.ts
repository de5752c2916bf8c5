// The live tail across nodes in cluster mode (README, Deployment: cluster mode; docs/api.md
// section 10). Push, not poll: a node that commits events for a stream that clients tail on
// other nodes forwards the frames its workers built, and the stream's stats partial, to those
// nodes over HTTP right after the commit, so a remote tail lags a local one by one HTTP hop.
//
// Contract:
// - Who tails what comes from the node registry (lib/storage/node-registry.ts): each heartbeat
//   carries the node's cluster.nodeUrl and its open tails (advert()); a change of this node's
//   tails writes a heartbeat at once (tailsChanged(), at most one per 50 ms), and the others
//   read it at their next count, so a new tail sees the other nodes' events after up to
//   metadata.refreshIntervalMs.
// - filtersFor() gives the hub the filters peers have open on a stream, so the workers build
//   their frames (within the per-filter allowance, tail-allowance.ts); forward() splits a
//   committed request's output by peer and filter and queues it on the peer's PeerLink
//   (peer-link.ts: bounded, never blocks, drops and counts past its bound or while the peer is
//   down). Each message carries the stats of every event of the request once per peer.
// - Peers without an address, and this node's own address, are skipped. Links of peers that
//   left the registry are closed; what they dropped is told to the peer's clients if it comes
//   back (a hung node that resumes).
import type { Logger } from '../logger.ts'
import type { NodeAdvert, PeerNode } from '../storage/node-registry.ts'
import { encodeForward } from './forward-codec.ts'
import type { LiveOutput } from './live-protocol.ts'
import { LiveStats } from './live-stats.ts'
import { filterOutput } from './tail-frame-join.ts'
import type { OpenTail, TailPeers } from './tail-hub.ts'
import { PeerLink } from './peer-link.ts'

/** Bytes queued per peer at most; also the most POST /internal/live takes in one body. */
export const maxForwardBytes = 4 * 1024 * 1024
/** ms a forward POST may take before the peer counts as down. */
const forwardTimeoutMs = 2000
/** ms a peer that failed a POST gets no messages (they are dropped and counted). */
const backoffMs = 5000
/** ms a burst of tail opens and closes is gathered into one heartbeat. */
const advertDelayMs = 50
/** Addresses whose lost counts are kept after their link closed. */
const maxOrphans = 64

export interface ClusterLiveOptions {
  /** This node's URL for its peers (cluster.nodeUrl). */
  nodeUrl: string
  /** cluster.secret, sent with every forward. */
  secret: string
  /** The other live nodes at the registry's last count. */
  peers: () => readonly PeerNode[]
  /** Writes a heartbeat now (the registry's beat). */
  beat: () => Promise<void>
  log: Logger
  onSent: (events: number) => void
  onDropped: (events: number) => void
}

interface Subscriber { link: PeerLink, filters: readonly string[] }

export class ClusterLive implements TailPeers {
  readonly #o: ClusterLiveOptions
  readonly #links = new Map<string, PeerLink>()
  #seen: readonly PeerNode[] | undefined
  #subscribers = new Map<string, Subscriber[]>()
  #filters = new Map<string, string[]>()
  #advertTimer: NodeJS.Timeout | undefined
  #closed = false
  /**
   * Lost counts of links closed because their peer left the registry (a hung node misses its
   * heartbeats), by address: its clients are told once it is back. At most maxOrphans addresses.
   */
  readonly #orphanLost = new Map<string, Map<string, number>>()

  constructor (options: ClusterLiveOptions) {
    this.#o = options
  }

  /** What this node's heartbeats record (the registry's advert). */
  advert (tails: readonly OpenTail[]): NodeAdvert {
    return { address: this.#o.nodeUrl, tails: JSON.stringify(tails) }
  }

  /** This node's tails changed: tell the others with a heartbeat soon. */
  tailsChanged (): void {
    // Closed: the clients' sockets close during shutdown, after the registry's last heartbeat.
    if (this.#advertTimer !== undefined || this.#closed) return
    this.#advertTimer = setTimeout(() => {
      this.#advertTimer = undefined
      this.#o.beat().catch((err: unknown) => this.#o.log.warn('live tail: could not advertise this node\'s tails', { err }))
    }, advertDelayMs)
    this.#advertTimer.unref()
  }

  filtersFor (orgId: string, stream: string): readonly string[] {
    this.#refresh()
    return this.#filters.get(orgId + '/' + stream) ?? []
  }

  forward (orgId: string, stream: string, filters: readonly string[], outputs: readonly LiveOutput[]): void {
    this.#refresh()
    const key = orgId + '/' + stream
    const subscribers = this.#subscribers.get(key)
    if (subscribers === undefined) return
    const merged = new LiveStats()
    for (const out of outputs) merged.merge(out.stats)
    const stats = merged.toPartial()
    // A filter several peers tail is cut out of the request once.
    const byBit = new Map<number, LiveOutput>()
    for (const { link, filters: wanted } of subscribers) {
      const parts: Array<{ q: string, output: LiveOutput }> = []
      const perFilter: Array<[string, number]> = []
      let events = 0
      for (const q of wanted) {
        const bit = filters.indexOf(q)
        if (bit < 0) continue // opened after the request started: from the next one on
        let shared = byBit.get(bit)
        if (shared === undefined) byBit.set(bit, shared = filterOutput(outputs, bit, stats))
        const output: LiveOutput = { ...shared, dropped: [shared.dropped[0] + link.takeLost(key + '\n' + q)] }
        parts.push({ q, output })
        perFilter.push([key + '\n' + q, output.ends.length + output.dropped[0]])
        events += output.ends.length
      }
      link.enqueue({ bytes: encodeForward({ orgId, stream, stats, parts }), events, perFilter })
    }
  }

  close (): void {
    this.#closed = true
    clearTimeout(this.#advertTimer)
    for (const link of this.#links.values()) link.close()
    this.#links.clear()
  }

  /** Rebuilds who tails what when the registry counted again. */
  #refresh (): void {
    const peers = this.#o.peers()
    if (peers === this.#seen) return
    this.#seen = peers
    // Per stream, per link (one per address: a node restarted under a new id while its old
    // heartbeat has not expired yet is one peer), the filters.
    const byStream = new Map<string, Map<PeerLink, Set<string>>>()
    const filters = new Map<string, Set<string>>()
    const addresses = new Set<string>()
    for (const peer of peers) {
      if (peer.address === '' || peer.address === this.#o.nodeUrl) continue
      let tails: OpenTail[]
      try {
        tails = JSON.parse(peer.tails) as OpenTail[]
        if (!Array.isArray(tails)) continue
      } catch {
        continue
      }
      if (tails.length === 0) continue
      addresses.add(peer.address)
      let link = this.#links.get(peer.address)
      if (link === undefined) {
        link = new PeerLink({
          url: peer.address, secret: this.#o.secret, maxQueuedBytes: maxForwardBytes, timeoutMs: forwardTimeoutMs, backoffMs,
          onSent: this.#o.onSent, onDropped: this.#o.onDropped, log: this.#o.log, lost: this.#orphanLost.get(peer.address),
        })
        this.#orphanLost.delete(peer.address)
        this.#links.set(peer.address, link)
      }
      for (const tail of tails) {
        if (typeof tail?.org !== 'string' || typeof tail.stream !== 'string' || !Array.isArray(tail.q)) continue
        const key = tail.org + '/' + tail.stream
        const qs = tail.q.filter((q): q is string => typeof q === 'string')
        let links = byStream.get(key)
        if (links === undefined) byStream.set(key, links = new Map())
        let wanted = links.get(link)
        if (wanted === undefined) links.set(link, wanted = new Set())
        for (const q of qs) wanted.add(q)
        let set = filters.get(key)
        if (set === undefined) filters.set(key, set = new Set())
        for (const q of qs) set.add(q)
      }
    }
    for (const [address, link] of this.#links) {
      if (!addresses.has(address)) {
        link.close()
        this.#links.delete(address)
        if (link.lost().size > 0) {
          this.#orphanLost.set(address, link.lost())
          if (this.#orphanLost.size > maxOrphans) this.#orphanLost.delete(this.#orphanLost.keys().next().value!)
        }
      }
    }
    this.#subscribers = new Map([...byStream].map(([key, links]) => [key, [...links].map(([link, qs]) => ({ link, filters: [...qs] }))]))
    this.#filters = new Map([...filters].map(([key, set]) => [key, [...set]]))
  }
}
