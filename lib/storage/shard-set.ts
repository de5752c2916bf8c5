// Cluster mode's insert targets: the ClickHouse hosts of clickhouse.insertUrls, grouped into
// shards by each host's `{shard}` macro, and which of them to send the next batch to.
//
// Contract:
// - start() asks every host for its shard (system.macros) and resolves after that first round;
//   a host that did not answer is asked again every probeIntervalMs until it does, and takes no
//   batch before. A host without a `shard` macro is a configuration error (start() rejects).
// - pick() gives the next batch's target: shards in round robin, skipping a shard none of whose
//   replicas is healthy, and within the shard its first healthy replica. When no shard is
//   healthy it still gives one (the one that failed longest ago), so that the writer's retries
//   keep trying until their deadline instead of failing at once.
// - sameShard(target) gives a healthy replica of the target's shard (the target itself when
//   none is): a retry of an insert whose outcome is unknown must go to the same shard, whose
//   replicated tables drop the block if the first attempt did store it (insert_deduplicate).
// - failed(target) marks the replica unhealthy and pings it every probeIntervalMs until it
//   answers, which makes it healthy again; succeeded(target) marks it healthy at once.
// - hosts lists every host with its shard (undefined until it answered) and client, healthy or
//   not: where a write's rows may be, for counting and deleting them on every replica
//   (idempotency-store.ts, a pending key's settling and repair; docs/api.md section 6.7).
// - close() stops the probes and closes every client.
import type { ClickHouse, ClickHouseOptions } from './clickhouse.ts'
import { createClickHouse } from './clickhouse.ts'
import type { Logger } from '../logger.ts'

export interface InsertTarget {
  readonly url: string
  readonly shard: string
  readonly clickhouse: ClickHouse
}

interface Host {
  url: string
  clickhouse: ClickHouse
  /** The `{shard}` macro; undefined until the host answered. */
  shard: string | undefined
  healthy: boolean
  failedAt: number
  probe: NodeJS.Timeout | undefined
}

export interface ShardSetOptions {
  urls: readonly string[]
  /** Connection settings of every host's client (its url is replaced). */
  client: Omit<ClickHouseOptions, 'url'>
  log: Logger
  /** ms between two pings of an unhealthy or unknown host; default 1000. */
  probeIntervalMs?: number
  /** Clock in ms for failedAt; default Date.now. */
  now?: () => number
}

const defaultProbeIntervalMs = 1_000 // a replica back up takes a batch again within a second
const probeTimeoutMs = 1_000

export class ShardSet {
  readonly #hosts: Host[]
  readonly #log: Logger
  readonly #probeIntervalMs: number
  readonly #now: () => number
  #next = 0
  #closed = false

  constructor (options: ShardSetOptions) {
    if (options.urls.length === 0) throw new TypeError('ShardSet needs at least one URL')
    this.#log = options.log
    this.#probeIntervalMs = options.probeIntervalMs ?? defaultProbeIntervalMs
    this.#now = options.now ?? Date.now
    this.#hosts = options.urls.map((url) => ({
      url, clickhouse: createClickHouse({ ...options.client, url, maxOpenConnections: 4 }), shard: undefined, healthy: false, failedAt: 0, probe: undefined,
    }))
  }

  async start (): Promise<void> {
    await Promise.all(this.#hosts.map(async (h) => { if (!(await this.#learnShard(h))) this.#scheduleProbe(h) }))
  }

  /** Shard name -> URLs of its hosts known so far. */
  get shards (): ReadonlyMap<string, string[]> {
    const out = new Map<string, string[]>()
    for (const h of this.#hosts) if (h.shard !== undefined) out.set(h.shard, [...(out.get(h.shard) ?? []), h.url])
    return out
  }

  /** Every host, healthy or not, with its shard once known (see the contract). */
  get hosts (): ReadonlyArray<{ readonly url: string, readonly shard: string | undefined, readonly clickhouse: ClickHouse }> {
    return this.#hosts.map((h) => ({ url: h.url, shard: h.shard, clickhouse: h.clickhouse }))
  }

  pick (): InsertTarget | undefined {
    const names = [...this.shards.keys()].sort()
    if (names.length === 0) return undefined
    for (let i = 0; i < names.length; i++) {
      const shard = names[(this.#next + i) % names.length]
      const host = this.#hosts.find((h) => h.shard === shard && h.healthy)
      if (host !== undefined) {
        this.#next = (this.#next + i + 1) % names.length
        return targetOf(host)
      }
    }
    let oldest: Host | undefined
    for (const h of this.#hosts) if (h.shard !== undefined && (oldest === undefined || h.failedAt < oldest.failedAt)) oldest = h
    return oldest === undefined ? undefined : targetOf(oldest)
  }

  sameShard (target: InsertTarget): InsertTarget {
    const host = this.#hosts.find((h) => h.shard === target.shard && h.healthy)
    return host === undefined ? target : targetOf(host)
  }

  failed (target: InsertTarget): void {
    const host = this.#hosts.find((h) => h.url === target.url)
    if (host === undefined) return
    host.failedAt = this.#now()
    if (host.healthy) this.#log.warn('ClickHouse host left the insert rotation', { url: host.url, shard: host.shard })
    host.healthy = false
    this.#scheduleProbe(host)
  }

  succeeded (target: InsertTarget): void {
    const host = this.#hosts.find((h) => h.url === target.url)
    if (host !== undefined) host.healthy = true
  }

  async close (): Promise<void> {
    this.#closed = true
    for (const h of this.#hosts) clearTimeout(h.probe)
    await Promise.all(this.#hosts.map((h) => h.clickhouse.close()))
  }

  /** Asks a host for its shard macro; true when it answered (and is healthy now). */
  async #learnShard (h: Host): Promise<boolean> {
    let rows: Array<{ shard: string }>
    try {
      rows = await h.clickhouse.query<{ shard: string }>("SELECT substitution AS shard FROM system.macros WHERE macro = 'shard'",
        { signal: AbortSignal.timeout(probeTimeoutMs) })
    } catch (err) {
      this.#log.warn('ClickHouse host did not answer; probing it', { url: h.url, err })
      return false
    }
    if (rows.length === 0) throw new Error(`ClickHouse at ${h.url} has no {shard} macro: cluster mode needs <macros><shard>...</shard><replica>...</replica></macros> on every host`)
    h.shard = String(rows[0].shard)
    h.healthy = true
    return true
  }

  #scheduleProbe (h: Host): void {
    if (this.#closed || h.probe !== undefined) return
    h.probe = setTimeout(() => {
      h.probe = undefined
      const check = h.shard === undefined
        ? this.#learnShard(h).catch((err: unknown) => { this.#log.error('ClickHouse host misconfigured', { url: h.url, err }); return false })
        : h.clickhouse.ping({ signal: AbortSignal.timeout(probeTimeoutMs) })
      void check.then((up) => {
        if (up && h.shard !== undefined) {
          if (!h.healthy) this.#log.info('ClickHouse host back in the insert rotation', { url: h.url, shard: h.shard })
          h.healthy = true
        } else {
          this.#scheduleProbe(h)
        }
      })
    }, this.#probeIntervalMs)
    h.probe.unref()
  }
}

function targetOf (h: Host): InsertTarget {
  return { url: h.url, shard: h.shard!, clickhouse: h.clickhouse }
}
