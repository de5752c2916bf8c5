// Cluster mode's write path, measured at ClickHouse: what Sluice does (each batch one insert into
// ONE shard's local table, the shards taken in turn; lib/storage/shard-set.ts) against the
// alternative the issue names, one insert through the `Distributed` table with
// insert_distributed_sync=1 (the receiving host splits the batch by the table's sharding key and
// answers once every shard has committed its part, so a 200 after it would also mean committed).
// On the local cluster (ZooKeeper, ClickHouse 2 shards x 2 replicas; scripts/cluster/local-cluster.ts),
// with one Sluice node there only to migrate the schema.
//
//   node bench/cluster-insert.bench.ts [--rows 100000] [--inserts 40] [--concurrency 2] [--rounds 2]
//
// The batches are the RowBinary bytes the parse workers produce (bench/payload.ts lines through
// lib/ingest/parse-worker.ts), the statement the writer's. Per mode: rows/s over --inserts inserts
// with --concurrency in flight (all sent to one host, s1r1, as a Sluice node sends its
// Distributed inserts to its nearest host, or round robin over the shards' first replicas for the
// direct mode), insert latency p50/p99, CPU-s per 1M rows of ClickHouse (all four servers) and of
// ZooKeeper (from /proc), ZooKeeper requests per insert (system.events ZooKeeper* deltas over all
// hosts) and parts written per insert (system.events InsertedRows / the parts counted in
// system.parts of events_local). Modes alternate, --rounds times each.
import { mkdtemp, rm } from 'node:fs/promises'
import { execFileSync } from 'node:child_process'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { request } from 'undici'
import { startLocalCluster } from '../scripts/cluster/local-cluster.ts'
import type { LocalCluster } from '../scripts/cluster/local-cluster.ts'
import { eventColumns } from '../lib/events/fields.ts'
import parseTask from '../lib/ingest/parse-worker.ts'
import { quoteIdentifier } from '../lib/storage/sql.ts'
import { generateLines } from './payload.ts'
import { quantile } from './load-driver.ts'
import { machineCpuSeconds, processCpuSeconds } from './proc-stats.ts'

const { values: args } = parseArgs({
  options: {
    rows: { type: 'string', default: '100000' },
    inserts: { type: 'string', default: '40' },
    concurrency: { type: 'string', default: '2' },
    rounds: { type: 'string', default: '2' },
  },
})
const rowsPerInsert = Number(args.rows)
const insertCount = Number(args.inserts)
const concurrency = Number(args.concurrency)
const rounds = Number(args.rounds)

type Mode = 'shard-local' | 'distributed-sync'

/**
 * RowBinary batches of `rows` rows each, as the workers make them. Every batch of the whole run
 * has distinct bytes (its own seq range from `firstBatch`): the replicated tables keep only one of
 * two identical blocks, so a batch sent twice would measure de-duplication, not an insert.
 */
function makeBatches (firstBatch: number, count: number, rows: number): Buffer[] {
  const receivedAt = Date.now()
  const lines = generateLines(rows, 7, receivedAt)
  const input = new TextEncoder().encode(lines.join('\n') + '\n').buffer
  const batches: Buffer[] = []
  for (let i = 0; i < count; i++) {
    const out = parseTask({
      input: input.slice(0), firstLine: 1, orgId: 'org_bench', stream: 'bench', receivedAt,
      minTs: receivedAt - 30 * 86_400_000, maxTs: receivedAt + 2 * 86_400_000, seqBase: (firstBatch + i) * rows, live: null,
    })
    if (out.ingested !== rows) throw new Error(`expected ${rows} rows, parsed ${out.ingested}`)
    batches.push(Buffer.from(out.rows))
  }
  return batches
}

async function sql (url: string, query: string): Promise<string> {
  const res = await request(url, { method: 'POST', body: query })
  const text = await res.body.text()
  if (res.statusCode !== 200) throw new Error(`${query.slice(0, 80)}: ${res.statusCode} ${text.slice(0, 300)}`)
  return text
}

/** Sum over hosts of the system.events counters named like `pattern`. */
async function eventSums (cluster: LocalCluster, pattern: string): Promise<Map<string, number>> {
  const sums = new Map<string, number>()
  for (const url of cluster.clickhouseUrls) {
    const text = await sql(url, `SELECT event, value FROM system.events WHERE event LIKE '${pattern}' FORMAT TSV`)
    for (const line of text.split('\n')) {
      if (line === '') continue
      const [event, value] = line.split('\t')
      sums.set(event, (sums.get(event) ?? 0) + Number(value))
    }
  }
  return sums
}

