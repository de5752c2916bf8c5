// Finer granules for the rare reads on 26.x (issue 25's 100 ms phrase): the find set's `events`
// copied into a table that differs only in `index_granularity` (the bloom filter of `search_text`
// scaled with it, so the index keeps its bytes), then the first page of the rare reads through the
// events API's own statement (queryEventsJson, one statement over the range as on 26.x) on both,
// alternating; and, with `--text`, the rare phrase's statement on the copy with 26.x's inverted
// `text` index over the same expression instead of the bloom filter, as the whole page, its keys
// only (`SELECT ts, seq`) and a `count()` of the filter alone.
//
//   node bench/schema-granularity.bench.ts --dir DIR [--granularity 1024] [--runs 8] [--text]
//
// DIR: the database schema.bench.ts kept (`--keep`), 26.x (chdb) only. The copy
// (`events_g<granularity>`) stays there for a second run.
import { parseArgs } from 'node:util'
import { join, resolve } from 'node:path'
import { createClickHouse } from '../lib/storage/clickhouse.ts'
import type { ClickHouse } from '../lib/storage/clickhouse.ts'
import { queryEventsJson } from '../lib/query/events-query.ts'
import { parseFilter } from '../lib/query/filter-parser.ts'
import { detectFold, filterToSql } from '../lib/query/filter-sql.ts'
import { searchTextExpression } from '../lib/storage/event-schema.ts'
import { quantile } from './load-driver.ts'
import { endMs, needlePhrase, needleUser, startMs, stream } from './find-dataset.ts'

const { values: args } = parseArgs({
  options: { dir: { type: 'string' }, granularity: { type: 'string', default: '1024' }, runs: { type: 'string', default: '8' }, text: { type: 'boolean', default: false } },
})
if (!args.dir) throw new Error('usage: --dir DIR')
const granularity = Number(args.granularity)
const runs = Number(args.runs)
const copy = `events_g${granularity}`
const ch = createClickHouse({ url: `chdb:${join(resolve(args.dir), 'chdb')}`, database: 'find_after', user: 'default', password: '', requestTimeoutMs: 3_600_000 })

const [{ made }] = await ch.query<{ made: number }>(`SELECT count() AS made FROM system.tables WHERE database = currentDatabase() AND name = '${copy}'`)
if (Number(made) === 0) {
  const [{ ddl }] = await ch.query<{ ddl: string }>("SELECT create_table_query AS ddl FROM system.tables WHERE database = currentDatabase() AND name = 'events'")
  // Without the text indexes schema-text-index.bench.ts may have added; the bloom filter per granule scaled.
  const statement = ddl.replace(/CREATE TABLE find_after\.events\b/, `CREATE TABLE find_after.${copy}`)
    .replace(/, INDEX (search|attr)_inverted .*? GRANULARITY 100000000/g, '')
    .replace(/tokenbf_v1\(32768, 3, 0\)/, `tokenbf_v1(${32768 * granularity / 8192}, 3, 0)`)
    .replace(/index_granularity = 8192/, `index_granularity = ${granularity}`)
  await ch.command(statement)
  const t = performance.now()
  await ch.command(`INSERT INTO ${copy} SELECT * FROM events`)
  await ch.command(`OPTIMIZE TABLE ${copy} FINAL`)
  process.stderr.write(`${copy} copied in ${((performance.now() - t) / 1000).toFixed(0)} s\n`)
}

const sizes = await ch.query<{ table: string, bytes: number, rows: number }>(`SELECT table, sum(bytes_on_disk) AS bytes, sum(rows) AS rows
  FROM system.parts WHERE active AND database = currentDatabase() AND table IN ('events', '${copy}') GROUP BY table`)
const indexBytes = await ch.query<{ table: string, name: string, bytes: number }>(`SELECT table, name, data_compressed_bytes AS bytes
  FROM system.data_skipping_indices WHERE database = currentDatabase() AND table IN ('events', '${copy}')`)
console.log('| table | index_granularity | bytes/event (text indexes excluded) |\n|---|---:|---:|')
for (const s of sizes) {
  const text = indexBytes.filter((i) => i.table === s.table && i.name.endsWith('_inverted')).reduce((n, i) => n + Number(i.bytes), 0)
  console.log(`| ${s.table} | ${s.table === 'events' ? 8192 : granularity} | ${((Number(s.bytes) - text) / Number(s.rows)).toFixed(2)} |`)
}

