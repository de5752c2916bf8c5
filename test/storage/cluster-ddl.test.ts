// lib/storage/cluster-ddl.ts: how each kind of migration statement becomes cluster DDL. The
// statements are run for real against the local cluster by test/cluster/; this checks the
// translation itself, the migrations' own statements included, without a cluster.
import t from 'tap'
import { clusterStatements, isShardedTable, mutationTarget } from '../../lib/storage/cluster-ddl.ts'
import { migrations } from '../../lib/storage/migrate.ts'

const target = { cluster: 'c1', database: 'db' }

t.test('event tables are sharded, everything else is replicated to every host', async (t) => {
  t.ok(isShardedTable('events'))
  t.ok(isShardedTable('events_by_path_1h'))
  t.notOk(isShardedTable('orgs'))
  t.notOk(isShardedTable('eventsx'))
})

t.test('a sharded CREATE TABLE: a replicated local table per shard, a Distributed table over it', async (t) => {
  const out = clusterStatements(`CREATE TABLE IF NOT EXISTS events_1m (
    org_id String, d AggregateFunction(quantilesTDigestIf(0.5, 0.95), Float64, UInt8)
  ) ENGINE = SummingMergeTree PARTITION BY intDiv(minute_ts, 86400000) ORDER BY (org_id)`, target)
  t.equal(out.length, 2)
  t.match(out[0], /^CREATE TABLE IF NOT EXISTS `db`\.`events_1m_local` ON CLUSTER `c1` \(/)
  t.match(out[0], /quantilesTDigestIf\(0\.5, 0\.95\), Float64, UInt8\)/, 'nested parentheses of the columns kept')
  t.match(out[0], /ENGINE = ReplicatedSummingMergeTree\('\/clickhouse\/tables\/\{shard\}\/db\/events_1m_local', '\{replica\}'\) PARTITION BY/)
  t.match(out[0], /ORDER BY \(org_id\) SETTINGS replicated_deduplication_window = 1000$/, 'a retry is recognized within 1000 blocks')
  t.match(out[1], /`db`\.`events_1m` ON CLUSTER `c1` AS `db`\.`events_1m_local`\s+ENGINE = Distributed\(`c1`, `db`, `events_1m_local`, rand\(\)\)/)
})

t.test('a metadata CREATE TABLE: one ZooKeeper path for all hosts, engine arguments kept', async (t) => {
  const [create, ...rest] = clusterStatements(`CREATE TABLE IF NOT EXISTS orgs (id String, version UInt64)
    ENGINE = ReplacingMergeTree(version) ORDER BY id`, target)
  t.equal(rest.length, 0)
  t.match(create, /ENGINE = ReplicatedReplacingMergeTree\('\/clickhouse\/tables\/all\/db\/orgs', '\{replica\}', version\) ORDER BY id/)
  t.notMatch(create, /\{shard\}/)
})

t.test('a materialized view reads and writes the local tables, on every host', async (t) => {
  const [view] = clusterStatements(`CREATE MATERIALIZED VIEW IF NOT EXISTS events_1m_mv TO events_1m AS
    SELECT org_id, count() AS n FROM events WHERE isNotNull(host) GROUP BY org_id`, target)
  t.match(view, /^CREATE MATERIALIZED VIEW IF NOT EXISTS `db`\.`events_1m_mv` ON CLUSTER `c1` TO `db`\.`events_1m_local` AS/)
  t.match(view, /FROM `db`\.`events_local` WHERE/)
})

t.test('ALTER: sharded tables ON CLUSTER with the Distributed table rebuilt; metadata tables by replication', async (t) => {
  const add = clusterStatements('ALTER TABLE events ADD COLUMN level Nullable(String)', target)
  t.strictSame(add.slice(0, 2), [
    'ALTER TABLE `db`.`events_local` ON CLUSTER `c1` ADD COLUMN level Nullable(String)',
    'DROP TABLE IF EXISTS `db`.`events` ON CLUSTER `c1`',
  ])
  t.match(add[2], /CREATE TABLE IF NOT EXISTS `db`\.`events` ON CLUSTER `c1` AS `db`\.`events_local`/)
  t.strictSame(clusterStatements('ALTER TABLE events_1h DELETE WHERE org_id = \'o\'', target),
    ['ALTER TABLE `db`.`events_1h_local` ON CLUSTER `c1` DELETE WHERE org_id = \'o\''], 'a mutation leaves the Distributed table alone')
  t.strictSame(clusterStatements('ALTER TABLE pats ADD COLUMN note String', target), ['ALTER TABLE `db`.`pats` ADD COLUMN note String'])
  t.equal(mutationTarget('events', target), '`db`.`events_local` ON CLUSTER `c1`')
  t.equal(mutationTarget('stream_deletions', target), '`db`.`stream_deletions`')
  t.equal(mutationTarget('events', null), '`events`')
})

t.test('DROP reaches both tables of a sharded name; other statements are refused', async (t) => {
  t.strictSame(clusterStatements('DROP TABLE IF EXISTS events_1m', target), [
    'DROP TABLE IF EXISTS `db`.`events_1m` ON CLUSTER `c1`', 'DROP TABLE IF EXISTS `db`.`events_1m_local` ON CLUSTER `c1`',
  ])
  t.throws(() => clusterStatements('INSERT INTO orgs VALUES (1)', target), /cluster mode cannot apply/)
})

t.test('every statement of every migration translates', async (t) => {
  for (const m of migrations) {
    for (const statement of m.statements) {
      const out = clusterStatements(statement, target)
      t.ok(out.length > 0 && out.every((s) => s.includes('ON CLUSTER') || /^ALTER TABLE `db`\.`(?!events)/.test(s)), `${m.id} ${statement.slice(0, 60).replace(/\s+/g, ' ')}`)
    }
  }
})
