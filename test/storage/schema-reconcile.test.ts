// The version-aware schema (docs/schema-versions.md, lib/storage/schema-reconcile.ts):
// - on the test ClickHouse (18.16) Sluice keeps the portable schema and runs no reconcile DDL;
// - in place on 26.x (the embedded engine): a database made with the portable schema gets the
//   codecs, LowCardinality columns and skip indexes at the next start, its data intact, the
//   rollup views still filling, reads by `q` with and without pre-filters the same;
// - upgrade by export: a database made by Sluice on 18.16 (real ingest) exported as JSONEachRow
//   and imported into a 26.x database made by Sluice's migrations, then found by `q`.
import t from 'tap'
import type { Test } from 'tap'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createLogger } from '../../lib/logger.ts'
import { createClickHouse } from '../../lib/storage/clickhouse.ts'
import { chdbEngineDir, chdbInstallCommand } from '../../lib/storage/chdb-engine.ts'
import { waitFor } from '../helpers/wait-for.ts'
import type { ClickHouse } from '../../lib/storage/clickhouse.ts'
import { migrate } from '../../lib/storage/migrate.ts'
import { serverFeatures } from '../../lib/storage/server-features.ts'
import { plannedStatements } from '../../lib/storage/schema-reconcile.ts'
import { eventColumnSpecs, eventIndexes } from '../../lib/storage/event-schema.ts'
import { parseFilter } from '../../lib/query/filter-parser.ts'
import { filterToSql } from '../../lib/query/filter-sql.ts'
import { clickhouseUrl, createTestDatabase, onChdb } from '../helpers/clickhouse.ts'
import { startServer } from '../helpers/server.ts'
import { createIngestTarget, postIngest } from '../helpers/ingest.ts'

const log = createLogger({ level: 'silent', fd: 2 })

/**
 * On an 18.16 run the 26.x tests need the embedded engine installed (CI installs it; a plain
 * `npm test` on a fresh machine does not, and `npm run test:chdb` does).
 */
const noEngine = !onChdb && !existsSync(join(chdbEngineDir, 'node_modules', 'chdb', 'package.json')) &&
  `the embedded engine is not installed (${chdbInstallCommand})`

/** The embedded engine for this file: chdb holds one data directory per process. */
let chdbUrl: string | undefined
function embeddedUrl (): string {
  if (onChdb) return clickhouseUrl()
  if (chdbUrl === undefined) {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-reconcile-'))
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }))
    chdbUrl = `chdb:${dir}`
  }
  return chdbUrl
}

function openEmbedded (t: Test, database: string): ClickHouse {
  const ch = createClickHouse({ url: embeddedUrl(), database, user: 'default', password: '', requestTimeoutMs: 60_000 })
  t.teardown(async () => {
    await ch.command(`DROP DATABASE IF EXISTS \`${database}\``)
    await ch.close()
  })
  return ch
}

async function columnTypes (ch: ClickHouse): Promise<Record<string, string>> {
  const rows = await ch.query<{ name: string, type: string }>(`SELECT name, type FROM system.columns
    WHERE database = currentDatabase() AND table = 'events'`)
  return Object.fromEntries(rows.map((r) => [r.name, r.type]))
}

async function mutationsDone (ch: ClickHouse): Promise<void> {
  await waitFor(async () => Number((await ch.query<{ n: number }>('SELECT count() AS n FROM system.mutations WHERE database = currentDatabase() AND is_done = 0'))[0].n) === 0,
    { what: 'the mutations done', timeoutMs: 60_000, intervalMs: 100 })
}

const eventColumns = 'org_id, stream, ts, received_at, host, path, method, status, message, level, service, attrs, attr_keys, attr_values, seq, size'
function eventValues (i: number, received: number): string {
  const phrase = i === 7 ? 'payment failed: card issuer unreachable, order 7' : `request ${i} done`
  return `('o1', 'app', ${1_700_000_000_000 + i * 1000}, ${received}, 'web-${i % 3}', '/p/${i}', 'GET', ${i % 2 === 0 ? 200 : 500}, ` +
    `'${phrase}', '${i % 2 === 0 ? 'info' : 'error'}', 'checkout', '{"user_id":${i}}', ['user_id'], ['${i}'], ${i + 1}, 100)`
}

t.test('on 18.16 the schema stays portable: no reconcile DDL, types unchanged', { skip: onChdb && 'the run is on the embedded engine' }, async (t) => {
  const db = await createTestDatabase(t)
  const version = await db.clickhouse.version()
  const { features } = await migrate(db.clickhouse, log)
  t.equal(features.has('codecs'), serverFeatures(version).has('codecs'))
  if (serverFeatures(version).has('codecs')) return t.comment(`test ClickHouse is ${version}, not 18.16: nothing more to check here`)
  t.strictSame(await plannedStatements(db.clickhouse, features), [])
  const types = await columnTypes(db.clickhouse)
  t.equal(types.host, 'Nullable(String)')
  t.equal(types.attr_keys, 'Array(String)')
  t.strictSame((await migrate(db.clickhouse, log)).applied, [], 'a second start applies nothing')
})

