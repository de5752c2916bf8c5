// Cluster mode's schema: every migration statement (lib/storage/migrations/, written for one
// ClickHouse) rewritten into the statements that build the same schema on a ClickHouse cluster,
// ON CLUSTER, so that any migration, later ones included, needs no cluster variant of its own.
//
// Contract:
// - Event data tables are sharded: `events` and every table named `events_*` (the rollups). Each
//   is a Replicated*MergeTree local table `<name>_local` on every host, at ZooKeeper path
//   /clickhouse/tables/{shard}/<database>/<name>_local (one replica set per shard), with a
//   Distributed table `<name>` over it on every host, so reads name the same tables as on one
//   node. Every other table (metadata: orgs, users, PATs, streams, tokens, token use, audit,
//   claims, the node registry, idempotency keys, schema_migrations) is replicated to every host under one ZooKeeper path without
//   {shard}, /clickhouse/tables/all/<database>/<name>, so each node reads all of it from its
//   nearest ClickHouse. The `{replica}` macro must therefore be unique across the cluster.
// - CREATE TABLE: ON CLUSTER, the engine made Replicated (its arguments kept after path and
//   replica), and for a sharded table the Distributed table after its local one.
// - CREATE MATERIALIZED VIEW ... TO t AS SELECT ... FROM s: ON CLUSTER, on every host, from the
//   local table to the local table (a view runs on the host that received the insert; the
//   rollup's replication carries its rows to the other replica).
// - ALTER TABLE on a sharded table: ON CLUSTER on the local tables (ClickHouse runs it once per
//   shard, on the leader replica, and replication does the rest); when it changes columns, the
//   Distributed table is dropped and created again over the new local columns (ClickHouse
//   18.16 refuses ALTER ON CLUSTER of a non-replicated table in a cluster with
//   internal_replication). On a metadata table: a plain ALTER, which replication carries to
//   every host (ON CLUSTER would run it once per shard on the same replicated table).
// - DROP TABLE / VIEW: ON CLUSTER, both tables of a sharded name.
// - Names are qualified with the database: ON CLUSTER DDL runs on hosts that do not know the
//   session's current database.
// - Any other statement is refused with an error naming it, never run half-translated.
import { quoteIdentifier } from './sql.ts'

export interface ClusterTarget {
  /** Cluster name in remote_servers. */
  cluster: string
  database: string
}

const name = '([A-Za-z_][A-Za-z0-9_]*)'

/** replicated_deduplication_window of the sharded tables, in blocks (inserts) per shard. */
export const dedupWindowBlocks = 1000

/** Tables holding event data: `events` and its rollups `events_*`; sharded in cluster mode. */
export function isShardedTable (table: string): boolean {
  return table === 'events' || table.startsWith('events_')
}

export function localTableName (table: string): string {
  return `${table}_local`
}

/** The index just past the parenthesis that closes the one at `open`, skipping quoted text. */
function closingParen (text: string, open: number): number {
  let depth = 0
  for (let i = open; i < text.length; i++) {
    const ch = text[i]
    if (ch === "'" || ch === '`' || ch === '"') {
      for (i++; i < text.length && text[i] !== ch; i++) if (text[i] === '\\') i++
    } else if (ch === '(') {
      depth++
    } else if (ch === ')' && --depth === 0) {
      return i + 1
    }
  }
  throw new Error(`unbalanced parentheses in: ${text.slice(0, 120)}`)
}

function qualified (target: ClusterTarget, table: string): string {
  return `${quoteIdentifier(target.database)}.${quoteIdentifier(table)}`
}

/** Where a table's rows are stored: the local table of a sharded name, the name itself otherwise. */
function storageOf (target: ClusterTarget, table: string): string {
  return qualified(target, isShardedTable(table) ? localTableName(table) : table)
}

function onCluster (target: ClusterTarget): string {
  return `ON CLUSTER ${quoteIdentifier(target.cluster)}`
}

/** The Distributed table over a sharded table's local tables; rand(): reads do not care, inserts go to local tables. */
export function distributedStatement (target: ClusterTarget, table: string): string {
  return `CREATE TABLE IF NOT EXISTS ${qualified(target, table)} ${onCluster(target)} AS ${storageOf(target, table)}
    ENGINE = Distributed(${quoteIdentifier(target.cluster)}, ${quoteIdentifier(target.database)}, ${quoteIdentifier(localTableName(table))}, rand())`
}

function replicatedEngine (target: ClusterTarget, table: string, engine: string, args: string): string {
  if (!/MergeTree$/.test(engine) || engine.startsWith('Replicated')) return args === '' ? engine : `${engine}(${args})`
  const path = isShardedTable(table)
    ? `/clickhouse/tables/{shard}/${target.database}/${localTableName(table)}`
    : `/clickhouse/tables/all/${target.database}/${table}`
  return `Replicated${engine}('${path}', '{replica}'${args.trim() === '' ? '' : `, ${args}`})`
}

