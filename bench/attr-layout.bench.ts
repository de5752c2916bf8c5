// How attributes are stored (issue 22, "choose the layout by measurement"): the find data set's
// events (find-dataset.ts: access and application logs, about ten attributes each, numbers and
// nested objects among them) copied into one table per candidate layout, the same rows and every
// other column alike, then measured on the server at hand:
// - ingest: ClickHouse CPU per 1 M events to insert them in the format Sluice sends (RowBinary to a
//   server, JSONEachRow to the embedded engine), in `--batch-rows` inserts with the layouts taking
//   turns batch by batch, and to merge them afterwards (OPTIMIZE FINAL);
// - bytes on disk per event of the attribute columns (after the merge), and of the whole row;
// - reads, one thread as Sluice's reads run (read-limits.ts): a rare value, a common one, a nested
//   path, a numeric comparison, the presence of a key, and group-bys of a low- and a
//   high-cardinality attribute, each statement in the layout's best form.
//
//   CLICKHOUSE_URL=http://127.0.0.1:8123 node bench/attr-layout.bench.ts [--rows 3000000] [--runs 5]
//     [--batch-rows 100000] [--database attr_layout] [--keep]
//   CLICKHOUSE_URL=chdb:DIR node bench/attr-layout.bench.ts ...   (26.x: Map and JSON layouts too)
//
// The source rows are generated into `<database>.events` (migrated) unless it already holds
// `--rows` of them (`--keep` leaves the database for the next run). The layout tables have no
// skip index on their attributes (the version-aware schema's are measured in bench/README.md,
// "Version-aware schema"). Results: bench/README.md, "Attribute layout".
import { parseArgs } from 'node:util'
import { randomUUID } from 'node:crypto'
import { createLogger } from '../lib/logger.ts'
import { createClickHouse } from '../lib/storage/clickhouse.ts'
import { migrate } from '../lib/storage/migrate.ts'
import { quoteIdentifier, quoteString } from '../lib/storage/sql.ts'
import { quantile } from './load-driver.ts'
import { loadFindEvents, needleUser } from './find-dataset.ts'

const { values: args } = parseArgs({
  options: {
    rows: { type: 'string', default: '3000000' },
    runs: { type: 'string', default: '5' },
    'batch-rows': { type: 'string', default: '100000' },
    database: { type: 'string', default: 'attr_layout' },
    keep: { type: 'boolean', default: false },
    only: { type: 'string' },
  },
})
const rows = Number(args.rows)
const runs = Number(args.runs)
const batchRows = Number(args['batch-rows'])
const url = process.env.CLICKHOUSE_URL ?? 'http://127.0.0.1:8123'
const embedded = url.startsWith('chdb:')
const user = process.env.CLICKHOUSE_USER ?? 'default'
const password = process.env.CLICKHOUSE_PASSWORD ?? ''
const ch = createClickHouse({ url, database: args.database, user, password, requestTimeoutMs: 3_600_000 })
const progress = (text: string): void => { process.stderr.write(`[attr-layout] ${new Date().toISOString().slice(11, 19)} ${text}\n`) }

/** A storage layout of attributes: its columns, how they are filled from `events`, and how a read addresses a path. */
interface Layout {
  name: string
  /** Column definitions added to the copy of `events` (whose attrs, attr_keys, attr_values are dropped). */
  columns: string[]
  /** One SELECT expression of `events` per column, in order. */
  fill: string[]
  /** Nullable(String): the path's value text, NULL when absent. */
  value: (path: string) => string
  /** A filter: the path's value text is `v`, in the layout's cheapest form. */
  equals: (path: string, v: string) => string
  /** Nullable(Float64): the path's value as a number. */
  number: (path: string) => string
  /** UInt8: the event has the path. */
  has: (path: string) => string
  /** Array(String): every path of the event (what /fields counts), or null when the layout cannot list them. */
  keys: string | null
  /** Only on ClickHouse 26.x. */
  current?: boolean
}

const idx = (keys: string, path: string): string => `indexOf(${keys}, ${quoteString(path)})`
const arrayValue = (keys: string, values: string) => (path: string): string =>
  `if(${idx(keys, path)} > 0, ${values}[${idx(keys, path)}], NULL)`

