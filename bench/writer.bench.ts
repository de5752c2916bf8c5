// How many rows a second the batch writer pushes into ClickHouse, and how long its inserts take.
//   CLICKHOUSE_URL=http://127.0.0.1:18123 node bench/writer.bench.ts [--writers 64]
//     [--rows-per-write 500] [--seconds 10] [--max-batch-rows 100000]
// Part 1 compares the two ways to send one batch body (one concatenated Buffer, or a Readable over
// the writes' chunks). Part 2 runs many concurrent writers, each writing ~200-byte RowBinary
// event rows (as the parse workers write them) and awaiting the commit, as ingest requests do. It uses a database of its own and
// drops it afterwards.
import { eventsTableStatements } from '../lib/storage/migrate.ts'
import { Readable } from 'node:stream'
import { randomBytes } from 'node:crypto'
import { parseArgs } from 'node:util'
import { cpus } from 'node:os'
import { createClickHouse } from '../lib/storage/clickhouse.ts'
import { createBatchWriter, writerSettings } from '../lib/storage/batch-writer.ts'
import { loadConfig } from '../lib/config.ts'
import type { InsertStats } from '../lib/storage/batch-writer.ts'
import { eventColumns } from '../lib/ingest/parse-task.ts'
import { EventRowWriter } from '../lib/ingest/row-serializer.ts'
import { EventRow } from '../lib/events/event-row.ts'
import { createLogger } from '../lib/logger.ts'

const { values: args } = parseArgs({
  options: {
    writers: { type: 'string', default: '64' },
    'rows-per-write': { type: 'string', default: '500' },
    seconds: { type: 'string', default: '10' },
    'max-batch-rows': { type: 'string', default: '100000' },
  },
})
const writers = Number(args.writers)
const rowsPerWrite = Number(args['rows-per-write'])
const seconds = Number(args.seconds)
const maxBatchRows = Number(args['max-batch-rows'])

const url = process.env.CLICKHOUSE_URL ?? 'http://127.0.0.1:18123'
const database = `sluice_bench_${randomBytes(4).toString('hex')}`
const clickhouse = createClickHouse({ url, database, user: process.env.CLICKHOUSE_USER ?? 'default', password: process.env.CLICKHOUSE_PASSWORD ?? '', requestTimeoutMs: 60_000 })

const hosts = ['web-01.prod.eu-west-1', 'api-2.prod.internal', 'edge-fra-7']
const paths = ['/api/v1/orders/search', '/static/app.3f9a1c.js', '/login', '/api/v2/invoices/export']
const agents = ['Mozilla/5.0 (Windows NT 10.0; Win64; x64) Chrome/131.0', 'curl/8.5.0', 'Go-http-client/2.0']

/** One write's rows: `n` event rows of about 200 bytes each. */
function makeWrite (seed: number, n: number): Buffer {
  const now = Date.now()
  const rows = new EventRowWriter('org_bench', 'web', now, n * 220)
  const row = new EventRow()
  for (let i = 0; i < n; i++) {
    const k = seed * 7919 + i
    rows.write(row.fill({
      ts: now - (k % 60_000), host: hosts[k % 3], path: paths[k % 4], method: 'GET', status: k % 5 === 0 ? 404 : 200,
      rt: Number(`0.0${k % 97}`), bytes: k % 20_000, src: `203.0.113.${k % 250}`, user_agent: agents[k % 3],
      message: `request ${k} served`, filename: null, attrs: `{"pod":"web-${k % 17}"}`,
    }), k, 180)
  }
  return Buffer.from(rows.finish())
}

function percentile (sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]
}

const fmt = (n: number) => Math.round(n).toLocaleString('en-US')

