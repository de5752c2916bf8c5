// The word and phrase index of the version-aware schema, measured: tokenbf_v1 (event-schema.ts
// search_text) and bloom_filter (attr_pairs) against ClickHouse's full-text `text` index over the
// same expressions (tokenizers splitByNonAlpha and array), on the
// database schema.bench.ts kept (`--keep`), 26.x only. Adds the text index (and materializes it),
// then times the first page of the rare phrase through the events API's own code
// (queryEventsJson: one statement over the range as on servers with skip indexes, PREWHERE, the
// pre-filter) with one index or the other in use.
//
//   node bench/schema-text-index.bench.ts --dir DIR [--runs 20]
import { parseArgs } from 'node:util'
import { join, resolve } from 'node:path'
import { createClickHouse } from '../lib/storage/clickhouse.ts'
import { queryEventsJson } from '../lib/query/events-query.ts'
import { parseFilter } from '../lib/query/filter-parser.ts'
import { detectFold, filterToSql } from '../lib/query/filter-sql.ts'
import { attrPairsExpression, searchTextExpression } from '../lib/storage/event-schema.ts'
import { quantile } from './load-driver.ts'
import { endMs, needlePhrase, needleUser, startMs, stream } from './find-dataset.ts'

const { values: args } = parseArgs({ options: { dir: { type: 'string' }, runs: { type: 'string', default: '20' } } })
if (!args.dir) throw new Error('usage: --dir DIR')
const runs = Number(args.runs)
const url = `chdb:${join(resolve(args.dir), 'chdb')}`
const ch = createClickHouse({ url, database: 'find_after', user: 'default', password: '', requestTimeoutMs: 3_600_000 })
const [{ org }] = await ch.query<{ org: string }>('SELECT id AS org FROM orgs FINAL LIMIT 1')
const have = await ch.query<{ name: string }>("SELECT name FROM system.data_skipping_indices WHERE database = currentDatabase() AND table = 'events'")
for (const [name, expression, tokenizer] of [['search_inverted', searchTextExpression, 'splitByNonAlpha'], ['attr_inverted', attrPairsExpression, 'array']]) {
  if (have.some((i) => i.name === name)) continue
  const t = performance.now()
  await ch.command(`ALTER TABLE events ADD INDEX ${name} ${expression} TYPE text(tokenizer = '${tokenizer}')`)
  await ch.command(`ALTER TABLE events MATERIALIZE INDEX ${name} SETTINGS mutations_sync = 2`)
  process.stderr.write(`text index ${name} added and materialized in ${((performance.now() - t) / 1000).toFixed(0)} s\n`)
}
const sizes = await ch.query<{ name: string, type: string, b: number }>(`SELECT name, type, data_compressed_bytes AS b FROM system.data_skipping_indices
  WHERE database = currentDatabase() AND table = 'events'`)
const [{ n }] = await ch.query<{ n: number }>('SELECT count() AS n FROM events')
const fold = await detectFold(ch)
console.log(`| index | type | bytes/event |\n|---|---|---:|\n${sizes.map((s) => `| ${s.name} | ${s.type} | ${(s.b / n).toFixed(2)} |`).join('\n')}\n`)
console.log('| q | index in use | first page p50 ms | p95 ms | events |\n|---|---|---:|---:|---:|')
for (const q of [`"${needlePhrase.text}"`, 'issuer', `user_id:${needleUser.id}`]) {
  const bloom = q.startsWith('user_id') ? ['bloom_filter (attr_pairs)', 'attr_inverted,search_inverted,search_text'] : ['tokenbf_v1 (search_text)', 'search_inverted,attr_inverted,attr_pairs']
  const text = q.startsWith('user_id') ? ['text (attr_inverted)', 'attr_pairs,search_inverted,search_text'] : ['text (search_inverted)', 'search_text,attr_inverted,attr_pairs']
  for (const [label, ignore] of [bloom, text, ['none', 'search_text,search_inverted,attr_pairs,attr_inverted']]) {
    // The ignore list goes in as a setting of every statement of the read (a SETTINGS clause on chdb).
    const reader = createClickHouse({ url, database: 'find_after', user: 'default', password: '', requestTimeoutMs: 600_000 })
    const wrapped = { ...reader, query: (s: unknown, o?: object) => reader.query(`${String(s)} SETTINGS ignore_data_skipping_indices = '${ignore}', max_threads = 1`, o) } as typeof reader
    // One statement over the range, as the events API runs a page on servers with skip indexes (windowed: false).
    const params = { orgId: org, stream, from: startMs, to: endMs, limit: 100, filter: filterToSql(parseFilter(q), undefined, { indexes: true, fold }), windowed: false }
    const times: number[] = []
    let events = 0
    for (let i = 0; i < (label === 'none' ? 3 : runs) + 2; i++) {
      const t = performance.now()
      const body = await queryEventsJson(wrapped, params)
      if (i >= 2) times.push(performance.now() - t)
      events = (JSON.parse(Buffer.from(body).toString()) as { events: unknown[] }).events.length
    }
    console.log(`| \`${q}\` | ${label} | ${quantile(times, 0.5).toFixed(1)} | **${quantile(times, 0.95).toFixed(1)}** | ${events} |`)
    await reader.close()
  }
}
await ch.close()