t.test('in place on 26.x: a portable database gets codecs, LowCardinality and indexes at the next start, data intact', { skip: noEngine }, async (t) => {
  const ch = openEmbedded(t, `reconcile_${process.pid}`)
  await migrate(ch, log, undefined, { portable: true })
  t.equal((await columnTypes(ch)).host, 'Nullable(String)', 'portable first')
  const received = Date.now()
  await ch.command(`INSERT INTO events (${eventColumns}) VALUES ${Array.from({ length: 10 }, (_, i) => eventValues(i, received)).join(', ')}`)
  const dump = 'SELECT * FROM events ORDER BY seq'
  const before = JSON.stringify(await ch.query(dump))

  const { applied, features } = await migrate(ch, log)
  t.strictSame(applied, [], 'no migration: the reconcile step does it')
  t.ok(features.has('codecs') && features.has('skipIndexes') && features.has('lightweightDelete'), `features of ${features.version}`)
  await mutationsDone(ch)
  const types = await columnTypes(ch)
  for (const [name, spec] of Object.entries(eventColumnSpecs)) t.equal(types[name], spec.lowCardinalityType ?? spec.type, `${name} type`)
  const [ts] = await ch.query<{ codec: string }>("SELECT compression_codec AS codec FROM system.columns WHERE database = currentDatabase() AND table = 'events' AND name = 'ts'")
  t.equal(ts.codec, eventColumnSpecs.ts.codec)
  const indexes = await ch.query<{ name: string }>("SELECT name FROM system.data_skipping_indices WHERE database = currentDatabase() AND table = 'events' ORDER BY name")
  t.strictSame(indexes.map((i) => i.name), eventIndexes.map((i) => i.name).sort())
  t.equal(JSON.stringify(await ch.query(dump)), before, 'every row and value as before')
  t.strictSame(await plannedStatements(ch, features), [], 'a second start finds nothing to do')

  // The rollup views read the LowCardinality columns like the String ones.
  await ch.command(`INSERT INTO events (${eventColumns}) VALUES ${eventValues(10, Date.now())}`)
  const [byHost] = await ch.query<{ n: number }>("SELECT sum(n) AS n FROM events_by_host_1h WHERE org_id = 'o1'")
  t.equal(Number(byHost.n), 11, 'the host rollup counts the insert after the change beside the 10 before')

  // q with pre-filters (the indexes) answers what q without them does.
  for (const q of ['"card issuer unreachable"', 'user_id:7', 'user_id:7 OR unreachable', 'service:checkout -level:info', 'REQUEST', 'user_id:8 "issuer"']) {
    const rows = async (indexes: boolean): Promise<unknown[]> => await ch.query(`SELECT seq FROM events WHERE ${filterToSql(parseFilter(q), undefined, { indexes }).text} ORDER BY seq`)
    t.strictSame(await rows(true), await rows(false), `q=${q}`)
  }
  t.equal((await ch.query(`SELECT seq FROM events WHERE ${filterToSql(parseFilter('"card issuer unreachable"'), undefined, { indexes: true }).text}`)).length, 1)
})

t.test('on 26.x a database reconciled by an earlier Sluice gets the columns changed since (path LowCardinality, rt and src ZSTD(3))', { skip: noEngine }, async (t) => {
  const ch = openEmbedded(t, `rereconcile_${process.pid}`)
  const { features } = await migrate(ch, log)
  // What the version-aware schema had before bench/README.md's "Version-aware schema" bytes change.
  await ch.command(`ALTER TABLE events MODIFY COLUMN path Nullable(String) CODEC(ZSTD(1)), MODIFY COLUMN rt Nullable(Float64) CODEC(ZSTD(1)),
    MODIFY COLUMN src Nullable(String) CODEC(ZSTD(1)) SETTINGS mutations_sync = 2`)
  const received = Date.now()
  await ch.command(`INSERT INTO events (${eventColumns}) VALUES ${Array.from({ length: 10 }, (_, i) => eventValues(i, received)).join(', ')}`)
  const dump = 'SELECT * FROM events ORDER BY seq'
  const before = JSON.stringify(await ch.query(dump))

  const planned = await plannedStatements(ch, features)
  t.equal(planned.length, 1, 'one ALTER')
  t.match(planned[0], /MODIFY COLUMN `path` LowCardinality\(Nullable\(String\)\) CODEC\(ZSTD\(1\)\)/)
  t.match(planned[0], /MODIFY COLUMN `rt` Nullable\(Float64\) CODEC\(ZSTD\(3\)\)/)
  t.match(planned[0], /MODIFY COLUMN `src` Nullable\(String\) CODEC\(ZSTD\(3\)\)/)
  t.notMatch(planned[0], /`host`|`message`/, 'columns already as wanted are left alone')
  await migrate(ch, log)
  await mutationsDone(ch)
  const columns = await ch.query<{ name: string, type: string, codec: string }>(`SELECT name, type, compression_codec AS codec
    FROM system.columns WHERE database = currentDatabase() AND table = 'events' AND name IN ('path', 'rt', 'src') ORDER BY name`)
  t.strictSame(columns.map((c) => [c.name, c.type, c.codec]), ['path', 'rt', 'src'].map((name) => {
    const spec = eventColumnSpecs[name]
    return [name, spec.lowCardinalityType ?? spec.type, spec.codec]
  }))
  t.equal(JSON.stringify(await ch.query(dump)), before, 'every row and value as before')
  t.strictSame(await plannedStatements(ch, features), [], 'a second start finds nothing to do')
  const pathQ = async (indexes: boolean): Promise<unknown[]> => await ch.query(`SELECT seq FROM events WHERE ${filterToSql(parseFilter('path:/p/7 OR "/P/3"'), undefined, { indexes }).text} ORDER BY seq`)
  t.strictSame(await pathQ(true), [{ seq: 4 }, { seq: 8 }], 'path is found by value and by text in the LowCardinality column')
  t.strictSame(await pathQ(false), await pathQ(true))
})