/** The attrs text read by the JSON functions 18.16 has (visitParam*), as Sluice reads rows from before migration 11. */
function visitRaw (path: string): string {
  let raw = 'attrs'
  for (const segment of path.split('.')) raw = `visitParamExtractRaw(${raw}, ${quoteString(segment)})`
  return raw
}
const visitValue = (path: string): string => {
  const raw = visitRaw(path)
  return `multiIf(${raw} = '', NULL, startsWith(${raw}, '"'), visitParamExtractString(concat('{"v":', ${raw}, '}'), 'v'), ${raw})`
}
/** The attrs text read by 26.x's JSON functions. */
const jsonArgs = (path: string): string => path.split('.').map(quoteString).join(', ')
const jsonValue = (path: string): string =>
  `multiIf(NOT JSONHas(attrs, ${jsonArgs(path)}), NULL, JSONType(attrs, ${jsonArgs(path)}) = 'String', JSONExtractString(attrs, ${jsonArgs(path)}), JSONExtractRaw(attrs, ${jsonArgs(path)}))`

/** The reads of a layout with parallel key and value arrays. */
function arrayReads (keys: string, values: string): Pick<Layout, 'value' | 'equals' | 'number' | 'has' | 'keys'> {
  return {
    value: arrayValue(keys, values),
    equals: (p, v) => `has(${values}, ${quoteString(v)}) AND ${values}[${idx(keys, p)}] = ${quoteString(v)}`,
    number: (p) => `toFloat64OrNull(${arrayValue(keys, values)(p)})`,
    has: (p) => `${idx(keys, p)} > 0`,
    keys,
  }
}

/** A path of the JSON-type column `attr_json` (26.x): `attr_json.\`order\`.\`total\``. */
const jsonPath = (path: string): string => ['attr_json', ...path.split('.').map(quoteIdentifier)].join('.')

const pairsOf = 'arrayMap((k, v) -> concat(k, \'=\', v), attr_keys, attr_values)'
const isNumber = 'isNotNull(toFloat64OrNull(v))'

