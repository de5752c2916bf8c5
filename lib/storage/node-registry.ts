// Cluster mode's node registry: which Sluice nodes are alive, so that each enforces its share of
// the per-org limits (docs: README, Deployment: cluster mode).
//
// Contract:
// - start() writes this node's first heartbeat and counts the live nodes; then, every
//   intervalMs, writes a heartbeat and counts again. A node is live while its newest heartbeat
//   is younger than 3 x intervalMs (two missed beats are tolerated).
// - liveNodes is at least 1 (this node), and keeps its last value while ClickHouse does not
//   answer: a node never takes the whole limit because the count failed.
// - stop() records heartbeat 0 (the node left: the others take its share at their next count)
//   and stops the timer; a beat() after it writes nothing (a stopped node stays stopped).
// - Tolerance: after a node joins or leaves, the others use the old count for up to 3 x intervalMs
//   (leaving by stop(): one interval), so the cluster admits up to (old count / new count) of
//   the limit meanwhile; between counts, each node's share is the limit / nodes rounded up.
// - Each heartbeat also records what advertise() returns (the node's URL for its peers and its
//   open tails, lib/live/cluster-live.ts), and each count keeps the other live nodes' as peers.
import { randomUUID } from 'node:crypto'
import type { ClickHouse } from './clickhouse.ts'
import type { Logger } from '../logger.ts'
import { sql } from './sql.ts'

export interface NodeRegistryOptions {
  clickhouse: ClickHouse
  log: Logger
  /** ms between heartbeats (metadata.refreshIntervalMs). */
  intervalMs: number
  /** Clock in ms; default Date.now. */
  now?: () => number
}

/** What a heartbeat says about its node besides being alive (migration 010). */
export interface NodeAdvert {
  /** URL the other nodes reach this one at; '' for none. */
  address: string
  /** The node's open tails, as JSON (lib/live/cluster-live.ts); '[]' for none. */
  tails: string
}

/** Another live node, as its newest heartbeat describes it. */
export interface PeerNode extends NodeAdvert { nodeId: string }

const noAdvert: NodeAdvert = { address: '', tails: '[]' }

export class NodeRegistry {
  readonly nodeId = randomUUID()
  #ch: ClickHouse
  #log: Logger
  #intervalMs: number
  #now: () => number
  #live = 1
  #timer: NodeJS.Timeout | undefined
  #version = 0
  #advertise: () => NodeAdvert = () => noAdvert
  #peers: PeerNode[] = []
  #stopped = false

  constructor (options: NodeRegistryOptions) {
    this.#ch = options.clickhouse
    this.#log = options.log
    this.#intervalMs = options.intervalMs
    this.#now = options.now ?? Date.now
  }

  /** Live Sluice nodes, this one included (>= 1). */
  get liveNodes (): number { return this.#live }

  /** The other live nodes at the last count. */
  get peers (): readonly PeerNode[] { return this.#peers }

  /** What each heartbeat from now on records about this node. */
  setAdvert (advertise: () => NodeAdvert): void { this.#advertise = advertise }

  async start (): Promise<void> {
    await this.beat()
    const tick = (): void => {
      this.#timer = setTimeout(() => {
        this.beat().catch((err: unknown) => this.#log.warn('node heartbeat failed', { err })).finally(() => { if (this.#timer) tick() })
      }, this.#intervalMs)
      this.#timer.unref()
    }
    tick()
  }

  /** Writes a heartbeat and counts the live nodes. */
  async beat (): Promise<void> {
    if (this.#stopped) return // a late beat would make a stopped node live again
    const now = this.#now()
    await this.#write(now, this.#advertise())
    const rows = await this.#ch.query<{ node_id: string, address: string, tails: string }>(sql`SELECT node_id, address, tails
      FROM sluice_nodes FINAL WHERE heartbeat_at > ${now - 3 * this.#intervalMs} AND node_id != ${this.nodeId}`)
    this.#live = 1 + rows.length
    this.#peers = rows.map((r) => ({ nodeId: r.node_id, address: r.address, tails: r.tails }))
  }

  async stop (): Promise<void> {
    this.#stopped = true
    clearTimeout(this.#timer)
    this.#timer = undefined
    await this.#write(0, noAdvert).catch((err: unknown) => this.#log.warn('node registry: could not record the stop', { err }))
  }

  async #write (heartbeatAt: number, advert: NodeAdvert): Promise<void> {
    this.#version = Math.max(this.#now() * 1000, this.#version + 1)
    await this.#ch.command(sql`INSERT INTO sluice_nodes (node_id, heartbeat_at, version, address, tails)
      VALUES (${this.nodeId}, ${heartbeatAt}, ${this.#version}, ${advert.address}, ${advert.tails})`)
  }
}