function createTable (statement: string, target: ClusterTarget): string[] | null {
  const head = new RegExp(`^\\s*CREATE\\s+TABLE\\s+(?:IF\\s+NOT\\s+EXISTS\\s+)?${name}\\s*\\(`, 'i').exec(statement)
  if (head === null) return null
  const table = head[1]
  const columnsEnd = closingParen(statement, head[0].length - 1)
  const columns = statement.slice(head[0].length - 1, columnsEnd)
  const engineMatch = new RegExp(`^\\s*ENGINE\\s*=\\s*${name}\\s*`, 'i').exec(statement.slice(columnsEnd))
  if (engineMatch === null) throw new Error(`cluster mode: no ENGINE in: ${statement.slice(0, 120)}`)
  let rest = statement.slice(columnsEnd + engineMatch[0].length)
  let args = ''
  if (rest.startsWith('(')) {
    const end = closingParen(rest, 0)
    args = rest.slice(1, end - 1)
    rest = rest.slice(end)
  }
  const engine = replicatedEngine(target, table, engineMatch[1], args)
  let tail = rest.trim()
  if (isShardedTable(table) && engine.startsWith('Replicated')) {
    // A retried insert is dropped as a duplicate only while its first attempt is among the last
    // `replicated_deduplication_window` blocks of the table on its shard (ClickHouse: 100). Every
    // node's inserts count, so keep ten times that: about 15 s of retries from 60 nodes at 5
    // inserts/s onto 2 shards, for a few thousand more ZooKeeper nodes.
    const setting = `replicated_deduplication_window = ${dedupWindowBlocks}`
    tail = /\bSETTINGS\b/i.test(tail) ? `${tail}, ${setting}` : `${tail} SETTINGS ${setting}`
  }
  const create = `CREATE TABLE IF NOT EXISTS ${storageOf(target, table)} ${onCluster(target)} ${columns} ENGINE = ${engine} ${tail}`
  return isShardedTable(table) ? [create, distributedStatement(target, table)] : [create]
}

function createView (statement: string, target: ClusterTarget): string[] | null {
  const m = new RegExp(`^\\s*CREATE\\s+MATERIALIZED\\s+VIEW\\s+(?:IF\\s+NOT\\s+EXISTS\\s+)?${name}\\s+TO\\s+${name}\\s+AS\\s+([\\s\\S]*)$`, 'i').exec(statement)
  if (m === null) return null
  const select = m[3].replace(new RegExp(`\\b(FROM|JOIN)\\s+${name}\\b(?!\\s*[.(])`, 'gi'), (_, keyword: string, source: string) => `${keyword} ${storageOf(target, source)}`)
  return [`CREATE MATERIALIZED VIEW IF NOT EXISTS ${qualified(target, m[1])} ${onCluster(target)} TO ${storageOf(target, m[2])} AS ${select}`]
}

function alterTable (statement: string, target: ClusterTarget): string[] | null {
  const m = new RegExp(`^\\s*ALTER\\s+TABLE\\s+${name}\\s+([\\s\\S]*)$`, 'i').exec(statement)
  if (m === null) return null
  const [, table, rest] = m
  if (!isShardedTable(table)) return [`ALTER TABLE ${qualified(target, table)} ${rest}`]
  const out = [`ALTER TABLE ${storageOf(target, table)} ${onCluster(target)} ${rest}`]
  if (/\b(ADD|DROP|MODIFY|RENAME|CLEAR)\s+COLUMN\b/i.test(rest)) {
    out.push(`DROP TABLE IF EXISTS ${qualified(target, table)} ${onCluster(target)}`, distributedStatement(target, table))
  }
  return out
}

function dropTable (statement: string, target: ClusterTarget): string[] | null {
  const m = new RegExp(`^\\s*DROP\\s+(TABLE|VIEW)\\s+(IF\\s+EXISTS\\s+)?${name}\\s*$`, 'i').exec(statement)
  if (m === null) return null
  const [, kind, ifExists = '', table] = m
  const drop = (t: string): string => `DROP ${kind.toUpperCase()} ${ifExists}${qualified(target, t)} ${onCluster(target)}`
  return isShardedTable(table) && kind.toUpperCase() === 'TABLE' ? [drop(table), drop(localTableName(table))] : [drop(table)]
}

/** The statements that apply one single-node migration statement to the cluster, in order. */
export function clusterStatements (statement: string, target: ClusterTarget): string[] {
  const out = createTable(statement, target) ?? createView(statement, target) ?? alterTable(statement, target) ?? dropTable(statement, target)
  if (out === null) throw new Error(`cluster mode cannot apply this migration statement: ${statement.trim().slice(0, 120)}`)
  return out
}

/**
 * The target of a mutation (ALTER ... DELETE / UPDATE / DROP PARTITION) of a table: in cluster
 * mode a sharded table's local tables ON CLUSTER (once per shard; replication reaches the other
 * replicas), a metadata table itself (replication reaches every host); on one node the table.
 */
export function mutationTarget (table: string, target: ClusterTarget | null): string {
  if (target === null) return quoteIdentifier(table)
  return isShardedTable(table) ? `${storageOf(target, table)} ${onCluster(target)}` : qualified(target, table)
}