const [{ org }] = await ch.query<{ org: string }>('SELECT id AS org FROM orgs FINAL LIMIT 1')
const fold = await detectFold(ch)
const settings = (ignore: string): string => ` SETTINGS ignore_data_skipping_indices = '${ignore}', max_threads = 1`
const bloomOnly = 'search_inverted,attr_inverted'

/** The gateway with every statement's `events` read from `table`, and the settings added. */
function on (table: string, ignore: string): ClickHouse {
  return { ...ch, query: (s: unknown, o?: object) => ch.query(`${String(s).replace(/FROM events\b/g, `FROM ${table}`)}${settings(ignore)}`, o) } as ClickHouse
}

async function timed (fn: () => Promise<unknown>): Promise<number[]> {
  await fn()
  const times: number[] = []
  for (let i = 0; i < runs; i++) {
    const t = performance.now()
    await fn()
    times.push(performance.now() - t)
  }
  return times
}

const page = (q: string) => ({ orgId: org, stream, from: startMs, to: endMs, limit: 100, filter: filterToSql(parseFilter(q), undefined, { indexes: true, fold }), windowed: false })
console.log('\n| q | table | first page p50 ms | p95 ms |\n|---|---|---:|---:|')
for (const q of [`"${needlePhrase.text}"`, `user_id:${needleUser.id}`, 'service:checkout level:error']) {
  const results = new Map<string, number[]>()
  for (let round = 0; round < 2; round++) {
    for (const table of ['events', copy]) {
      results.set(table, [...(results.get(table) ?? []), ...await timed(() => queryEventsJson(on(table, bloomOnly), page(q)))])
    }
  }
  for (const [table, times] of results) console.log(`| \`${q}\` | ${table} | ${quantile(times, 0.5).toFixed(0)} | ${quantile(times, 0.95).toFixed(0)} |`)
}

if (args.text) {
  const have = indexBytes.some((i) => i.table === copy && i.name === 'search_inverted')
  if (!have) {
    await ch.command(`ALTER TABLE ${copy} ADD INDEX search_inverted ${searchTextExpression} TYPE text(tokenizer = 'splitByNonAlpha')`)
    await ch.command(`ALTER TABLE ${copy} MATERIALIZE INDEX search_inverted SETTINGS mutations_sync = 2`)
  }
  const [{ bytes }] = await ch.query<{ bytes: number }>(`SELECT data_compressed_bytes AS bytes FROM system.data_skipping_indices
    WHERE database = currentDatabase() AND table = '${copy}' AND name = 'search_inverted'`)
  const rows = Number(sizes.find((s) => s.table === copy)?.rows ?? 1)
  let statement = ''
  const capture = { ...ch, query: (s: unknown, o?: object) => { statement = String(s); return ch.query(statement, o) } } as ClickHouse
  await queryEventsJson(capture, page(`"${needlePhrase.text}"`))
  const from = statement.slice(statement.indexOf('FROM events')).replace(/FROM events\b/, `FROM ${copy}`)
  const variants = { page: statement.replace(/FROM events\b/, `FROM ${copy}`), keys: `SELECT ts, seq ${from}`, count: `SELECT count() ${from.replace(/ORDER BY[\s\S]*$/, '')}` }
  console.log(`\n| \`"${needlePhrase.text}"\` on ${copy}, statement | tokenbf_v1 p50 / p95 ms | text (${(Number(bytes) / rows).toFixed(2)} bytes/event) p50 / p95 ms |\n|---|---|---|`)
  for (const [name, text] of Object.entries(variants)) {
    const bloom = await timed(() => ch.query(text + settings(bloomOnly)))
    const inverted = await timed(() => ch.query(text + settings('search_text,attr_pairs,attr_inverted')))
    console.log(`| ${name} | ${quantile(bloom, 0.5).toFixed(0)} / ${quantile(bloom, 0.95).toFixed(0)} | ${quantile(inverted, 0.5).toFixed(0)} / ${quantile(inverted, 0.95).toFixed(0)} |`)
  }
}
await ch.close()
