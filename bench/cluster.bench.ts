// The cluster benchmark: ingest on one Sluice node and one ClickHouse (setup A, single-node mode,
// like the ingest benchmark's plain phase) against the local cluster (setup B: ZooKeeper,
// ClickHouse 2 shards x 2 replicas, 2 Sluice nodes, haproxy in front; scripts/cluster/local-cluster.ts),
// on this one machine. See bench/README.md, "Cluster", for what each figure means.
//
//   node bench/cluster.bench.ts [--only a,b] [--runs 2] [--duration 8] [--connections 256]
//     [--json FILE] [--keep]
//
// Per setup: an idle window (nothing sent: what the setup costs by itself, and ZooKeeper's
// traffic at rest), a warm-up, then --runs closed-loop runs of plain NDJSON (the ingest
// benchmark's 50 bodies of 1,000 lines) through Sluice (B: through haproxy), each --duration
// seconds after 1 s of warm-up. Reported per run: durable events/s (the `ingested` of the 200s in
// the window / the window), CPU-s per 1M events of every part (cluster-probes.ts), and the inputs
// of a scaling model (inserts per shard, rows per insert, ZooKeeper operations per insert, parts
// per partition, replication queue). Events tables are not emptied between runs: run 2 finds the
// parts (and merges) that run 1 left, as a cluster in service would. After each run the rows the
// storage gained must equal the rows the 200s acknowledged.
import { mkdtemp, rm } from 'node:fs/promises'
import { writeFileSync } from 'node:fs'
import { cpus, tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { setTimeout as sleep } from 'node:timers/promises'
import { startLocalCluster } from '../scripts/cluster/local-cluster.ts'
import type { LocalCluster } from '../scripts/cluster/local-cluster.ts'
import { replicaName } from '../scripts/cluster/cluster-clickhouse.ts'
import { startManagedClickHouse } from '../lib/storage/managed-clickhouse.ts'
import type { ManagedClickHouse } from '../lib/storage/managed-clickhouse.ts'
import { createLogger } from '../lib/logger.ts'
import { api, hostSql, ingest } from '../test/helpers/cluster.ts'
import { isDefined, waitFor } from '../test/helpers/wait-for.ts'
import { buildBodyPool } from './body-pool.ts'
import type { Body } from './body-pool.ts'
import { runLoad, quantile } from './load-driver.ts'
import type { LoadResult } from './load-driver.ts'
import { sluiceTarget } from './ingest-runs.ts'
import { SluiceChild } from './sluice-child.ts'
import { hostDelta, readCpu, readHost, readParts, readZooKeeper, scrape, waitIdle } from './cluster-probes.ts'
import type { Component, CpuReading, Host, HostReading, Proc } from './cluster-probes.ts'

const { values: args } = parseArgs({
  options: {
    only: { type: 'string', default: 'a,b' },
    runs: { type: 'string', default: '2' },
    duration: { type: 'string', default: '8' },
    connections: { type: 'string', default: '256' },
    json: { type: 'string' },
    keep: { type: 'boolean', default: false },
  },
})
const runs = Number(args.runs)
const durationS = Number(args.duration)
const connections = Number(args.connections)
const only = new Set(args.only.toLowerCase().split(','))
const streamName = 'bench'
const database = 'sluice'
// Only load limits Sluice: the org's request rate and concurrency raised (as in the ingest benchmark).
const limits = { requestsPerMinute: 100_000_000, concurrentRequests: 100_000 }
const progress = (text: string): void => { process.stderr.write(`[cluster-bench] ${text}\n`) }

interface Setup {
  name: 'A' | 'B'
  title: string
  /** Where the load goes: Sluice's URL (A) or haproxy's (B). */
  url: string
  sluiceUrls: string[]
  hosts: Host[]
  table: 'events' | 'events_local'
  replicated: boolean
  zooKeeperPort: number | null
  procs: Proc[]
  token: string
}

interface Reading {
  cpu: CpuReading
  hosts: HostReading[]
  zooKeeper: Record<string, number>
  sluice: Array<Map<string, number>>
}

interface WindowRecord {
  setup: 'A' | 'B'
  label: string
  windowS: number
  /** null: the idle window. */
  load: null | { eventsPerS: number, requestsPerS: number, p50Ms: number, p99Ms: number, failed: Record<string, number>, acked: number, stored: number, isExact: boolean, unanswered: number }
  /** CPU seconds in the window. */
  cpu: { byProcess: Record<string, number>, byComponent: Record<Component, number>, clickhouseMerges: number, loadGenerator: number, machineBusy: number, capacity: number, others: number }
  shards: Array<{ shard: string, inserts: number, rows: number }>
  hosts: Array<{ name: string, inserts: number, rows: number, events: Record<string, number>, blocksByTable: Record<string, number> }>
  /**
   * Replicated parts written (blocks), over the cluster: sharded tables (`*_local`: events and
   * its rollups) per shard, and the metadata tables (one ZooKeeper path for all hosts) once.
   */
  blocks: { sharded: number, metadata: number, byTable: Record<string, number> }
  /** Deltas of ZooKeeper's mntr counters (packets), and its znode count at the end. */
  zooKeeper: { packetsReceived: number, packetsSent: number, znodes: number, avgLatencyMs: number }
  /** Sluice's writers, summed over nodes: inserts, rows, seconds inside an insert. */
  writer: { inserts: number, rows: number, insertSeconds: number }
  /** At the end of the run (after the drain): per host. */
  end: Array<{ name: string, eventsMaxParts: number, anyTableMax: number, activeParts: number, queue: Record<string, number> }>
}

const records: WindowRecord[] = []
let managed: ManagedClickHouse | null = null
let sluice: SluiceChild | null = null
let cluster: LocalCluster | null = null
const dirs: string[] = []

function read (setup: Setup): { cpu: CpuReading, rest: Promise<Omit<Reading, 'cpu'>> } {
  const cpu = readCpu(setup.procs) // synchronous: at the window's edge
  const rest = Promise.all([
    Promise.all(setup.hosts.map((h) => readHost(h, database, setup.table))),
    readZooKeeper(setup.zooKeeperPort),
    Promise.all(setup.sluiceUrls.map(scrape)),
  ]).then(([hosts, zooKeeper, sluiceMetrics]) => ({ hosts, zooKeeper, sluice: sluiceMetrics }))
  rest.catch(() => {}) // awaited after the run, which then throws; not an unhandled rejection meanwhile
  return { cpu, rest }
}

/** Rows stored over all shards: per shard, its most advanced replica. */
async function storedRows (setup: Setup): Promise<number> {
  const readings = await Promise.all(setup.hosts.map((h) => readHost(h, database, setup.table)))
  const byShard = new Map<string, number>()
  readings.forEach((r, i) => {
    const rows = r.partitions.reduce((sum, p) => sum + p.rows, 0)
    const shard = setup.hosts[i].shard
    byShard.set(shard, Math.max(byShard.get(shard) ?? 0, rows))
  })
  return [...byShard.values()].reduce((a, b) => a + b, 0)
}

function summarize (setup: Setup, label: string, windowS: number, a: Reading, b: Reading, load: WindowRecord['load']): Omit<WindowRecord, 'end'> {
  const byProcess: Record<string, number> = {}
  const byComponent: Record<Component, number> = { sluice: 0, clickhouse: 0, zookeeper: 0, haproxy: 0 }
  for (const p of setup.procs) {
    const d = b.cpu.byProcess[p.name] - a.cpu.byProcess[p.name]
    byProcess[p.name] = d
    byComponent[p.component] += d
  }
  const clickhouseMerges = Object.keys(b.cpu.merges).reduce((sum, k) => sum + b.cpu.merges[k] - a.cpu.merges[k], 0)
  const loadGenerator = b.cpu.loadGenerator - a.cpu.loadGenerator
  const machineBusy = b.cpu.machine.busy - a.cpu.machine.busy
  const ours = Object.values(byComponent).reduce((x, y) => x + y, 0) + loadGenerator
  const hosts = setup.hosts.map((h, i) => ({ name: h.name, ...hostDelta(a.hosts[i], b.hosts[i], setup.replicated) }))
  const shardNames = [...new Set(setup.hosts.map((h) => h.shard))]
  // A shard's replicas number the same blocks; its inserting replica has them first.
  const shards = shardNames.map((shard) => {
    const of = hosts.filter((_, i) => setup.hosts[i].shard === shard)
    return { shard, inserts: Math.max(...of.map((h) => h.inserts)), rows: Math.max(...of.map((h) => h.rows)) }
  })
  const byTable: Record<string, number> = {}
  for (const shard of shardNames) {
    const of = hosts.filter((_, i) => setup.hosts[i].shard === shard)
    for (const t of new Set(of.flatMap((h) => Object.keys(h.blocksByTable)))) {
      if (!t.endsWith('_local')) continue
      byTable[t] = (byTable[t] ?? 0) + Math.max(...of.map((h) => h.blocksByTable[t] ?? 0))
    }
  }
  for (const t of new Set(hosts.flatMap((h) => Object.keys(h.blocksByTable)))) {
    if (!t.endsWith('_local')) byTable[t] = Math.max(...hosts.map((h) => h.blocksByTable[t] ?? 0))
  }
  const blocks = { sharded: 0, metadata: 0, byTable }
  for (const [t, n] of Object.entries(byTable)) blocks[t.endsWith('_local') ? 'sharded' : 'metadata'] += n
  const metric = (m: Map<string, number>, key: string): number => m.get(key) ?? 0
  const writer = { inserts: 0, rows: 0, insertSeconds: 0 }
  a.sluice.forEach((m0, i) => {
    const m1 = b.sluice[i]
    writer.inserts += metric(m1, 'sluice_insert_rows_count') - metric(m0, 'sluice_insert_rows_count')
    writer.rows += metric(m1, 'sluice_insert_rows_sum') - metric(m0, 'sluice_insert_rows_sum')
    writer.insertSeconds += metric(m1, 'sluice_insert_duration_seconds_sum') - metric(m0, 'sluice_insert_duration_seconds_sum')
  })
  const zk = (key: string): number => (b.zooKeeper[key] ?? NaN) - (a.zooKeeper[key] ?? NaN)
  return {
    setup: setup.name, label, windowS, load,
    cpu: { byProcess, byComponent, clickhouseMerges, loadGenerator, machineBusy, capacity: b.cpu.machine.total - a.cpu.machine.total, others: Math.max(0, machineBusy - ours) },
    shards, hosts, blocks,
    zooKeeper: { packetsReceived: zk('zk_packets_received'), packetsSent: zk('zk_packets_sent'), znodes: b.zooKeeper.zk_znode_count ?? NaN, avgLatencyMs: b.zooKeeper.zk_avg_latency ?? NaN },
    writer,
  }
}

async function endState (setup: Setup): Promise<WindowRecord['end']> {
  return Promise.all(setup.hosts.map(async (h) => ({ name: h.name, ...await readParts(h, database) })))
}

async function idleWindow (setup: Setup): Promise<void> {
  const start = read(setup)
  const t0 = performance.now()
  await sleep(durationS * 1000)
  const end = read(setup)
  const windowS = (performance.now() - t0) / 1000
  const a = { cpu: start.cpu, ...await start.rest }
  const b = { cpu: end.cpu, ...await end.rest }
  records.push({ ...summarize(setup, `${setup.name} idle`, windowS, a, b, null), end: await endState(setup) })
  progress(`${setup.name} idle: machine ${(records.at(-1)!.cpu.machineBusy / windowS).toFixed(2)} cores busy`)
}

async function loadRun (setup: Setup, bodies: readonly Body[], label: string, warmupS: number, windowDurationS: number, counted: boolean): Promise<void> {
  const storedBefore = await storedRows(setup)
  let start: ReturnType<typeof read> | undefined
  let end: ReturnType<typeof read> | undefined
  const result: LoadResult = await runLoad({
    target: sluiceTarget(setup.url, streamName, setup.token, bodies, 'plain'),
    connections, warmupS, durationS: windowDurationS,
    onWindowStart: () => { start = read(setup) },
    onWindowEnd: () => { end = read(setup) },
  })
  if (!await waitIdle(setup.sluiceUrls)) progress(`${label}: Sluice not idle 30 s after the drain`)
  const stored = await storedRows(setup) - storedBefore
  const failed: Record<string, number> = Object.fromEntries(result.total.byCode)
  const window = result.window
  const ok = window.count((s) => s >= 200 && s < 300)
  const load = {
    eventsPerS: window.stored / result.windowS, requestsPerS: ok / result.windowS,
    p50Ms: quantile(window.okLatencyMs, 0.5), p99Ms: quantile(window.okLatencyMs, 0.99),
    failed, acked: result.total.stored, stored, isExact: stored === result.total.stored, unanswered: result.unanswered,
  }
  const a = { cpu: start!.cpu, ...await start!.rest }
  const b = { cpu: end!.cpu, ...await end!.rest }
  const record = { ...summarize(setup, label, result.windowS, a, b, load), end: await endState(setup) }
  progress(`${label}: ${Math.round(load.eventsPerS).toLocaleString('en')} events/s, p99 ${Math.round(load.p99Ms)} ms, ` +
    `failed ${JSON.stringify(failed)}, stored ${stored} vs acked ${load.acked}${load.isExact ? '' : stored > load.acked ? ' (more stored than acknowledged)' : ' ACKNOWLEDGED ROWS MISSING'}`)
  if (counted) records.push(record)
}

async function measureSetup (setup: Setup, bodies: readonly Body[]): Promise<void> {
  await idleWindow(setup)
  await loadRun(setup, bodies, `${setup.name} warm-up`, 1, 4, false)
  for (let i = 1; i <= runs; i++) await loadRun(setup, bodies, `${setup.name} #${i}`, 1, durationS, true)
}

async function setupA (): Promise<Setup> {
  const dir = await mkdtemp(join(tmpdir(), 'sluice-cluster-bench-a-'))
  dirs.push(dir)
  managed = await startManagedClickHouse({ dataDir: join(dir, 'clickhouse'), startTimeoutMs: 60_000, log: createLogger({ level: 'warn', fd: 2 }) })
  sluice = await SluiceChild.start({
    dataDir: join(dir, 'sluice'), clickhouseUrl: managed.url, database,
    env: { SLUICE_REQUESTS_PER_MINUTE: String(limits.requestsPerMinute), SLUICE_CONCURRENT_REQUESTS: String(limits.concurrentRequests) },
  })
  const { token } = await sluice.setUpStream(streamName)
  progress(`A: Sluice pid ${sluice.pid} at ${sluice.url}, ClickHouse pid ${managed.pid} at ${managed.url}`)
  return {
    name: 'A', title: '1 Sluice node + 1 ClickHouse (single-node mode)', url: sluice.url, sluiceUrls: [sluice.url],
    hosts: [{ name: 'single', shard: '1', url: managed.url }], table: 'events', replicated: false, zooKeeperPort: null, token,
    procs: [{ component: 'sluice', name: 'sluice', pid: sluice.pid }, { component: 'clickhouse', name: 'clickhouse', pid: managed.pid! }],
  }
}

async function setupB (): Promise<Setup> {
  const dir = await mkdtemp(join(tmpdir(), 'sluice-cluster-bench-b-'))
  dirs.push(dir)
  cluster = await startLocalCluster({ dir, sluiceConfig: { limits, log: { level: 'warn' } }, startTimeoutMs: 120_000, log: progress })
  const admin = cluster.adminToken
  // Both on node 1: through haproxy the mint could reach node 2 before it knows the stream.
  const first = cluster.nodes[0].url
  const created = await api(first, admin, 'POST', '/api/streams', { name: streamName })
  if (created.status !== 201) throw new Error(`create stream: ${created.status} ${JSON.stringify(created.body)}`)
  const minted = await api(first, admin, 'POST', `/api/streams/${streamName}/ingest-token`, {})
  if (typeof minted.body?.token !== 'string') throw new Error(`ingest token: ${minted.status} ${JSON.stringify(minted.body)}`)
  const token: string = minted.body.token
  for (const node of cluster.nodes) {
    await waitFor(async () => {
      const res = await ingest(node.url, token, streamName, [{ message: 'warm' }])
      if (res.status !== 200) throw new Error(`${res.status} ${JSON.stringify(res.body)}`)
      return true
    }, { what: `${node.url} takes the token`, timeoutMs: 30_000, intervalMs: 200, until: isDefined, retryErrors: true })
  }
  const procs: Proc[] = cluster.processes().map((p) => ({ component: p.kind, name: p.name, pid: p.pid }))
  progress(`B: ${procs.map((p) => `${p.name} pid ${p.pid}`).join(', ')}; load through ${cluster.url}`)
  return {
    name: 'B', title: '2 Sluice nodes behind haproxy, ClickHouse 2 shards x 2 replicas, ZooKeeper', url: cluster.url,
    sluiceUrls: cluster.nodes.map((n) => n.url),
    hosts: cluster.hosts.map((h, i) => ({ name: replicaName(h), shard: String(h.shard), url: cluster!.clickhouseUrls[i] })),
    table: 'events_local', replicated: true, zooKeeperPort: cluster.zooKeeperPort, token, procs,
  }
}

let cleaned: Promise<void> | null = null
function cleanup (): Promise<void> {
  cleaned ??= (async () => {
    await sluice?.stop().catch(() => {})
    await managed?.stop().catch(() => {})
    await cluster?.stop().catch(() => {})
    if (!args.keep) for (const dir of dirs) await rm(dir, { recursive: true, force: true })
  })()
  return cleaned
}
process.on('exit', () => { sluice?.killNow(); cluster?.kill() })
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    progress(`${signal}: stopping everything`)
    void cleanup().finally(() => process.exit(signal === 'SIGINT' ? 130 : 143))
  })
}

