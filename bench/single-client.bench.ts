// Latency of a client that sends one request at a time (syslog-ng's http() destination, Python's
// logging handler): one connection, one small request, the next only after its answer. Before
// issue 15 every such request waited the writer's flush interval (250 ms) for company that never
// came; a write to an idle writer now goes out at once.
//
// Sluice runs in a child process (bench/sluice-child.ts) against a ClickHouse this script starts,
// with its default configuration. Prints the status counts and p50/p99/max of the request time.
//
// Run: node bench/single-client.bench.ts [--requests 200] [--lines 10] [--sluice-main <lib/main.ts>]
//        [--env SLUICE_CONFIG=<file with writer settings>]
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
  },
})
const requests = Number(args.requests)
/** About 60 bytes a line: a typical log line. */
const body = '{"path":"/single","status":200,"host":"web-1","rt":0.012}\n'.repeat(Number(args.lines))

const dirs = new BenchDirs('sluice-single-client')
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
  for (let i = 0; i < Number(args.warmup) + requests; i++) {
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
  console.log(`one client, one request of ${args.lines} lines at a time: ${requests} requests, statuses ${JSON.stringify(Object.fromEntries(statuses))}; ` +
    `latency p50 ${q(0.5)} ms, p99 ${q(0.99)} ms, max ${q(1)} ms; ${(requests / totalS).toFixed(1)} requests/s`)
} finally {
  await sluice?.stop()
  await managed.stop()
  dirs.remove()
}