t.test('upgrade by export: an 18.16 database re-imported into 26.x is found by q', { skip: (onChdb && 'needs the 18.16 test server') || noEngine }, async (t) => {
  // 1. Sluice on the test ClickHouse (18.16): a stream and events through real ingest.
  const base = Date.now() - 3_600_000
  const range = `from=${base - 1000}&to=${base + 3000}`
  const old = await startServer(t)
  const target = await createIngestTarget(old, 'app')
  const lines = [
    { ts: base, msg: 'payment failed: card issuer unreachable', service: 'checkout', user_id: 42, level: 'error' },
    { ts: base + 1000, msg: 'payment authorized', service: 'checkout', user_id: 43, order: { total: 129.5 } },
    { ts: base + 2000, msg: 'user logged in', service: 'auth', user_id: 42 },
  ]
  t.equal((await postIngest(target, lines.map((l) => JSON.stringify(l)).join('\n'))).status, 200)

  // 2. Export every table but the rollups (their views fill them again on import) and the migrations record.
  const url = clickhouseUrl()
  const fetchText = async (query: string): Promise<string> => {
    const res = await fetch(`${url}/?database=${old.database}`, { method: 'POST', body: query })
    if (!res.ok) throw new Error(`${res.status} ${await res.text()}`)
    return await res.text()
  }
  const tables = (await fetchText("SELECT name FROM system.tables WHERE database = currentDatabase() AND engine LIKE '%MergeTree' FORMAT TSV"))
    .split('\n').filter((n) => n !== '' && !n.startsWith('events_') && n !== 'schema_migrations')
  t.ok(tables.includes('events') && tables.includes('pats') && tables.includes('streams'))

  // 3. A 26.x database made by Sluice's migrations (version-aware), the export imported into it.
  const database = `upgraded_${process.pid}`
  const ch = openEmbedded(t, database)
  const { features } = await migrate(ch, log)
  t.ok(features.has('skipIndexes'))
  for (const table of tables) {
    const rows = await fetchText(`SELECT * FROM ${table} FORMAT JSONEachRow`)
    if (rows === '') continue
    const names = (await fetchText(`SELECT name FROM system.columns WHERE database = currentDatabase() AND table = '${table}' FORMAT TSV`)).trim().split('\n')
    await ch.insertRaw(`INSERT INTO ${table} (${names.join(', ')}) FORMAT JSONEachRow`, Buffer.from(rows))
  }
  const [{ n }] = await ch.query<{ n: number }>('SELECT count() AS n FROM events')
  t.equal(Number(n), 3)

  // 4. Sluice on the 26.x database: the same admin token, the events found by q.
  const upgraded = await startServer(t, { clickhouse: { url: embeddedUrl() }, bootstrapToken: old.adminToken }, { database })
  const find = async (q: string): Promise<string[]> => {
    const r = await upgraded.api('GET', `/api/streams/app/events?${range}&q=${encodeURIComponent(q)}`, { token: old.adminToken })
    t.equal(r.status, 200, `q=${q}: ${JSON.stringify(r.body).slice(0, 200)}`)
    return (r.body.events as Array<{ message: string }>).map((e) => e.message).sort()
  }
  t.strictSame(await find('"card issuer unreachable"'), ['payment failed: card issuer unreachable'])
  t.strictSame(await find('user_id:42'), ['payment failed: card issuer unreachable', 'user logged in'])
  t.strictSame(await find('order.total:>100'), ['payment authorized'])
  t.strictSame(await find('service:checkout -level:error'), ['payment authorized'])
  const stats = await upgraded.api('GET', `/api/streams/app/stats?${range}&by=user_id`, { token: old.adminToken })
  t.equal(stats.status, 200)
  t.strictSame(stats.body.groups.map((g: { value: string, count: number }) => [g.value, g.count]), [['42', 2], ['43', 1]])
})
