// The live tail across nodes: how much later a tail on node 1 shows an event ingested through
// node 2 than a tail on node 2 itself (the forward: lib/live/cluster-live.ts), on the local
// cluster (ZooKeeper, ClickHouse 2 shards x 2 replicas, 2 Sluice nodes; scripts/cluster/local-cluster.ts).
//
//   node bench/cluster-tail.bench.ts [--events 200] [--gap-ms 20]
//
// One event per ingest request through node 2, `--gap-ms` apart; per event, from the arrival of
// its frame at each tail (performance.now() when its bytes came): the added delay (frame on node 1
// minus frame on node 2), and node 1's frame after node 2's 200. Prints p50 / p99 / max in ms.
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { setTimeout as sleep } from 'node:timers/promises'
import { startLocalCluster } from '../scripts/cluster/local-cluster.ts'
import { api, ingest } from '../test/helpers/cluster.ts'
import { isDefined, waitFor } from '../test/helpers/wait-for.ts'
import { quantile } from './load-driver.ts'
import { TailReader } from './tail-reader.ts'

const { values } = parseArgs({ options: { events: { type: 'string', default: '200' }, 'gap-ms': { type: 'string', default: '20' } } })
const events = Number(values.events)
const gapMs = Number(values['gap-ms'])

const dir = await mkdtemp(join(tmpdir(), 'sluice-cluster-bench-'))
const cluster = await startLocalCluster({
  dir,
  sluiceConfig: { metadata: { refreshIntervalMs: 1000 }, ingest: { workers: 1 }, log: { level: 'warn' } },
  startTimeoutMs: 120_000,
  log: (line) => console.error(line),
})
const onSignal = (): void => { cluster.kill(); process.exit(130) }
process.once('SIGINT', onSignal)
process.once('SIGTERM', onSignal)

const readers: TailReader[] = []
try {
  const [a, b] = cluster.nodes
  const admin = cluster.adminToken
  const stream = 'bench_tail'
  const created = await api(a.url, admin, 'POST', '/api/streams', { name: stream })
  if (created.status !== 201) throw new Error(`create: ${created.status}`)
  const minted = await api(a.url, admin, 'POST', `/api/streams/${stream}/ingest-token`, {})
  const token: string = minted.body.token
  await waitFor(async () => (await ingest(b.url, token, stream, [{ message: 'warm' }])).status === 200 ? true : undefined, { what: 'node 2 knows the token', timeoutMs: 30_000, intervalMs: 200, until: isDefined, retryErrors: true })

  /** Arrival (ms, performance.now()) of each bench event's frame, by tail. */
  const atRemote = new Map<string, number>()
  const atLocal = new Map<string, number>()
  readers.push(await TailReader.open(a.url, stream, admin, '', (e, at) => atRemote.set(String(e.message), at)))
  readers.push(await TailReader.open(b.url, stream, admin, '', (e, at) => atLocal.set(String(e.message), at)))
  // Node 2 learns of node 1's tail at its next registry count.
  await waitFor(async () => {
    await ingest(b.url, token, stream, [{ message: 'probe' }])
    await sleep(100)
    return atRemote.has('probe') ? true : undefined
  }, { what: 'node 2 forwards to node 1', timeoutMs: 30_000, intervalMs: 200, until: isDefined, retryErrors: true })

  const acked = new Map<string, number>()
  for (let i = 0; i < events; i++) {
    const id = `bench-${i}`
    const res = await ingest(b.url, token, stream, [{ message: id, path: '/bench', status: 200, rt: 0.01 }])
    acked.set(id, performance.now())
    if (res.status !== 200) throw new Error(`ingest: ${res.status}`)
    await sleep(gapMs)
  }
  await waitFor(async () => atRemote.size >= events + 1 && atLocal.size >= events + 1 ? true : undefined, { what: 'every frame on both tails', timeoutMs: 10_000, intervalMs: 100, until: isDefined, retryErrors: true })

  const added: number[] = []
  const afterAck: number[] = []
  for (let i = 0; i < events; i++) {
    const id = `bench-${i}`
    added.push(atRemote.get(id)! - atLocal.get(id)!)
    afterAck.push(atRemote.get(id)! - acked.get(id)!)
  }
  const row = (name: string, v: number[]): string =>
    `${name.padEnd(44)} p50 ${quantile(v, 0.5).toFixed(2)} ms  p99 ${quantile(v, 0.99).toFixed(2)} ms  max ${Math.max(...v).toFixed(2)} ms`
  console.log(`${events} events through node 2, one per request, ${gapMs} ms apart`)
  console.log(row('added delay (frame on node 1 - on node 2)', added))
  console.log(row('frame on node 1 - 200 from node 2', afterAck))
} finally {
  for (const r of readers) await r.close().catch(() => {})
  await cluster.stop()
  await rm(dir, { recursive: true, force: true })
}
