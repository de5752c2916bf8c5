// Readings of the cluster benchmark (bench/cluster.bench.ts), taken at the start and the end of a
// measured window and subtracted:
// - CPU seconds of each process we started (/proc/<pid>/stat; ClickHouse's merge and fetch
//   threads, `BackgrProcPool`, apart), of this process (the load generator) and of the machine;
// - per ClickHouse host: system.events counters (every `ZooKeeper*` one, the inserts, merges and
//   fetches) and, per partition of the events table, the highest block number, the rows and the
//   active parts. A replicated table numbers the blocks of each partition one insert at a time
//   (ZooKeeper's block_numbers), so the highest block number's rise is the inserts into that
//   shard's table, and a shard's replicas agree on it; a plain MergeTree numbers blocks per table,
//   which is the same while all rows fall in one partition (as here: one day);
// - ZooKeeper's `mntr` (packets received: every request a client sent, pings included);
// - each Sluice node's /metrics (inserts and rows per insert from the writer's histogram).
import { fourLetter } from '../scripts/cluster/zookeeper.ts'
import { hostSql } from '../test/helpers/cluster.ts'
import { machineCpuSeconds, namedThreadCpuSeconds, processCpuSeconds } from './proc-stats.ts'

export type Component = 'sluice' | 'clickhouse' | 'zookeeper' | 'haproxy'

export interface Proc { component: Component, name: string, pid: number }

export interface Host {
  /** `s1r2`, or `single` for the one server of setup A. */
  name: string
  shard: string
  url: string
}

export interface CpuReading {
  byProcess: Record<string, number>
  /** Of ClickHouse, by host process name: its BackgrProcPool threads (merges, fetches). */
  merges: Record<string, number>
  loadGenerator: number
  machine: { busy: number, total: number }
}

export function readCpu (procs: readonly Proc[]): CpuReading {
  const usage = process.cpuUsage()
  const byProcess: Record<string, number> = {}
  const merges: Record<string, number> = {}
  for (const p of procs) {
    byProcess[p.name] = processCpuSeconds(p.pid)
    if (p.component === 'clickhouse') merges[p.name] = namedThreadCpuSeconds(p.pid, 'BackgrProcPool')
  }
  return { byProcess, merges, loadGenerator: (usage.user + usage.system) / 1e6, machine: machineCpuSeconds() }
}

export interface PartitionReading { partition: string, block: number, rows: number, parts: number }

export interface HostReading {
  events: Record<string, number>
  /** Of the events table. */
  partitions: PartitionReading[]
  /** Every replicated table of the database: table -> partition -> highest block number. */
  replicatedBlocks: Record<string, Record<string, number>>
}

/** Counters worth a delta: ZooKeeper's, and what an insert, a merge or a replica fetch counts. */
const counterFilter = "event LIKE 'ZooKeeper%' OR event IN ('Query', 'InsertQuery', 'SelectQuery', 'InsertedRows', 'InsertedBytes', " +
  "'Merge', 'MergedRows', 'ReplicatedPartFetches', 'ReplicatedPartMerges', 'DuplicatedInsertedBlocks', 'DelayedInserts', 'RejectedInserts')"

export async function readHost (host: Host, database: string, table: string): Promise<HostReading> {
  const [events, parts, blocks] = await Promise.all([
    hostSql(host.url, `SELECT event, value FROM system.events WHERE ${counterFilter} FORMAT JSONEachRow`),
    hostSql(host.url, `SELECT partition, max(max_block_number) AS block, sum(rows) AS rows, count() AS parts FROM system.parts
      WHERE database = '${database}' AND table = '${table}' AND active GROUP BY partition ORDER BY partition FORMAT JSONEachRow`),
    hostSql(host.url, `SELECT table, partition, max(max_block_number) AS block FROM system.parts WHERE database = '${database}' AND active
      AND table IN (SELECT name FROM system.tables WHERE database = '${database}' AND engine LIKE 'Replicated%') GROUP BY table, partition FORMAT JSONEachRow`),
  ])
  const out: HostReading = { events: {}, partitions: [], replicatedBlocks: {} }
  for (const line of blocks.split('\n').filter(Boolean)) {
    const b = JSON.parse(line) as { table: string, partition: string, block: string | number }
    ;(out.replicatedBlocks[b.table] ??= {})[String(b.partition)] = Number(b.block)
  }
  for (const line of events.split('\n').filter(Boolean)) {
    const { event, value } = JSON.parse(line) as { event: string, value: string | number }
    out.events[event] = Number(value)
  }
  for (const line of parts.split('\n').filter(Boolean)) {
    const p = JSON.parse(line) as Record<string, string | number>
    out.partitions.push({ partition: String(p.partition), block: Number(p.block), rows: Number(p.rows), parts: Number(p.parts) })
  }
  return out
}