const candidates: Layout[] = [
  {
    name: 'json',
    columns: ['attrs String'],
    fill: ['attrs'],
    value: embedded ? jsonValue : visitValue,
    // A substring test first: most rows do not hold the value at all.
    equals: (p, v) => `position(attrs, ${quoteString(v)}) > 0 AND ${(embedded ? jsonValue : visitValue)(p)} = ${quoteString(v)}`,
    number: (p) => `toFloat64OrNull(${(embedded ? jsonValue : visitValue)(p)})`,
    has: (p) => embedded ? `JSONHas(attrs, ${jsonArgs(p)})` : `${visitRaw(p)} != ''`,
    // 18.16 has no function that lists a JSON text's keys; 26.x's lists the top level only.
    keys: null,
  },
  {
    name: 'json+arrays (Sluice)',
    columns: ['attrs String', 'attr_keys Array(String)', 'attr_values Array(String)'],
    fill: ['attrs', 'attr_keys', 'attr_values'],
    ...arrayReads('attr_keys', 'attr_values'),
  },
  {
    name: 'arrays, no text',
    columns: ['attr_keys Array(String)', 'attr_values Array(String)'],
    fill: ['attr_keys', 'attr_values'],
    ...arrayReads('attr_keys', 'attr_values'),
  },
  {
    name: 'json+Nested',
    columns: ['attrs String', 'a Nested(k String, v String)'],
    fill: ['attrs', 'attr_keys', 'attr_values'],
    ...arrayReads('a.k', 'a.v'),
  },
  {
    name: 'json+pairs',
    columns: ['attrs String', 'attr_pairs Array(String)'],
    fill: ['attrs', pairsOf],
    value: (p) => `nullIf(substring(arrayFirst(x -> startsWith(x, ${quoteString(p + '=')}), attr_pairs), ${p.length + 2}), '')`,
    equals: (p, v) => `has(attr_pairs, ${quoteString(`${p}=${v}`)})`,
    number: (p) => `toFloat64OrNull(substring(arrayFirst(x -> startsWith(x, ${quoteString(p + '=')}), attr_pairs), ${p.length + 2}))`,
    has: (p) => `arrayExists(x -> startsWith(x, ${quoteString(p + '=')}), attr_pairs)`,
    keys: "arrayMap(x -> substring(x, 1, position(x, '=') - 1), attr_pairs)",
  },
  {
    name: 'json+typed arrays',
    columns: ['attrs String', 's_keys Array(String)', 's_values Array(String)', 'n_keys Array(String)', 'n_values Array(Float64)'],
    fill: ['attrs', `arrayFilter((k, v) -> NOT ${isNumber}, attr_keys, attr_values)`, `arrayFilter(v -> NOT ${isNumber}, attr_values)`,
      `arrayFilter((k, v) -> ${isNumber}, attr_keys, attr_values)`, `arrayMap(v -> toFloat64(v), arrayFilter(v -> ${isNumber}, attr_values))`],
    value: (p) => `multiIf(${idx('s_keys', p)} > 0, s_values[${idx('s_keys', p)}], ${idx('n_keys', p)} > 0, toString(n_values[${idx('n_keys', p)}]), NULL)`,
    equals: (p, v) => Number.isFinite(Number(v))
      ? `has(n_values, ${Number(v)}) AND n_values[${idx('n_keys', p)}] = ${Number(v)} AND ${idx('n_keys', p)} > 0`
      : `has(s_values, ${quoteString(v)}) AND s_values[${idx('s_keys', p)}] = ${quoteString(v)}`,
    number: (p) => `if(${idx('n_keys', p)} > 0, n_values[${idx('n_keys', p)}], NULL)`,
    has: (p) => `${idx('s_keys', p)} > 0 OR ${idx('n_keys', p)} > 0`,
    keys: 'arrayConcat(s_keys, n_keys)',
  },
  {
    name: 'json+Map',
    current: true,
    columns: ['attrs String', 'attr_map Map(LowCardinality(String), String)'],
    fill: ['attrs', 'mapFromArrays(attr_keys, attr_values)'],
    value: (p) => `if(mapContains(attr_map, ${quoteString(p)}), attr_map[${quoteString(p)}], NULL)`,
    equals: (p, v) => `attr_map[${quoteString(p)}] = ${quoteString(v)}`,
    number: (p) => `toFloat64OrNull(attr_map[${quoteString(p)}])`,
    has: (p) => `mapContains(attr_map, ${quoteString(p)})`,
    keys: 'mapKeys(attr_map)',
  },
  {
    name: 'json+JSON type',
    current: true,
    columns: ['attrs String', 'attr_json JSON'],
    fill: ['attrs', 'attrs::JSON'],
    value: (p) => `toString(${jsonPath(p)})`,
    equals: (p, v) => `toString(${jsonPath(p)}) = ${quoteString(v)}`,
    number: (p) => `toFloat64OrNull(toString(${jsonPath(p)}))`,
    has: (p) => `isNotNull(${jsonPath(p)})`,
    keys: 'JSONAllPaths(attr_json)',
  },
]
const layouts = candidates.filter((l) => embedded || l.current !== true)
  .filter((l) => args.only === undefined || args.only.split(',').some((n) => l.name.startsWith(n)))

const tableOf = (l: Layout): string => `l_${l.name.replace(/[^a-z]+/gi, '_').replace(/_$/, '').toLowerCase()}`

// --- the source rows
const log = createLogger({ level: 'warn' })
await ch.ensureDatabase()
await migrate(ch, log)
const version = await ch.version()
const [{ have }] = await ch.query<{ have: number }>('SELECT count() AS have FROM events')
if (Number(have) !== rows) {
  if (Number(have) > 0) await ch.command('TRUNCATE TABLE events')
  progress(`generating ${rows.toLocaleString('en-US')} events`)
  await loadFindEvents(ch, 'bench-org', rows, Math.min(rows, 500_000), progress)
}
const [{ maxSeq }] = await ch.query<{ maxSeq: number }>('SELECT max(seq) AS maxSeq FROM events')

// --- the layout tables: events' other columns, then the layout's
const columnRows = await ch.query<{ name: string, default_kind: string }>(
  "SELECT name, default_kind FROM system.columns WHERE database = currentDatabase() AND table = 'events'")