/** Active parts of events_local over every host. */
async function localParts (cluster: LocalCluster, database: string): Promise<number> {
  let n = 0
  for (const url of cluster.clickhouseUrls) {
    n += Number(await sql(url, `SELECT count() FROM system.parts WHERE database = '${database}' AND table = 'events_local' AND active`))
  }
  return n
}

/** pids of the cluster's ClickHouse servers and ZooKeeper, found by their state directory. */
function clusterPids (dir: string): { clickhouse: number[], zookeeper: number[] } {
  const out = execFileSync('pgrep', ['-af', dir], { encoding: 'utf8' })
  const clickhouse: number[] = []
  const zookeeper: number[] = []
  for (const line of out.split('\n')) {
    const [pid, ...cmd] = line.split(' ')
    const command = cmd.join(' ')
    if (command.includes('clickhouse-server')) clickhouse.push(Number(pid))
    else if (command.includes('java')) zookeeper.push(Number(pid))
  }
  return { clickhouse, zookeeper }
}

interface RoundResult {
  mode: Mode
  rowsPerSecond: number
  p50Ms: number
  p99Ms: number
  clickhouseCpuPer1M: number
  zookeeperCpuPer1M: number
  zkRequestsPerInsert: number
  zkByKind: Record<string, number>
  otherShare: number
}

async function runRound (cluster: LocalCluster, mode: Mode, batches: Buffer[]): Promise<RoundResult> {
  const db = cluster.database
  const columns = eventColumns.map(quoteIdentifier).join(', ')
  // The first replica of each shard for the direct mode (hosts are listed shard by shard).
  const replicas = cluster.hosts.length / new Set(cluster.hosts.map((h) => h.shard)).size
  const shardUrls = cluster.clickhouseUrls.filter((_, i) => i % replicas === 0)
  const target = (i: number): { url: string, table: string, settings: string } => mode === 'shard-local'
    ? { url: shardUrls[i % shardUrls.length], table: 'events_local', settings: '' }
    : { url: cluster.clickhouseUrls[0], table: 'events', settings: '&insert_distributed_sync=1' }

  const pids = clusterPids(cluster.dir)
  const cpu = (list: number[]): number => list.reduce((sum, pid) => sum + processCpuSeconds(pid), 0)
  const zkBefore = await eventSums(cluster, 'ZooKeeper%')
  const chBefore = cpu(pids.clickhouse)
  const zooBefore = cpu(pids.zookeeper)
  const machineBefore = machineCpuSeconds()
  const latencies: number[] = []
  const started = performance.now()
  let next = 0
  await Promise.all(Array.from({ length: concurrency }, async () => {
    for (let i = next++; i < batches.length; i = next++) {
      const { url, table, settings } = target(i)
      const query = `INSERT INTO ${db}.${table} (${columns}) FORMAT RowBinary`
      const t0 = performance.now()
      const res = await request(`${url}/?query=${encodeURIComponent(query)}${settings}`, { method: 'POST', body: batches[i] })
      const text = await res.body.text()
      if (res.statusCode !== 200) throw new Error(`${mode} insert ${i}: ${res.statusCode} ${text.slice(0, 300)}`)
      latencies.push(performance.now() - t0)
    }
  }))
  const seconds = (performance.now() - started) / 1000
  const rows = batches.length * rowsPerInsert
  const chSeconds = cpu(pids.clickhouse) - chBefore
  const zooSeconds = cpu(pids.zookeeper) - zooBefore
  const machineAfter = machineCpuSeconds()
  const zkAfter = await eventSums(cluster, 'ZooKeeper%')
  const zkByKind: Record<string, number> = {}
  let zkTotal = 0
  for (const [event, after] of zkAfter) {
    if (!/^ZooKeeper(Create|Remove|Exists|Get|Set|List|Multi|Check|Close|Sync|Transactions)$/.test(event)) continue
    const delta = after - (zkBefore.get(event) ?? 0)
    zkByKind[event] = delta / batches.length
    if (event === 'ZooKeeperTransactions') zkTotal = delta
  }
  // Without a Transactions counter, the sum of the request kinds.
  if (zkTotal === 0) zkTotal = Object.values(zkByKind).reduce((sum, v) => sum + v, 0) * batches.length
  const ours = chSeconds + zooSeconds
  const busy = machineAfter.busy - machineBefore.busy
  return {
    mode,
    rowsPerSecond: rows / seconds,
    p50Ms: quantile(latencies, 0.5),
    p99Ms: quantile(latencies, 0.99),
    clickhouseCpuPer1M: chSeconds / rows * 1e6,
    zookeeperCpuPer1M: zooSeconds / rows * 1e6,
    zkRequestsPerInsert: zkTotal / batches.length,
    zkByKind,
    otherShare: Math.max(0, busy - ours) / (machineAfter.total - machineBefore.total),
  }
}