// ---- the report ----

const int = (n: number): string => Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : '-'
const fixed = (n: number, digits = 2): string => Number.isFinite(n) ? n.toFixed(digits) : '-'
const pct = (n: number): string => Number.isFinite(n) ? `${(n * 100).toFixed(1)}%` : '-'
const perMillion = (cpuS: number, events: number): string => fixed(cpuS / events * 1e6)

function render (setups: Setup[], version: string, startedAt: Date): string {
  const out: string[] = []
  out.push(`Command: \`node bench/cluster.bench.ts ${process.argv.slice(2).join(' ')}\`, started ${startedAt.toISOString().slice(0, 16).replace('T', ' ')} UTC; ` +
    `${cpus().length} x ${cpus()[0]?.model ?? '?'}, Node ${process.version}, ClickHouse ${version}; ${connections} connections, closed loop, plain NDJSON, 1,000 lines (~210 KB) per request; ${durationS} s windows.`)
  out.push('')
  for (const s of setups) out.push(`- Setup ${s.name}: ${s.title}; processes: ${s.procs.map((p) => p.name).join(', ')}.`)
  out.push('')
  out.push('CPU-s per 1M durable events, by component (over each window; "cores used" = busy CPU-s of the whole machine / wall s):')
  out.push('')
  out.push('| Run | Durable events/s | p99 ms | Cores used | Events/s per core | Events/s per ClickHouse core | Sluice | ClickHouse (of which background pool: merges, replica fetches) | ZooKeeper | haproxy | Load generator | Whole machine | Other processes | Stored = acked |')
  out.push('|---|---|---|---|---|---|---|---|---|---|---|---|---|---|')
  for (const r of records.filter((x) => x.load !== null)) {
    const l = r.load!
    const events = l.eventsPerS * r.windowS
    const cores = r.cpu.machineBusy / r.windowS
    const chCores = r.cpu.byComponent.clickhouse / r.windowS
    const setup = setups.find((s) => s.name === r.setup)!
    const has = (c: Component): boolean => setup.procs.some((p) => p.component === c)
    out.push(`| ${r.label} | ${int(l.eventsPerS)} | ${int(l.p99Ms)} | ${fixed(cores)} | ${int(l.eventsPerS / cores)} | ${int(l.eventsPerS / chCores)} | ` +
      `${perMillion(r.cpu.byComponent.sluice, events)} | ${perMillion(r.cpu.byComponent.clickhouse, events)} (${perMillion(r.cpu.clickhouseMerges, events)}) | ` +
      `${has('zookeeper') ? perMillion(r.cpu.byComponent.zookeeper, events) : '-'} | ${has('haproxy') ? perMillion(r.cpu.byComponent.haproxy, events) : '-'} | ` +
      `${perMillion(r.cpu.loadGenerator, events)} | ${perMillion(r.cpu.machineBusy, events)} | ${pct(r.cpu.others / r.cpu.capacity)} of the machine | ` +
      `${l.isExact ? 'yes' : `**no**: ${int(l.stored)} stored, ${int(l.acked)} acked`}${Object.keys(l.failed).length > 0 ? `; failed ${JSON.stringify(l.failed)}` : ''} |`)
  }
  out.push('')
  out.push('Idle (nothing sent), CPU cores in use by component:')
  out.push('')
  out.push('| Setup | Sluice | ClickHouse | ZooKeeper | haproxy | Whole machine | ZooKeeper requests/s (mntr) | ZooKeeper ops/s (ClickHouse counters, all hosts) | Replicated parts written per s (metadata tables) |')
  out.push('|---|---|---|---|---|---|---|---|---|')
  for (const r of records.filter((x) => x.load === null)) {
    const c = (n: number): string => fixed(n / r.windowS, 3)
    out.push(`| ${r.setup} | ${c(r.cpu.byComponent.sluice)} | ${c(r.cpu.byComponent.clickhouse)} | ${c(r.cpu.byComponent.zookeeper)} | ${c(r.cpu.byComponent.haproxy)} | ` +
      `${c(r.cpu.machineBusy)} | ${fixed(r.zooKeeper.packetsReceived / r.windowS, 1)} | ${fixed(zkOps(r).total / r.windowS, 1)} | ${r.setup === 'A' ? '-' : fixed((r.blocks.sharded + r.blocks.metadata) / r.windowS, 2)} |`)
  }
  out.push('')
  out.push('Scaling-model inputs, per run (inserts = events-table blocks, from block numbers; "ZK ops" = ClickHouse\'s ZooKeeper* counters summed over hosts):')
  out.push('')
  out.push('| Run | Inserts/s by shard | Rows per insert by shard | Sluice writer: inserts/s, rows/insert, mean insert ms | Replicated parts written per insert: events + rollups; metadata tables per s | ZK ops per insert (all kinds) | ZK requests per insert (mntr) | Active parts per partition of the events table at the end, by host | Most parts in any partition of any table | Replication queue at the end, by host |')
  out.push('|---|---|---|---|---|---|---|---|---|---|')
  for (const r of records.filter((x) => x.load !== null)) {
    const inserts = r.shards.reduce((sum, s) => sum + s.inserts, 0)
    const w = r.writer
    out.push(`| ${r.label} | ${r.shards.map((s) => `${s.shard}: ${fixed(s.inserts / r.windowS, 1)}`).join(', ')} | ` +
      `${r.shards.map((s) => `${s.shard}: ${int(s.rows / s.inserts)}`).join(', ')} | ${fixed(w.inserts / r.windowS, 1)}, ${int(w.rows / w.inserts)}, ${int(w.insertSeconds / w.inserts * 1000)} | ` +
      `${r.setup === 'A' ? '-' : `${fixed(r.blocks.sharded / inserts, 1)}; ${fixed(r.blocks.metadata / r.windowS, 1)}`} | ` +
      `${r.setup === 'A' ? '-' : fixed(zkOps(r).total / inserts, 1)} | ${r.setup === 'A' ? '-' : fixed(r.zooKeeper.packetsReceived / inserts, 1)} | ` +
      `${r.end.map((e) => `${e.name}: ${e.eventsMaxParts}`).join(', ')} | ${Math.max(...r.end.map((e) => e.anyTableMax))} | ` +
      `${r.end.map((e) => `${e.name}: ${Object.values(e.queue).reduce((x, y) => x + y, 0)}${Object.keys(e.queue).length > 0 ? ` (${Object.entries(e.queue).map(([k, v]) => `${k} ${v}`).join(', ')})` : ''}`).join(', ')} |`)
  }
  const clusterRuns = records.filter((x) => x.setup === 'B')
  if (clusterRuns.length > 0) {
    const kinds = [...new Set(clusterRuns.flatMap((r) => Object.keys(zkOps(r).byKind)))].sort()
    out.push('')
    out.push('ZooKeeper operations by kind (ClickHouse\'s system.events, summed over the 4 hosts): per insert into an events table during each run, and per second at idle:')
    out.push('')
    out.push(`| Counter | ${clusterRuns.map((r) => r.load === null ? 'idle, per s' : `${r.label}, per insert`).join(' | ')} |`)
    out.push(`|---|${clusterRuns.map(() => '---').join('|')}|`)
    for (const kind of kinds) {
      out.push(`| ${kind} | ${clusterRuns.map((r) => {
        const n = zkOps(r).byKind[kind] ?? 0
        const inserts = r.shards.reduce((sum, s) => sum + s.inserts, 0)
        return r.load === null ? fixed(n / r.windowS, 1) : fixed(n / inserts, 2)
      }).join(' | ')} |`)
    }
  }
  return out.join('\n') + '\n'
}

