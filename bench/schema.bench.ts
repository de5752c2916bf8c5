// The version-aware schema benchmark (issue 25, docs/schema-versions.md): the find data set
// (find-dataset.ts, 30 M events over 24 h) on ClickHouse 26.x (the embedded engine, chdb) with the
// portable schema ("before", as 18.16 has it) and with the schema Sluice reconciles on 26.x
// ("after"), loaded from one export, in one run: bytes per event on disk, and the find reads.
//
//   node bench/schema.bench.ts --native FILE --dir DIR [--runs 20] [--rows N] [--keep]
//
// FILE is the data set exported from a database that holds it (a find.bench.ts database on
// 18.16), as Native, optionally zstd-compressed (file name *.zst):
//   curl -s http://127.0.0.1:28123/ --data-binary "SELECT * FROM sluice_find30m.events
//     WHERE stream = 'find' FORMAT Native" | zstd -1 -q -o find30m.native.zst
// That re-import is this benchmark's loader (3 min to export here, against ~8 min to generate the
// set again) and also the upgrade path an 18.16 user takes (docs/schema-versions.md).
//
// Sluice runs in this process on `chdb:DIR` (createApp, one data directory per process), database
// `find_after`, so "after" is measured through the HTTP API; the org and stream are made through
// the API, the events loaded straight into `events` (org_id set to the org Sluice made, received_at
// to the load time, as find-dataset.ts does; the rollup views fill). "before" is database
// `find_before` in the same directory, migrated with the portable schema, loaded from the same
// file; its reads run the SQL the API runs for the same request (lib/query's filterToSql without
// pre-filters), through the same gateway, and so do "after"'s, beside its HTTP times.
import { parseArgs } from 'node:util'
import { mkdirSync, readFileSync, rmSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { cpus } from 'node:os'
import { createApp } from '../lib/app.ts'
import type { App } from '../lib/app.ts'
import { loadConfig } from '../lib/config.ts'
import { createLogger } from '../lib/logger.ts'
import { createClickHouse } from '../lib/storage/clickhouse.ts'
import type { ClickHouse } from '../lib/storage/clickhouse.ts'
import { migrate } from '../lib/storage/migrate.ts'
import { parseFilter } from '../lib/query/filter-parser.ts'
import { filterToSql } from '../lib/query/filter-sql.ts'
import { quantile } from './load-driver.ts'
import { endMs, needlePhrase, needleUser, startMs, stream } from './find-dataset.ts'

const { values: args } = parseArgs({
  options: {
    native: { type: 'string' },
    dir: { type: 'string' },
    runs: { type: 'string', default: '20' },
    keep: { type: 'boolean', default: false },
  },
})
if (!args.native || !args.dir) throw new Error('usage: node bench/schema.bench.ts --native FILE --dir DIR [--runs 20] [--keep]')
const native = resolve(args.native)
const dir = resolve(args.dir)
const runs = Number(args.runs)
const progress = (text: string): void => { process.stderr.write(`[schema] ${new Date().toISOString().slice(11, 19)} ${text}\n`) }
const log = createLogger({ level: 'warn' })
const fmt = (n: number): string => Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : '-'

const columns = ['org_id', 'stream', 'ts', 'received_at', 'host', 'path', 'method', 'status', 'rt', 'bytes', 'src', 'user_agent',
  'message', 'filename', 'level', 'service', 'trace_id', 'span_id', 'attrs', 'attr_keys', 'attr_values', 'seq', 'size']

/** Loads the export into `events` of `ch`'s database, as org `orgId`, received now. */
async function load (ch: ClickHouse, orgId: string): Promise<number> {
  const started = performance.now()
  const select = columns.map((c) => c === 'org_id' ? `'${orgId}' AS org_id` : c === 'received_at' ? `toUInt64(${Date.now()}) AS received_at` : c).join(', ')
  await ch.command(`INSERT INTO events (${columns.join(', ')}) SELECT ${select} FROM file('${native}', Native)
    SETTINGS max_insert_block_size = 1048576, min_insert_block_size_rows = 1048576, max_threads = 2`)
  return (performance.now() - started) / 1000
}

interface Size { rows: number, bytes: number, uncompressed: number, parts: number }

async function sizeOf (ch: ClickHouse): Promise<Size> {
  const [r] = await ch.query<Record<string, number>>(`SELECT sum(rows) AS rows, sum(bytes_on_disk) AS bytes,
    sum(data_uncompressed_bytes) AS uncompressed, count() AS parts
    FROM system.parts WHERE active AND database = currentDatabase() AND table = 'events'`)
  return { rows: Number(r.rows), bytes: Number(r.bytes), uncompressed: Number(r.uncompressed), parts: Number(r.parts) }
}

async function columnBytes (ch: ClickHouse): Promise<Map<string, { type: string, bytes: number }>> {
  const rows = await ch.query<{ name: string, type: string, bytes: number }>(`SELECT name, type, data_compressed_bytes AS bytes
    FROM system.columns WHERE database = currentDatabase() AND table = 'events'`)
  const indexes = await ch.query<{ name: string, type: string, bytes: number }>(`SELECT name, type, data_compressed_bytes AS bytes
    FROM system.data_skipping_indices WHERE database = currentDatabase() AND table = 'events'`)
  return new Map([...rows, ...indexes.map((i) => ({ ...i, name: `index ${i.name}` }))].map((r) => [r.name, { type: r.type, bytes: Number(r.bytes) }]))
}

/** The first page's SQL of /events for q, as events-query.ts builds its last window (the whole range). */
function pageSql (orgId: string, q: string, indexes: boolean): string {
  const where = filterToSql(parseFilter(q), undefined, { indexes })
  return `SELECT ts, seq, message FROM events WHERE org_id = '${orgId}' AND stream = '${stream}' AND ts >= ${startMs} AND ts < ${endMs}
    AND ${where.text} ORDER BY ts DESC, seq DESC LIMIT 101 SETTINGS max_threads = 1`
}

async function timeSql (ch: ClickHouse, text: string): Promise<{ p50: number, p95: number, rows: number }> {
  const times: number[] = []
  let rows = 0
  for (let i = 0; i < Math.min(runs, 10) + 2; i++) {
    const t = performance.now()
    rows = (await ch.query(text)).length
    if (i >= 2) times.push(performance.now() - t)
  }
  return { p50: quantile(times, 0.5), p95: quantile(times, 0.95), rows }
}

async function main (): Promise<void> {
  mkdirSync(dir, { recursive: true })
  const url = `chdb:${join(dir, 'chdb')}`
  const dataDir = join(dir, 'sluice')
  const config = loadConfig({
    env: { CLICKHOUSE_URL: url, CLICKHOUSE_DATABASE: 'find_after', SLUICE_DATA_DIR: dataDir, SLUICE_LOG_LEVEL: 'warn', SLUICE_PORT: '0' },
  })
  const started = performance.now()
  const app: App = await createApp(config, log)
  const address = await app.listen()
  const base = `http://127.0.0.1:${address.port}`
  progress(`Sluice on ${url} started in ${((performance.now() - started) / 1000).toFixed(1)} s`)
  const admin = readFileSync(join(dataDir, 'admin-token'), 'utf8').trim()
  const api = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
    const res = await fetch(base + path, { method, headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) })
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`)
    return await res.json() as T
  }
  const { streams } = await api<{ streams: Array<{ name: string }> }>('GET', '/api/streams')
  if (!streams.some((s) => s.name === stream)) await api('POST', '/api/streams', { name: stream, retention_days: 3650 })
  const after = app.clickhouse
  const [{ org }] = await after.query<{ org: string }>('SELECT id AS org FROM orgs FINAL LIMIT 1')
  const before = createClickHouse({ url, user: 'default', password: '', database: 'find_before', requestTimeoutMs: 3_600_000 })
  await migrate(before, log, undefined, { portable: true })
  const [{ version }] = await after.query<{ version: string }>('SELECT version() AS version')

  for (const [name, ch] of [['before', before], ['after', after]] as const) {
    const size = await sizeOf(ch)
    if (size.rows > 0) continue
    progress(`loading ${name}`)
    const s = await load(ch, org)
    progress(`${name}: loaded in ${s.toFixed(0)} s; OPTIMIZE FINAL`)
    const t = performance.now()
    await ch.command('OPTIMIZE TABLE events FINAL')
    progress(`${name}: optimized in ${((performance.now() - t) / 1000).toFixed(0)} s`)
  }
  // Wait for background mutations (none expected on a fresh "after": its table was empty when reconciled).
  const sizes = { before: await sizeOf(before), after: await sizeOf(after) }
  console.log(`# schema bench: ClickHouse ${version} (chdb), Node ${process.version}, ${cpus().length} x ${cpus()[0]?.model ?? 'cpu'}, ${new Date().toISOString()}`)
  console.log('\n## Bytes on disk (`events`, after OPTIMIZE FINAL)\n')
  console.log('| schema | rows | parts | bytes on disk | bytes/event | uncompressed bytes/event |')
  console.log('|---|---:|---:|---:|---:|---:|')
  for (const [name, s] of Object.entries(sizes)) {
    console.log(`| ${name} | ${fmt(s.rows)} | ${s.parts} | ${fmt(s.bytes)} | **${(s.bytes / s.rows).toFixed(1)}** | ${(s.uncompressed / s.rows).toFixed(1)} |`)
  }
  const colsBefore = await columnBytes(before)
  const colsAfter = await columnBytes(after)
  console.log('\n| column | before: type, bytes/event | after: type, bytes/event |')
  console.log('|---|---|---|')
  for (const [name, a] of [...colsAfter].sort((x, y) => y[1].bytes - x[1].bytes)) {
    const b = colsBefore.get(name)
    console.log(`| ${name} | ${b ? `${b.type}, ${(b.bytes / sizes.before.rows).toFixed(2)}` : '-'} | ${a.type}, ${(a.bytes / sizes.after.rows).toFixed(2)} |`)
  }

  const range = `from=${startMs}&to=${endMs}`
  const q = (text: string): string => `q=${encodeURIComponent(text)}`
  const scenarios = [
    { key: 'c', name: `rare phrase \`"${needlePhrase.text}"\`, first page`, target: 100, q: `"${needlePhrase.text}"`, path: `/api/streams/${stream}/events?${range}&${q(`"${needlePhrase.text}"`)}` },
    { key: 'a', name: `rare attribute \`user_id:${needleUser.id}\`, first page`, target: 500, q: `user_id:${needleUser.id}`, path: `/api/streams/${stream}/events?${range}&${q(`user_id:${needleUser.id}`)}` },
    { key: 'w', name: 'one word `unreachable` (no whole word inside: no index), first page', target: NaN, q: 'unreachable', path: `/api/streams/${stream}/events?${range}&${q('unreachable')}` },
    { key: 'b', name: '`service:checkout level:error`, first page', target: 100, q: '', path: `/api/streams/${stream}/events?${range}&${q('service:checkout level:error')}` },
    { key: 'e1', name: 'stats?by=region over 24 h', target: 1000, q: '', path: `/api/streams/${stream}/stats?${range}&by=region` },
    { key: 'e3', name: 'stats?by=user_id over 24 h', target: 1000, q: '', path: `/api/streams/${stream}/stats?${range}&by=user_id` },
    { key: 'e4', name: 'stats?by=service over 24 h', target: 1000, q: '', path: `/api/streams/${stream}/stats?${range}&by=service` },
  ]
  console.log(`\n## Reads over 24 h of ${fmt(sizes.after.rows)} events: "after" through the HTTP API (${runs} runs after 2 warm-ups; reads over 2 s: 5 runs)`)
  console.log('SQL columns: the first page\'s statement over the whole range (events-query.ts\'s last window), max_threads=1, 10 runs, on each database.\n')
  console.log('| | read | HTTP status | HTTP p50 ms | HTTP p95 ms | target p95 | SQL before p50 / p95 ms | SQL after p50 / p95 ms | rows |')
  console.log('|---|---|---|---:|---:|---|---|---|---:|')
  for (const s of scenarios) {
    const times: number[] = []
    let status = 0
    const first = performance.now()
    let res = await fetch(base + s.path, { headers: { authorization: `Bearer ${admin}` } })
    await res.text()
    const n = performance.now() - first > 2000 ? 5 : runs
    for (let i = 0; i < n + 1; i++) {
      const t = performance.now()
      res = await fetch(base + s.path, { headers: { authorization: `Bearer ${admin}` } })
      await res.text()
      status = res.status
      if (i >= 1) times.push(performance.now() - t)
    }
    let sqlCols = '- | -'
    let rows = '-'
    if (s.q !== '') {
      const b = await timeSql(before, pageSql(org, s.q, false))
      const a = await timeSql(after, pageSql(org, s.q, true))
      sqlCols = `${b.p50.toFixed(0)} / ${b.p95.toFixed(0)} | ${a.p50.toFixed(0)} / ${a.p95.toFixed(0)}`
      rows = b.rows === a.rows ? String(a.rows) : `${b.rows} vs ${a.rows} (differ!)`
    }
    const p95 = quantile(times, 0.95)
    const verdict = Number.isFinite(s.target) ? `${s.target} ${p95 <= s.target ? 'met' : '**missed**'}` : '-'
    console.log(`| ${s.key} | ${s.name} | ${status} | ${quantile(times, 0.5).toFixed(1)} | **${p95.toFixed(1)}** | ${verdict} | ${sqlCols} | ${rows} |`)
    progress(`${s.key}: p95 ${p95.toFixed(1)} ms (${status})`)
  }
  await app.close()
  await before.close()
  if (!args.keep) rmSync(dir, { recursive: true, force: true })
}

main().catch((err: unknown) => {
  console.error(err)
  process.exit(1)
})