const common = columnRows.filter((c) => c.default_kind === '' && !['attrs', 'attr_keys', 'attr_values'].includes(c.name)).map((c) => c.name)
const [{ ddl }] = await ch.query<{ ddl: string }>("SELECT create_table_query AS ddl FROM system.tables WHERE database = currentDatabase() AND name = 'events'")
for (const l of layouts) {
  const table = tableOf(l)
  await ch.command(`DROP TABLE IF EXISTS ${table}`)
  // events' own statement, without its skip indexes and TTL (neither is what is compared here).
  const statement = ddl.replace(/CREATE TABLE \S+\.events\b/, `CREATE TABLE ${table}`)
    .replace(/,\s*INDEX \w+ .*? GRANULARITY \d+/g, '')
    .replace(/\sTTL .*?(?=\sSETTINGS|$)/s, '')
  await ch.command(statement)
  await ch.command(`ALTER TABLE ${table} DROP COLUMN attrs, DROP COLUMN attr_keys, DROP COLUMN attr_values`)
  await ch.command(`ALTER TABLE ${table} ${l.columns.map((c) => `ADD COLUMN ${c}`).join(', ')}`)
  if (!embedded) await ch.command(`SYSTEM STOP MERGES ${table}`)
}

// --- ingest
/** CPU seconds (user + system) ClickHouse spent on the statement `queryId` (query_log), or of this process (embedded). */
async function cpuOf (queryId: string): Promise<{ cpu: number, readRows: number, readBytes: number }> {
  // A statement's row can reach the log just after its answer (an OPTIMIZE's did): flush until it is there.
  for (let attempt = 1; ; attempt++) {
    await ch.command('SYSTEM FLUSH LOGS')
    const r = await ch.query<{ u: number, s: number, rr: number, rb: number }>(`SELECT
        ProfileEvents.Values[indexOf(ProfileEvents.Names, 'UserTimeMicroseconds')] AS u,
        ProfileEvents.Values[indexOf(ProfileEvents.Names, 'SystemTimeMicroseconds')] AS s, read_rows AS rr, read_bytes AS rb
      FROM system.query_log WHERE query_id = ${quoteString(queryId)} AND type = 2 LIMIT 1`)
    if (r.length > 0) return { cpu: (Number(r[0].u) + Number(r[0].s)) / 1e6, readRows: Number(r[0].rr), readBytes: Number(r[0].rb) }
    if (attempt === 20) throw new Error(`no query_log row for ${queryId}`)
  }
}

/** Runs `run` as statement `queryId`; its wall ms and ClickHouse CPU s. */
async function measured (run: (queryId: string) => Promise<unknown>): Promise<{ ms: number, cpu: number, readBytes: number }> {
  const queryId = `attr-layout-${randomUUID()}`
  const cpu0 = process.cpuUsage()
  const t0 = performance.now()
  await run(queryId)
  const ms = performance.now() - t0
  if (embedded) {
    const used = process.cpuUsage(cpu0)
    return { ms, cpu: (used.user + used.system) / 1e6, readBytes: NaN }
  }
  const { cpu, readBytes } = await cpuOf(queryId)
  return { ms, cpu, readBytes }
}

