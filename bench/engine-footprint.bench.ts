// What each storage engine costs besides throughput: `node bench/engine-footprint.bench.ts`.
// For the managed 18.16 server and the embedded engine (chdb, CLICKHOUSE_URL=chdb:<dir>), in
// turn, `--rounds` times: the time from spawning Sluice to /readyz answering (the managed server's
// own start included), the resident memory of Sluice and of its ClickHouse server when idle after
// `--bodies` ingest requests of 1,000 lines (sequential, each waiting for its 200), the median
// latency of those requests, and the install size of each engine. Prints a Markdown table.
// The ingest throughput and CPU per event are bench/ingest.bench.ts's (--engine chdb).
import { execFileSync } from 'node:child_process'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { findClickHouseBinary, startManagedClickHouse } from '../lib/storage/managed-clickhouse.ts'
import type { ManagedClickHouse } from '../lib/storage/managed-clickhouse.ts'
import { chdbEngineDir, loadChdb } from '../lib/storage/chdb-engine.ts'
import { createLogger } from '../lib/logger.ts'
import { buildBodyPool } from './body-pool.ts'
import { SluiceChild } from './sluice-child.ts'
import { BenchDirs } from './bench-dirs.ts'
import { rssBytes } from './proc-stats.ts'

const { values: args } = parseArgs({
  options: {
    rounds: { type: 'string', default: '2' },
    bodies: { type: 'string', default: '50' },
  },
})
const rounds = Number(args.rounds)
const bodyCount = Number(args.bodies)
const log = createLogger({ level: 'warn', fd: 2 })
const progress = (text: string): void => { process.stderr.write(`[footprint] ${text}\n`) }
const dirs = new BenchDirs('sluice-footprint')
const bodies = buildBodyPool({ count: bodyCount, linesPerBody: 1000, seed: 42, nowMs: Date.now(), directOrgId: 'org_direct', directStream: 'bench' })

interface Sample { readyMs: number, sluiceRss: number, serverRss: number, medianRequestMs: number }
const samples: Record<'server' | 'chdb', Sample[]> = { server: [], chdb: [] }

async function measure (engine: 'server' | 'chdb', round: number): Promise<Sample> {
  const dir = join(dirs.tmp, `${engine}-${round}`)
  let managed: ManagedClickHouse | null = null
  let sluice: SluiceChild | null = null
  try {
    const started = performance.now()
    if (engine === 'server') managed = await startManagedClickHouse({ dataDir: join(dir, 'clickhouse'), startTimeoutMs: 60_000, log })
    sluice = await SluiceChild.start({
      dataDir: join(dir, 'sluice'), clickhouseUrl: managed?.url ?? `chdb:${join(dir, 'chdb')}`, database: 'sluice', env: {},
    })
    const readyMs = performance.now() - started
    const { token } = await sluice.setUpStream('bench')
    const latencies: number[] = []
    for (const body of bodies) {
      const t0 = performance.now()
      const res = await fetch(`${sluice.url}/api/ingest/bench`, { method: 'POST', body: body.plain, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/x-ndjson' } })
      await res.arrayBuffer()
      if (res.status !== 200) throw new Error(`ingest answered ${res.status}`)
      latencies.push(performance.now() - t0)
    }
    await sluice.waitIdle()
    await new Promise((resolve) => setTimeout(resolve, 2000)) // merges and caches settle
    latencies.sort((a, b) => a - b)
    return {
      readyMs,
      sluiceRss: rssBytes(sluice.pid),
      serverRss: managed?.pid ? rssBytes(managed.pid) : 0,
      medianRequestMs: latencies[Math.floor(latencies.length / 2)],
    }
  } finally {
    await sluice?.stop().catch(() => {})
    await managed?.stop().catch(() => {})
  }
}

/** Debian's installed size of the server's packages (clickhouse-server needs clickhouse-common). */
function debianServerSize (): string {
  try {
    // dpkg-query's own format fields, not a template string.
    const format = '-f=' + ['${Package}', '${Installed-Size}'].join(' ') + '\\n' // eslint-disable-line no-template-curly-in-string
    const lines = execFileSync('dpkg-query', ['-W', format, 'clickhouse-server', 'clickhouse-common'], { encoding: 'utf8' })
    const kib = lines.trim().split('\n').reduce((sum, line) => sum + Number(line.split(' ')[1]), 0)
    return `${Math.round(kib / 1024)}M (Debian's clickhouse-server and clickhouse-common)`
  } catch {
    return '?'
  }
}

function du (path: string): string {
  try {
    return execFileSync('du', ['-sh', '--dereference', path], { encoding: 'utf8' }).split('\t')[0]
  } catch {
    return '?'
  }
}

try {
  for (let round = 1; round <= rounds; round++) {
    for (const engine of ['server', 'chdb'] as const) {
      const s = await measure(engine, round)
      samples[engine].push(s)
      progress(`${engine} #${round}: ready ${Math.round(s.readyMs)} ms, RSS Sluice ${(s.sluiceRss / 2 ** 20).toFixed(0)} MiB + server ${(s.serverRss / 2 ** 20).toFixed(0)} MiB, request p50 ${s.medianRequestMs.toFixed(0)} ms`)
    }
  }
  const mib = (b: number): string => (b / 2 ** 20).toFixed(0)
  const range = (xs: number[], f: (x: number) => string): string => xs.length === 1 ? f(xs[0]) : `${f(Math.min(...xs))}-${f(Math.max(...xs))}`
  const binary = findClickHouseBinary()?.command ?? null
  const out = [
    `| Engine | Start to /readyz (ms) | RSS idle after ${bodyCount} x 1,000 lines: Sluice + server (MiB) | One request of 1,000 lines, p50 (ms) | Install |`,
    '|---|---|---|---|---|',
    `| Managed server (${binary ?? '?'}) | ${range(samples.server.map((s) => s.readyMs), (x) => x.toFixed(0))} | ${range(samples.server.map((s) => s.sluiceRss), mib)} + ${range(samples.server.map((s) => s.serverRss), mib)} | ${range(samples.server.map((s) => s.medianRequestMs), (x) => x.toFixed(0))} | ${debianServerSize()} |`,
    `| Embedded (chdb, ClickHouse ${String(loadChdb().version().libchdb ?? '?').replace(/"/g, '')}) | ${range(samples.chdb.map((s) => s.readyMs), (x) => x.toFixed(0))} | ${range(samples.chdb.map((s) => s.sluiceRss), mib)} + 0 | ${range(samples.chdb.map((s) => s.medianRequestMs), (x) => x.toFixed(0))} | ${du(join(chdbEngineDir, 'node_modules'))} (engines/chdb/node_modules) |`,
  ]
  process.stdout.write(out.join('\n') + '\n')
} finally {
  dirs.remove()
}
