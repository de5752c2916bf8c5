// Slowloris against Sluice at its default limits (issue 13 hole 1): normal ingest latency with and
// without an attack of slow-header and slow-body connections from another org, and whether the
// server's slots, bytes, fds and memory come back afterwards.
//
// Sluice runs in a child process (bench/sluice-child.ts) against a ClickHouse this script starts.
// Phases: `normal` (normal traffic alone), `attack` (the same traffic while the attack runs; the
// attack starts first and holds every reading slot it can before the traffic starts), then the
// server is left to settle and its gauges, open fds and RSS are read.
//
// Run: node bench/slowloris.bench.ts [--seconds 15] [--connections 8] [--body-clients 64]
//        [--header-clients 64] [--byte-interval-ms 1000]
import { parseArgs } from 'node:util'
import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { createLogger } from '../lib/logger.ts'
import { startManagedClickHouse } from '../lib/storage/managed-clickhouse.ts'
import { SluiceChild } from './sluice-child.ts'
import { BenchDirs } from './bench-dirs.ts'
import { rssBytes } from './proc-stats.ts'
import { quantileOf, runNormalTraffic, startSlowloris } from '../test/helpers/slowloris.ts'
import type { NormalTrafficResult } from '../test/helpers/slowloris.ts'

const { values: args } = parseArgs({
  options: {
    seconds: { type: 'string', default: '15' },
    connections: { type: 'string', default: '8' },
    'body-clients': { type: 'string', default: '64' },
    'header-clients': { type: 'string', default: '64' },
    'byte-interval-ms': { type: 'string', default: '1000' },
    /** Orgs the attack's connections are spread over: two take every slot at default limits. */
    'attack-orgs': { type: 'string', default: '2' },
    /** lib/main.ts of another checkout (the code before a change), as in bench/ingest.bench.ts. */
    'sluice-main': { type: 'string' },
  },
})
const durationMs = Number(args.seconds) * 1000
const concurrency = Number(args.connections)
/** 20 lines of about 60 bytes: a typical shipper batch is small. */
const body = '{"path":"/normal","status":200,"host":"web-1","rt":0.012}\n'.repeat(20)

const dirs = new BenchDirs('sluice-slowloris')
const log = createLogger({ level: 'warn', fd: 2 })
const managed = await startManagedClickHouse({ dataDir: dirs.clickhouse, startTimeoutMs: 60_000, log })
let sluice: SluiceChild | null = null
try {
  sluice = await SluiceChild.start({ dataDir: join(dirs.tmp, 'sluice'), clickhouseUrl: managed.url, database: 'sluice', env: {}, mainFile: args['sluice-main'] })
  const { admin, token } = await sluice.setUpStream('normal')
  const slowTokens: string[] = []
  for (let i = 0; i < Number(args['attack-orgs']); i++) {
    const slow = await sluice.api<{ token: { token: string } }>('POST', '/api/orgs', admin, { name: `slowpoke${i}` })
    await sluice.api('POST', '/api/streams', slow.token.token, { name: 'trickle' })
    slowTokens.push((await sluice.api<{ token: string }>('POST', '/api/streams/trickle/ingest-token', slow.token.token, {})).token)
  }
  const normal = { url: sluice.url, stream: 'normal', token }

  await runNormalTraffic(normal, { concurrency, durationMs: 2000, body }) // warm-up
  const before = { fds: openFds(sluice.pid), rssMiB: rssBytes(sluice.pid) / 2 ** 20 }
  const quiet = await runNormalTraffic(normal, { concurrency, durationMs, body })
  report('normal alone', quiet)

  const attacks = slowTokens.map((slowToken) => startSlowloris({
    target: { url: sluice!.url, stream: 'trickle', token: slowToken },
    bodyClients: Math.ceil(Number(args['body-clients']) / slowTokens.length),
    headerClients: Math.ceil(Number(args['header-clients']) / slowTokens.length),
    byteIntervalMs: Number(args['byte-interval-ms']),
  }))
  await sleep(1000) // the attack takes the slots first
  const peakFds = openFds(sluice.pid)
  const attacked = await runNormalTraffic(normal, { concurrency, durationMs, body })
  const all = await Promise.all(attacks.map((a) => a.stop()))
  report('normal under attack', attacked)
  const answers = new Map<number, number>()
  for (const st of all) for (const [status, n] of st.answers) answers.set(status, (answers.get(status) ?? 0) + n)
  console.log(`attack from ${all.length} orgs: ${all.reduce((n, st) => n + st.opened, 0)} connections opened, answers ${JSON.stringify(Object.fromEntries(answers))}, ` +
    `${all.reduce((n, st) => n + st.closedByServer, 0)} closed by the server; Sluice fds during it ${peakFds}`)
  console.log(`p99 under attack / alone: ${(quantileOf(attacked.latenciesMs, 0.99) / quantileOf(quiet.latenciesMs, 0.99)).toFixed(2)}`)

  await sleep(1000)
  await sluice.waitIdle()
  const m = await sluice.metrics()
  console.log(`after: fds ${openFds(sluice.pid)} (before ${before.fds}), RSS ${(rssBytes(sluice.pid) / 2 ** 20).toFixed(0)} MiB (before ${before.rssMiB.toFixed(0)}), ` +
    `reading requests ${m.get('sluice_ingest_reading_requests')}, waiting ${m.get('sluice_ingest_waiting_requests')}, uncommitted bytes ${m.get('sluice_uncommitted_bytes')}`)
} finally {
  await sluice?.stop()
  await managed.stop()
  dirs.remove()
}

function report (label: string, r: NormalTrafficResult): void {
  const q = (p: number): string => quantileOf(r.latenciesMs, p).toFixed(0)
  console.log(`${label}: ${r.latenciesMs.length} requests, statuses ${JSON.stringify(Object.fromEntries(r.statuses))}` +
    `${r.errors.size > 0 ? ` errors ${JSON.stringify(Object.fromEntries(r.errors))}` : ''}; latency p50 ${q(0.5)} ms, p99 ${q(0.99)} ms, max ${q(1)} ms`)
}

function openFds (pid: number): number {
  return readdirSync(`/proc/${pid}/fd`).length
}