/** The body of one batch (seq in [first, last]) in the layout's columns, in the format Sluice sends this engine. */
async function body (l: Layout, first: number, last: number): Promise<Buffer> {
  const format = embedded ? 'JSONEachRow' : 'RowBinary'
  const names = attrNames(l)
  const select = `SELECT ${[...common, ...l.fill.map((f, i) => `${f} AS \`${names[i]}\``)].join(', ')} FROM events WHERE seq BETWEEN ${first} AND ${last} ORDER BY ts`
  if (embedded) {
    const chunks: Uint8Array[] = []
    for await (const chunk of ch.queryChunks(select)) chunks.push(chunk)
    return Buffer.concat(chunks)
  }
  const target = new URL(url)
  target.searchParams.set('database', args.database)
  const response = await fetch(target, { method: 'POST', body: `${select} FORMAT ${format}`, headers: { 'X-ClickHouse-User': user, 'X-ClickHouse-Key': password } })
  if (!response.ok) throw new Error(`${response.status} ${await response.text()}`)
  return Buffer.from(await response.arrayBuffer())
}

/** The layout's columns as an insert names them (a Nested column as its arrays). */
function attrNames (l: Layout): string[] {
  return l.columns.flatMap((c) => c.startsWith('a Nested') ? ['a.k', 'a.v'] : [c.split(' ')[0]])
}
const columnList = (l: Layout): string => [...common, ...attrNames(l)].map((c) => `\`${c}\``).join(', ')
const ingest = new Map(layouts.map((l) => [l.name, { cpu: 0, ms: 0, bytes: 0, mergeCpu: 0, mergeMs: 0 }]))
let batch = 0
for (let first = 1; first <= Number(maxSeq); first += batchRows, batch++) {
  const last = first + batchRows - 1
  // Each batch in every layout, the order turning, so a slow minute of the machine is shared.
  for (let k = 0; k < layouts.length; k++) {
    const l = layouts[(k + batch) % layouts.length]
    const data = await body(l, first, last)
    const format = embedded ? 'JSONEachRow' : 'RowBinary'
    const m = await measured((queryId) => ch.insertRaw(`INSERT INTO ${tableOf(l)} (${columnList(l)}) FORMAT ${format}`, data,
      undefined, embedded ? undefined : { log_queries: '1' }, queryId))
    const sum = ingest.get(l.name)!
    sum.cpu += m.cpu
    sum.ms += m.ms
    sum.bytes += data.length
  }
  if (batch % 5 === 0) progress(`batch ${batch + 1}: seq ${first.toLocaleString('en-US')}`)
}
for (const l of layouts) {
  if (!embedded) await ch.command(`SYSTEM START MERGES ${tableOf(l)}`)
  const m = await measured((queryId) => ch.command(`OPTIMIZE TABLE ${tableOf(l)} FINAL`, { queryId, settings: embedded ? undefined : { log_queries: '1' } }))
  const sum = ingest.get(l.name)!
  sum.mergeCpu = m.cpu
  sum.mergeMs = m.ms
}

// --- bytes
const attrColumns = new Set(layouts.flatMap((l) => l.columns.map((c) => c.split(' ')[0])))
const sizes = await ch.query<{ table: string, name: string, bytes: number }>(`SELECT table, name, sum(data_compressed_bytes) AS bytes
  FROM system.columns WHERE database = currentDatabase() AND table LIKE 'l\\_%' GROUP BY table, name`)
const rowBytes = await ch.query<{ table: string, bytes: number, n: number }>(`SELECT table, sum(bytes_on_disk) AS bytes, sum(rows) AS n
  FROM system.parts WHERE active AND database = currentDatabase() AND table LIKE 'l\\_%' GROUP BY table`)
const isAttrColumn = (name: string): boolean => attrColumns.has(name) || attrColumns.has(name.split('.')[0])

// --- reads
const needle = String(needleUser.id)
const reads: Array<{ key: string, name: string, sql: (l: Layout) => string | null }> = [
  { key: 'r1', name: `rare value \`user_id:${needle}\``, sql: (l) => `SELECT count() FROM ${tableOf(l)} WHERE ${l.equals('user_id', needle)}` },
  { key: 'r2', name: 'common value `region:us-east-1`', sql: (l) => `SELECT count() FROM ${tableOf(l)} WHERE ${l.equals('region', 'us-east-1')}` },
  { key: 'r3', name: 'nested path `order.currency:USD`', sql: (l) => `SELECT count() FROM ${tableOf(l)} WHERE ${l.equals('order.currency', 'USD')}` },
  { key: 'r4', name: 'number `order.total:>400`', sql: (l) => `SELECT count() FROM ${tableOf(l)} WHERE ${l.number('order.total')} > 400` },
  { key: 'r5', name: 'present `order.id:*`', sql: (l) => `SELECT count() FROM ${tableOf(l)} WHERE ${l.has('order.id')}` },
  { key: 'g1', name: 'top 10 of `region`', sql: (l) => `SELECT ${l.value('region')} AS v, count() AS n FROM ${tableOf(l)} GROUP BY v ORDER BY n DESC LIMIT 10` },
  { key: 'g2', name: 'top 10 of `user_id`', sql: (l) => `SELECT ${l.value('user_id')} AS v, count() AS n FROM ${tableOf(l)} GROUP BY v ORDER BY n DESC LIMIT 10` },
  { key: 'k1', name: 'every key, counted (`/fields`)', sql: (l) => l.keys === null ? null : `SELECT k, count() AS n FROM ${tableOf(l)} ARRAY JOIN ${l.keys} AS k GROUP BY k ORDER BY n DESC, k` },
]
const times = new Map<string, { ms: number[], cpu: number[], readBytes: number[], answer: string }>()
for (let run = 0; run <= runs; run++) {
  for (const read of reads) {
    for (let k = 0; k < layouts.length; k++) {
      const l = layouts[(k + run) % layouts.length]
      const statement = read.sql(l)
      if (statement === null) continue
      let answer = ''
      const m = await measured(async (queryId) => {
        const result = await ch.query(statement, { queryId, settings: embedded ? { max_threads: '1' } : { max_threads: '1', log_queries: '1' } })
        answer = JSON.stringify(result)
      })
      const key = `${read.key} ${l.name}`
      const t = times.get(key) ?? { ms: [], cpu: [], readBytes: [], answer }
      if (t.answer !== answer) throw new Error(`${key}: ${answer} against ${t.answer}`)
      // Run 0 warms the caches.
      if (run > 0) {
        t.ms.push(m.ms)
        t.cpu.push(m.cpu)
        t.readBytes.push(m.readBytes)
      }
      times.set(key, t)
    }
  }
  progress(`reads: run ${run} of ${runs}`)
}
// Every layout answers every read alike (the group-bys' ties aside, which ORDER BY n leaves open).
const disagreements = reads.flatMap((read) => {
  const answered = layouts.filter((l) => times.has(`${read.key} ${l.name}`))
  const answers = answered.map((l) => times.get(`${read.key} ${l.name}`)!.answer)
  return answers.every((a) => a === answers[0]) ? [] : [`${read.key}: ${answered.map((l, i) => `${l.name} ${answers[i].slice(0, 120)}`).join('; ')}`]
})