async function compareBodies (): Promise<void> {
  const chunks = Array.from({ length: 200 }, (_, i) => makeWrite(i, 500)) // 100k rows, as 200 writes
  const rows = 200 * 500
  const bytes = chunks.reduce((s, c) => s + c.byteLength, 0)
  const statement = `INSERT INTO events (${eventColumns.join(', ')}) FORMAT RowBinary`
  const settings = { max_insert_block_size: String(Math.max(rows, 1_048_576)) }
  const times: Record<'concat' | 'stream', number[]> = { concat: [], stream: [] }
  let concatMs = 0
  for (let round = 0; round < 16; round++) {
    for (const mode of round % 2 === 0 ? ['concat', 'stream'] as const : ['stream', 'concat'] as const) {
      const started = performance.now()
      if (mode === 'concat') {
        const body = Buffer.concat(chunks)
        concatMs += performance.now() - started
        await clickhouse.insertRaw(statement, body, undefined, settings)
      } else {
        await clickhouse.insertRaw(statement, Readable.from(chunks), undefined, settings)
      }
      if (round > 0) times[mode].push(performance.now() - started) // round 0 warms up
    }
  }
  console.log(`\n## One ${fmt(rows)}-row batch (${(bytes / 1e6).toFixed(1)} MB, 200 chunks), 15 inserts each way`)
  console.log('| body | median ms | min ms | rows/s |')
  console.log('|---|---|---|---|')
  for (const mode of ['concat', 'stream'] as const) {
    const sorted = times[mode].sort((a, b) => a - b)
    console.log(`| ${mode} | ${sorted[7].toFixed(1)} | ${sorted[0].toFixed(1)} | ${fmt(rows / sorted[7] * 1000)} |`)
  }
  console.log(`Buffer.concat alone: ${(concatMs / 16).toFixed(1)} ms per batch`)
}

async function runWriters (): Promise<void> {
  const inserts: InsertStats[] = []
  const writer = createBatchWriter({
    ...writerSettings(loadConfig({ env: {} })), // the server's defaults, as the service runs them
    clickhouse, table: 'events', columns: eventColumns, format: 'RowBinary', maxBatchRows,
    log: createLogger({ level: 'warn', fd: 2 }),
    onInsert: (s) => { inserts.push(s) },
  })
  const payloads = Array.from({ length: 64 }, (_, i) => makeWrite(1000 + i, rowsPerWrite))
  const rowBytes = payloads[0].byteLength / rowsPerWrite
  const writeLatencies: number[] = []
  let rowsWritten = 0
  let failures = 0
  const startedAt = performance.now()
  const endAt = startedAt + seconds * 1000
  await Promise.all(Array.from({ length: writers }, async (_, w) => {
    for (let i = w; performance.now() < endAt; i += writers) {
      const t0 = performance.now()
      try {
        await writer.write([payloads[i % payloads.length]], rowsPerWrite)
        rowsWritten += rowsPerWrite
        writeLatencies.push(performance.now() - t0)
      } catch {
        failures++
      }
    }
  }))
  const elapsedS = (performance.now() - startedAt) / 1000
  await writer.close()
  const [{ n }] = await clickhouse.query<{ n: number }>('SELECT count() AS n FROM events')
  const okInserts = inserts.filter((s) => s.ok)
  const insertMs = okInserts.map((s) => s.durationMs).sort((a, b) => a - b)
  writeLatencies.sort((a, b) => a - b)
  console.log(`\n## Writer: ${writers} concurrent writers x ${rowsPerWrite} rows/write (${rowBytes.toFixed(0)} B/row), ${seconds} s, maxBatchRows ${fmt(maxBatchRows)}`)
  console.log('| rows/s | MB/s | inserts | rows/insert | insert p50 / p99 / max ms | write p50 / p99 ms | failed writes |')
  console.log('|---|---|---|---|---|---|---|')
  console.log(`| ${fmt(rowsWritten / elapsedS)} | ${(rowsWritten * rowBytes / elapsedS / 1e6).toFixed(1)} | ${okInserts.length} (${inserts.length - okInserts.length} failed) | ${fmt(rowsWritten / Math.max(1, okInserts.length))} | ${percentile(insertMs, 0.5).toFixed(0)} / ${percentile(insertMs, 0.99).toFixed(0)} / ${(insertMs.at(-1) ?? NaN).toFixed(0)} | ${percentile(writeLatencies, 0.5).toFixed(0)} / ${percentile(writeLatencies, 0.99).toFixed(0)} | ${failures} |`)
  console.log(`rows in ClickHouse: ${fmt(n)} (resolved writes: ${fmt(rowsWritten)})`)
}

try {
  await clickhouse.ensureDatabase()
  for (const statement of eventsTableStatements) await clickhouse.command(statement)
  console.log(`# Batch writer benchmark: Node ${process.version}, ClickHouse ${await clickhouse.version()}, ${cpus().length} x ${cpus()[0]?.model ?? '?'}`)
  await compareBodies()
  await clickhouse.command('TRUNCATE TABLE events')
  await runWriters()
} finally {
  await clickhouse.command(`DROP DATABASE IF EXISTS \`${database}\``)
  await clickhouse.close()
}
