// Bytes per event of `events` on ClickHouse 26.x (the embedded engine) with the portable schema
// and with the version-aware one (docs/schema-versions.md), on the query benchmarks' data set
// (query-dataset.ts: access logs of a busy web service, 24 h), where 18.16 stores 42.7 bytes per
// event (issue 25). The find data set's sizes are in schema.bench.ts.
//
//   node bench/schema-bytes.bench.ts --dir DIR [--rows 30000000] [--batch-rows 500000]
//
// The rows are generated once into the portable database and copied into the version-aware one
// (INSERT ... SELECT), then both are merged to one part per day (OPTIMIZE FINAL). DIR is removed.
import { parseArgs } from 'node:util'
import { rmSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { createLogger } from '../lib/logger.ts'
import { createClickHouse } from '../lib/storage/clickhouse.ts'
import type { ClickHouse } from '../lib/storage/clickhouse.ts'
import { migrate } from '../lib/storage/migrate.ts'
import { loadEvents } from './query-dataset.ts'

const { values: args } = parseArgs({
  options: { dir: { type: 'string' }, rows: { type: 'string', default: '30000000' }, 'batch-rows': { type: 'string', default: '500000' } },
})
if (!args.dir) throw new Error('usage: node bench/schema-bytes.bench.ts --dir DIR [--rows N]')
const dir = resolve(args.dir)
const rows = Number(args.rows)
const log = createLogger({ level: 'warn' })
const url = `chdb:${join(dir, 'chdb')}`
const open = (database: string): ClickHouse => createClickHouse({ url, database, user: 'default', password: '', requestTimeoutMs: 3_600_000 })

async function size (ch: ClickHouse): Promise<string> {
  const [r] = await ch.query<Record<string, number>>(`SELECT sum(rows) AS n, sum(bytes_on_disk) AS b, sum(data_uncompressed_bytes) AS u, count() AS parts
    FROM system.parts WHERE active AND database = currentDatabase() AND table = 'events'`)
  return `| ${ch.database} | ${Number(r.n).toLocaleString('en-US')} | ${r.parts} | ${Number(r.b).toLocaleString('en-US')} | **${(r.b / r.n).toFixed(1)}** | ${(r.u / r.n).toFixed(1)} |`
}

const before = open('web_before')
const after = open('web_after')
await migrate(before, log, undefined, { portable: true })
const { features } = await migrate(after, log)
const t0 = performance.now()
await loadEvents(before, rows, Number(args['batch-rows']))
process.stderr.write(`generated and loaded ${rows} rows in ${((performance.now() - t0) / 1000).toFixed(0)} s\n`)
await after.command('INSERT INTO web_after.events SELECT * FROM web_before.events SETTINGS max_insert_block_size = 1048576, min_insert_block_size_rows = 1048576')
for (const ch of [before, after]) await ch.command('OPTIMIZE TABLE events FINAL')
console.log(`# query data set, ${rows.toLocaleString('en-US')} events, ClickHouse ${features.version} (chdb), ${new Date().toISOString()}\n`)
console.log('| database | rows | parts | bytes on disk | bytes/event | uncompressed bytes/event |')
console.log('|---|---:|---:|---:|---:|---:|')
console.log(await size(before))
console.log(await size(after))
const cols = await after.query<{ name: string, type: string, a: number, b: number }>(`SELECT a.name AS name, a.type AS type, a.data_compressed_bytes AS a, b.data_compressed_bytes AS b
  FROM system.columns AS a JOIN system.columns AS b ON a.name = b.name
  WHERE a.database = 'web_after' AND a.table = 'events' AND b.database = 'web_before' AND b.table = 'events' ORDER BY a DESC`)
console.log('\n| column | before bytes/event | after: type, bytes/event |\n|---|---:|---|')
for (const c of cols) console.log(`| ${c.name} | ${(c.b / rows).toFixed(2)} | ${c.type}, ${(c.a / rows).toFixed(2)} |`)
const indexes = await after.query<{ name: string, b: number }>("SELECT name, data_compressed_bytes AS b FROM system.data_skipping_indices WHERE database = 'web_after' AND table = 'events'")
for (const i of indexes) console.log(`| index ${i.name} | - | ${(i.b / rows).toFixed(2)} |`)
await before.close()
await after.close()
rmSync(dir, { recursive: true, force: true })