/** ZooKeeper request counters of ClickHouse (not bytes, wait time or exceptions), summed over hosts. */
function zkOps (r: WindowRecord): { total: number, byKind: Record<string, number> } {
  const byKind: Record<string, number> = {}
  let total = 0
  for (const h of r.hosts) {
    for (const [k, v] of Object.entries(h.events)) {
      if (!k.startsWith('ZooKeeper')) continue
      byKind[k] = (byKind[k] ?? 0) + v
      if (isRequestCounter(k)) total += v
    }
  }
  return { total, byKind }
}

/**
 * The counters of requests sent to ZooKeeper, one per request: by kind (a multi is one request of
 * several operations); not ZooKeeperTransactions (their sum), nor bytes, waits, watches or exceptions.
 */
const requestCounters: ReadonlySet<string> = new Set(['ZooKeeperList', 'ZooKeeperCreate', 'ZooKeeperRemove', 'ZooKeeperExists',
  'ZooKeeperGet', 'ZooKeeperSet', 'ZooKeeperMulti', 'ZooKeeperCheck'])
function isRequestCounter (name: string): boolean {
  return requestCounters.has(name)
}

async function main (): Promise<void> {
  const startedAt = new Date()
  const bodies = buildBodyPool({ count: 50, linesPerBody: 1000, seed: 42, nowMs: Date.now(), directOrgId: 'org_direct', directStream: streamName })
  const setups: Setup[] = []
  let version = '?'
  if (only.has('a')) {
    const a = await setupA()
    setups.push(a)
    version = await hostSql(a.hosts[0].url, 'SELECT version()')
    await measureSetup(a, bodies)
    await sluice!.stop()
    await managed!.stop()
    sluice = null
    managed = null
  }
  if (only.has('b')) {
    const b = await setupB()
    setups.push(b)
    version = await hostSql(b.hosts[0].url, 'SELECT version()')
    await measureSetup(b, bodies)
  }
  if (args.json) writeFileSync(args.json, JSON.stringify({ startedAt, argv: process.argv.slice(2), records }, null, 2))
  process.stdout.write(render(setups, version, startedAt))
}

try {
  await main()
} catch (err) {
  if (cleaned !== null) await new Promise(() => {}) // interrupted: the signal handler exits
  process.stderr.write(`cluster bench failed: ${(err as Error).stack ?? String(err)}\n`)
  process.exitCode = 1
} finally {
  await cleanup()
}
