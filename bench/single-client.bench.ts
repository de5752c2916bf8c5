// Latency of a client that sends one request at a time (syslog-ng's http() destination, Python's
// logging handler): one connection, one small request, the next only after its answer. Before
// issue 15 every such request waited the writer's flush interval (250 ms) for company that never
// came; a write to an idle writer now waits only writer.idleInsertIntervalMs (50 ms) since the
// previous insert started. Also prints where the time goes: in Sluice, in the ClickHouse insert,
// and the active parts of the events and rollup tables (whether merges keep up).
//
// Sluice runs in a child process (bench/sluice-child.ts) against a ClickHouse this script starts,
// with its default configuration. Prints the status counts and p50/p99/max of the request time.
//
// Run: node bench/single-client.bench.ts [--requests 200] [--lines 10] [--sluice-main <lib/main.ts>]
//        [--env SLUICE_CONFIG=<file with writer settings>] [--clickhouse-dir DIR]
import { parseArgs } from 'node:util'
import { join } from 'node:path'
import { createLogger } from '../lib/logger.ts'
import { startManagedClickHouse } from '../lib/storage/managed-clickhouse.ts'
import { SluiceChild, envPairs } from './sluice-child.ts'
import { BenchDirs } from './bench-dirs.ts'
import { quantileOf } from '../test/helpers/slowloris.ts'

const { values: args } = parseArgs({
  options: {
    requests: { type: 'string', default: '200' },
    lines: { type: 'string', default: '10' },
    /** Requests sent first and not counted: connection set-up, JIT, the first parts. */
    warmup: { type: 'string', default: '20' },
    /** lib/main.ts of another checkout (the code before a change), as in bench/ingest.bench.ts. */
    'sluice-main': { type: 'string' },
    /** NAME=VALUE for Sluice's environment, repeatable (e.g. SLUICE_CONFIG=<file> for writer settings). */
    env: { type: 'string', multiple: true, default: [] },
    /** ClickHouse's data in a temp dir under DIR (another filesystem, e.g. /dev/shm), as in bench/ingest.bench.ts. */
    'clickhouse-dir': { type: 'string' },
  },
})
const requests = Number(args.requests)
/** About 60 bytes a line: a typical log line. */
const body = '{"path":"/single","status":200,"host":"web-1","rt":0.012}\n'.repeat(Number(args.lines))

const dirs = new BenchDirs('sluice-single-client', args['clickhouse-dir'])
const log = createLogger({ level: 'warn', fd: 2 })
const managed = await startManagedClickHouse({ dataDir: dirs.clickhouse, startTimeoutMs: 60_000, log })
let sluice: SluiceChild | null = null
try {
  sluice = await SluiceChild.start({ dataDir: join(dirs.tmp, 'sluice'), clickhouseUrl: managed.url, database: 'sluice', env: envPairs(args.env), mainFile: args['sluice-main'] })
  const { token } = await sluice.setUpStream('single')
  const url = `${sluice.url}/api/ingest/single`
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/x-ndjson' }
  const statuses = new Map<number, number>()
  const latenciesMs: number[] = []
  let before = new Map<string, number>()
  let partsPeak = 0
  for (let i = 0; i < Number(args.warmup) + requests; i++) {
    if (i === Number(args.warmup)) before = await sluice.metrics()
    // Every 20 requests: the active parts of `events` and its rollup tables, whether merges keep up.
    if (i % 20 === 0) partsPeak = Math.max(partsPeak, await activeParts(managed.url))
    const started = performance.now()
    const res = await fetch(url, { method: 'POST', headers, body })
    await res.arrayBuffer()
    const ms = performance.now() - started
    if (i < Number(args.warmup)) continue
    latenciesMs.push(ms)
    statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1)
  }
  const q = (p: number): string => quantileOf(latenciesMs, p).toFixed(1)
  const totalS = latenciesMs.reduce((a, b) => a + b, 0) / 1000
  const after = await sluice.metrics()
  const delta = (name: string): number => (after.get(name) ?? 0) - (before.get(name) ?? 0)
  const inserts = delta('sluice_insert_duration_seconds_count')
  const ingestSeries = (part: string): string => [...after.keys()].find((k) => k.startsWith(`sluice_http_request_duration_seconds_${part}{`) && k.includes('/api/ingest/')) ?? ''
  const serverMs = 1000 * delta(ingestSeries('sum')) / delta(ingestSeries('count'))
  const insertMs = 1000 * delta('sluice_insert_duration_seconds_sum') / inserts
  console.log(`one client, one request of ${args.lines} lines at a time: ${requests} requests, statuses ${JSON.stringify(Object.fromEntries(statuses))}; ` +
    `latency p50 ${q(0.5)} ms, p99 ${q(0.99)} ms, max ${q(1)} ms; ${(requests / totalS).toFixed(1)} requests/s`)
  // Where a request's time goes: in the server (arrival to answer), in the ClickHouse insert, and
  // the rest (the writer's wait, reading, the parse worker's round trip, and the client).
  console.log(`mean per request: ${(1000 * totalS / requests).toFixed(1)} ms at the client, ${serverMs.toFixed(1)} ms in Sluice, ` +
    `${insertMs.toFixed(1)} ms in the ClickHouse insert (${inserts} inserts, ${(inserts / totalS).toFixed(1)}/s); ` +
    `active parts of events + rollups at most ${partsPeak}, ${await activeParts(managed.url)} at the end`)
} finally {
  await sluice?.stop()
  await managed.stop()
  dirs.remove()
}

/** Active parts of every table in the `sluice` database (events and its rollups). */
async function activeParts (clickhouseUrl: string): Promise<number> {
  const query = "SELECT count() FROM system.parts WHERE database = 'sluice' AND active"
  const res = await fetch(`${clickhouseUrl}/?query=${encodeURIComponent(query)}`)
  return Number((await res.text()).trim())
}