// --- report
const per1M = (x: number): string => (x * 1e6 / rows).toFixed(2)
console.log(`# attribute layouts: ${rows.toLocaleString('en-US')} events of the find data set, ClickHouse ${version}${embedded ? ' (chdb)' : ''}, ${new Date().toISOString()}\n`)
console.log(`| layout | insert CPU-s per 1M events | insert s per 1M | merge (OPTIMIZE FINAL) CPU-s per 1M | attribute columns bytes/event | row bytes/event | ${embedded ? 'JSONEachRow' : 'RowBinary'} bytes/event |`)
console.log('|---|---:|---:|---:|---:|---:|---:|')
for (const l of layouts) {
  const s = ingest.get(l.name)!
  const attr = sizes.filter((c) => c.table === tableOf(l) && isAttrColumn(c.name)).reduce((n, c) => n + Number(c.bytes), 0)
  const whole = rowBytes.find((r) => r.table === tableOf(l))
  console.log(`| ${l.name} | ${per1M(s.cpu)} | ${per1M(s.ms / 1000)} | ${per1M(s.mergeCpu)} | ${(attr / rows).toFixed(2)} | ${whole ? (Number(whole.bytes) / rows).toFixed(1) : '-'} | ${(s.bytes / rows).toFixed(0)} |`)
}
console.log(`\nReads, one thread, p50 ms (ClickHouse CPU ms${embedded ? ', the process' : ''}; MB read), ${runs} runs after one warm-up, layouts alternating:\n`)
console.log(`| read | ${layouts.map((l) => l.name).join(' | ')} |`)
console.log(`|---|${layouts.map(() => '---:').join('|')}|`)
for (const read of reads) {
  const cells = layouts.map((l) => {
    const t = times.get(`${read.key} ${l.name}`)
    if (t === undefined) return '-'
    const mb = quantile(t.readBytes, 0.5) / 1e6
    return `${quantile(t.ms, 0.5).toFixed(0)} (${(quantile(t.cpu, 0.5) * 1000).toFixed(0)}${Number.isFinite(mb) ? `; ${mb.toFixed(0)}` : ''})`
  })
  console.log(`| ${read.key} ${read.name} | ${cells.join(' | ')} |`)
}
for (const d of disagreements) console.log(`\nanswers differ, ${d}`)
if (!args.keep) {
  for (const l of layouts) await ch.command(`DROP TABLE IF EXISTS ${tableOf(l)}`)
  await ch.command(`DROP DATABASE IF EXISTS ${args.database}`)
}
await ch.close()
