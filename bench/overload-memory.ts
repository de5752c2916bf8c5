// What holds Sluice's memory under overload: the fault harness's overload (test/faults/overload.test.ts)
// with the body size and client count as arguments, and Sluice's RSS, main-thread V8 heap and
// external memory, uncommitted bytes, bytes being read and the writer's rows sampled every 250 ms.
//   node bench/overload-memory.ts --clickhouse-url http://127.0.0.1:8123 --clients 128 --lines 400000 --seconds 8 [--config '{"limits":{...}}']
// Prints one JSON line per sample and a summary: the peak of each, and VmHWM.
import { readFileSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { check, checkerClient, createStream, runLoad, sleep, startSluiceProcess } from '../test/faults/harness.ts'

const { values } = parseArgs({
  options: {
    'clickhouse-url': { type: 'string' },
    clients: { type: 'string', default: '128' },
    lines: { type: 'string', default: '10000' },
    seconds: { type: 'string', default: '8' },
    config: { type: 'string', default: '{}' },
  },
})
const clickhouseUrl = values['clickhouse-url'] ?? process.env.CLICKHOUSE_URL
if (clickhouseUrl === undefined) throw new Error('--clickhouse-url or CLICKHOUSE_URL')
const extra = JSON.parse(values.config) as { limits?: object }
const sluice = await startSluiceProcess({
  clickhouseUrl,
  config: { ...extra, limits: { concurrentRequests: 100_000, requestsPerMinute: 10_000_000, ...extra.limits } },
})
const pid = sluice.child.pid!
const status = (field: string): number => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) * 1024
const gauges = ['process_resident_memory_bytes', 'nodejs_heap_size_used_bytes', 'nodejs_heap_size_total_bytes', 'nodejs_external_memory_bytes',
  'sluice_uncommitted_bytes', 'sluice_ingest_reading_bytes', 'sluice_ingest_reading_requests', 'sluice_ingest_waiting_requests', 'sluice_writer_pending_rows', 'sluice_worker_queue']
const peaks: Record<string, number> = {}
let stopped = false
const sampler = (async () => {
  while (!stopped) {
    try {
      const text = await (await fetch(`${sluice.url}/metrics`)).text()
      const sample: Record<string, number> = { rss: status('VmRSS') }
      for (const g of gauges) {
        const m = new RegExp(`^${g}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text)
        if (m) sample[g] = Number(m[1])
      }
      for (const [k, v] of Object.entries(sample)) peaks[k] = Math.max(peaks[k] ?? 0, v)
      console.log(JSON.stringify(sample))
    } catch {}
    await sleep(250)
  }
})()
const checker = checkerClient(clickhouseUrl, sluice.database)
try {
  const token = await createStream(sluice.url, sluice.adminToken, 'overload')
  const lines = Number(values.lines)
  const load = runLoad({ url: () => sluice.url, stream: 'overload', token, clients: Number(values.clients), linesPerRequest: lines, stopped: () => stopped, giveUpWhenStopped: true })
  await sleep(Number(values.seconds) * 1000)
  stopped = true
  const result = await check(checker, 'overload', await load)
  await sampler
  const mib = (n: number): number => Math.round(n / 1048576)
  console.log(JSON.stringify({
    clients: Number(values.clients), lines, bodyBytes: lines * 38, vmHwmMiB: mib(status('VmHWM')),
    peaksMiB: Object.fromEntries(Object.entries(peaks).map(([k, v]) => [k, k.endsWith('bytes') || k === 'rss' ? mib(v) : v])),
    answers: result.answerCounts, missing: result.missing, duplicated: result.duplicated,
  }))
} finally {
  stopped = true
  await checker.command(`DROP DATABASE IF EXISTS \`${sluice.database}\``).catch(() => {})
  await checker.close()
  await sluice.stop()
}