/**
 * Inserts and rows gained between two readings of a host. Replicated: the highest block number's
 * rise, summed over partitions (a new partition numbers from 0). Plain MergeTree: its one
 * counter's rise over the whole table.
 */
export function hostDelta (before: HostReading, after: HostReading, replicated: boolean): { inserts: number, rows: number, events: Record<string, number>, blocksByTable: Record<string, number> } {
  let inserts = 0
  let rows = 0
  for (const p of after.partitions) {
    const prev = before.partitions.find((q) => q.partition === p.partition)
    if (replicated) inserts += p.block - (prev?.block ?? -1)
    rows += p.rows - (prev?.rows ?? 0)
  }
  if (!replicated) {
    const top = (r: HostReading): number => r.partitions.reduce((m, p) => Math.max(m, p.block), -1)
    inserts = top(after) - top(before)
  }
  const events: Record<string, number> = {}
  for (const [k, v] of Object.entries(after.events)) {
    const d = v - (before.events[k] ?? 0)
    if (d !== 0) events[k] = d
  }
  // Blocks (one per insert and partition) written to each replicated table: the events table, its
  // rollups (materialized views write their own parts) and the metadata tables.
  const blocksByTable: Record<string, number> = {}
  for (const [t, partitions] of Object.entries(after.replicatedBlocks)) {
    let n = 0
    for (const [partition, block] of Object.entries(partitions)) n += block - (before.replicatedBlocks[t]?.[partition] ?? -1)
    if (n !== 0) blocksByTable[t] = n
  }
  return { inserts, rows, events, blocksByTable }
}

/** Active parts per partition at the end, and the replication queue by entry type. */
export async function readParts (host: Host, database: string): Promise<{ eventsMaxParts: number, anyTableMax: number, activeParts: number, queue: Record<string, number> }> {
  const [parts, queue] = await Promise.all([
    hostSql(host.url, `SELECT table, partition, count() AS parts FROM system.parts WHERE database = '${database}' AND active
      GROUP BY table, partition FORMAT JSONEachRow`),
    hostSql(host.url, `SELECT type, count() AS n FROM system.replication_queue WHERE database = '${database}' GROUP BY type FORMAT JSONEachRow`),
  ])
  let eventsMaxParts = 0
  let anyTableMax = 0
  let activeParts = 0
  for (const line of parts.split('\n').filter(Boolean)) {
    const p = JSON.parse(line) as { table: string, parts: string | number }
    const n = Number(p.parts)
    activeParts += n
    anyTableMax = Math.max(anyTableMax, n)
    if (p.table === 'events' || p.table === 'events_local') eventsMaxParts = Math.max(eventsMaxParts, n)
  }
  const byType: Record<string, number> = {}
  for (const line of queue.split('\n').filter(Boolean)) {
    const q = JSON.parse(line) as { type: string, n: string | number }
    byType[q.type] = Number(q.n)
  }
  return { eventsMaxParts, anyTableMax, activeParts, queue: byType }
}

/** ZooKeeper's `mntr` as numbers (the non-numeric lines, e.g. its version, left out); {} when it does not answer. */
export async function readZooKeeper (port: number | null): Promise<Record<string, number>> {
  if (port === null) return {}
  const out: Record<string, number> = {}
  for (const line of (await fourLetter(port, 'mntr')).split('\n')) {
    const [key, value] = line.split('\t')
    if (key && value !== undefined && Number.isFinite(Number(value))) out[key] = Number(value)
  }
  return out
}

/** A Sluice node's /metrics as name{labels} -> value; empty when it does not answer. */
export async function scrape (url: string): Promise<Map<string, number>> {
  const out = new Map<string, number>()
  try {
    const res = await fetch(`${url}/metrics`)
    for (const line of (await res.text()).split('\n')) {
      if (line === '' || line.startsWith('#')) continue
      const at = line.lastIndexOf(' ')
      out.set(line.slice(0, at), Number(line.slice(at + 1)))
    }
  } catch {}
  return out
}

/** Waits until no node has a request in flight (but the scrape) or rows waiting in its writer. */
export async function waitIdle (urls: readonly string[], timeoutMs = 30_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    const all = await Promise.all(urls.map(scrape))
    if (all.every((m) => m.size > 0 && (m.get('sluice_http_in_flight') ?? 0) <= 1 && (m.get('sluice_writer_pending_rows') ?? 0) === 0)) return true
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  return false
}