/** Waits until no merge or replication task is running anywhere, so rounds start alike. */
async function settle (cluster: LocalCluster): Promise<void> {
  for (let i = 0; i < 120; i++) {
    let busy = 0
    for (const url of cluster.clickhouseUrls) {
      busy += Number(await sql(url, 'SELECT (SELECT count() FROM system.merges) + (SELECT count() FROM system.replication_queue)'))
    }
    if (busy === 0) return
    await new Promise((resolve) => setTimeout(resolve, 500))
  }
}

const dir = await mkdtemp(join(tmpdir(), 'sluice-cluster-insert-'))
const cluster = await startLocalCluster({
  dir, nodes: 1, haproxy: false, startTimeoutMs: 120_000,
  sluiceConfig: { log: { level: 'warn' } },
  log: (line) => console.error(line),
})
const onSignal = (): void => { cluster.kill(); process.exit(130) }
process.once('SIGINT', onSignal)
process.once('SIGTERM', onSignal)

try {
  let madeBatches = 0
  const batchesOf = (count: number): Buffer[] => {
    const made = makeBatches(madeBatches, count, rowsPerInsert)
    madeBatches += count
    return made
  }
  const results: RoundResult[] = []
  // Warm-up: a few inserts each way.
  for (const mode of ['shard-local', 'distributed-sync'] as const) await runRound(cluster, mode, batchesOf(4))
  for (let r = 0; r < rounds; r++) {
    for (const mode of ['shard-local', 'distributed-sync'] as const) {
      console.error(`[cluster-insert] making ${insertCount} batches of ${rowsPerInsert} rows`)
      const batches = batchesOf(insertCount)
      await settle(cluster)
      const result = await runRound(cluster, mode, batches)
      console.error(`[cluster-insert] ${mode}: ${Math.round(result.rowsPerSecond).toLocaleString('en-US')} rows/s`)
      results.push(result)
    }
  }
  const parts = await localParts(cluster, cluster.database)
  const f = (n: number, digits = 0): string => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits })
  console.log(`## Cluster insert path: \`node bench/cluster-insert.bench.ts ${process.argv.slice(2).join(' ')}\``)
  console.log('')
  console.log(`${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC; local cluster 2 shards x 2 replicas + ZooKeeper on this machine; ` +
    `${insertCount} inserts of ${f(rowsPerInsert)} rows (RowBinary, the workers' bytes) per round, ${concurrency} in flight; modes alternating; ` +
    `active parts of events_local at the end, all hosts: ${parts}.`)
  console.log('')
  console.log('| Round | Mode | Rows/s | Insert p50 / p99 | ClickHouse CPU-s per 1M rows | ZooKeeper CPU-s per 1M rows | ZooKeeper requests per insert (all hosts) | of which | Other processes |')
  console.log('|---|---|---:|---|---:|---:|---:|---|---:|')
  results.forEach((r, i) => {
    const kinds = Object.entries(r.zkByKind).filter(([k, v]) => k !== 'ZooKeeperTransactions' && v >= 0.05)
      .map(([k, v]) => `${k.replace('ZooKeeper', '')} ${f(v, 1)}`).join(', ')
    console.log(`| ${Math.floor(i / 2) + 1} | ${r.mode} | ${f(r.rowsPerSecond)} | ${f(r.p50Ms)} / ${f(r.p99Ms)} ms | ${f(r.clickhouseCpuPer1M, 2)} | ${f(r.zookeeperCpuPer1M, 3)} | ${f(r.zkRequestsPerInsert, 1)} | ${kinds} | ${f(r.otherShare * 100, 1)}% |`)
  })
} finally {
  await cluster.stop()
  await rm(dir, { recursive: true, force: true })
}
