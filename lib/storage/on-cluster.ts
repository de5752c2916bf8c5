// ON CLUSTER statements that do not wait on a slow host (README.md, "Deployment: cluster mode").
//
// ClickHouse puts an ON CLUSTER statement in ZooKeeper's distributed DDL queue, and every host
// runs it from there; the statement's answer waits for all of them, up to the session's
// `distributed_ddl_task_timeout`. A host that is down, restarting or starved on a loaded box
// takes its queue late, so a deletion or the retention janitor waiting for it would wait minutes
// per statement. Here each statement waits at most `waitSeconds`. Past that, ClickHouse answers
// TIMEOUT_EXCEEDED, naming the queue entry, and the late hosts still run it: the caller gets the
// entry's path, can ask later whether it has run where it has to (ddlTaskState), and runs it
// again where it failed.
import { clickhouseCodes } from './clickhouse.ts'
import type { ClickHouse } from './clickhouse.ts'
import { quoteIdentifier, rawSql, sql } from './sql.ts'
import type { SqlFragment } from './sql.ts'
import { mutationTarget } from './cluster-ddl.ts'
import type { ClusterTarget } from './cluster-ddl.ts'

/** How long the retention janitor's statements wait for the hosts. */
export const janitorDdlWaitSeconds = 20
/** How long a stream deletion's statements wait for the hosts (the DELETE request waits for them). */
export const deletionDdlWaitSeconds = 2

const taskPath = /task (\/\S+) is executing longer/

/**
 * Runs `statement`: ON CLUSTER (`onCluster`), waiting at most `waitSeconds` for the hosts;
 * otherwise a plain command on the one node. Resolves with null when every host ran it, or with
 * its queue entry's ZooKeeper path ('' when the server's message did not name it) when some run it
 * later. Any other error is thrown.
 */
export async function commandOnCluster (clickhouse: ClickHouse, statement: string, waitSeconds: number, onCluster = true): Promise<string | null> {
  if (!onCluster) {
    await clickhouse.command(statement)
    return null
  }
  try {
    await clickhouse.command(statement, { settings: { distributed_ddl_task_timeout: waitSeconds } })
    return null
  } catch (err) {
    if ((err as { chCode?: number }).chCode !== clickhouseCodes.TIMEOUT_EXCEEDED) throw err
    return taskPath.exec((err as Error).message)?.[1] ?? ''
  }
}

/**
 * The statement that deletes `table`'s rows matching `where`: lightweight `DELETE FROM` on one
 * node whose server has it (docs/schema-versions.md), else a mutation, ON CLUSTER on the local
 * table in cluster mode (`target`). Either returns once the deletion is queued, not done: reads
 * hide a deleted stream's rows by its deletion time (docs/api.md, "Deleting a stream"), and the statement
 * holds no connection while the rows are rewritten.
 */
export function deleteRowsStatement (table: string, where: SqlFragment, target: ClusterTarget | null, lightweight: boolean): string {
  return String(lightweight && target === null
    ? sql`DELETE FROM ${rawSql(quoteIdentifier(table))} WHERE ${where} SETTINGS lightweight_deletes_sync = 0`
    : sql`ALTER TABLE ${rawSql(mutationTarget(table, target))} DELETE WHERE ${where}`)
}

/**
 * Deletes `table`'s rows matching `where` (deleteRowsStatement). Answers as commandOnCluster:
 * null, or the queue entry late hosts run it from.
 */
export function deleteRows (clickhouse: ClickHouse, table: string, where: SqlFragment, target: ClusterTarget | null,
  lightweight: boolean, waitSeconds: number): Promise<string | null> {
  return commandOnCluster(clickhouse, deleteRowsStatement(table, where, target, lightweight), waitSeconds, target !== null)
}

/**
 * Where the queue entry at `path` stands: `done` once it has run where it has to, or is gone
 * (ClickHouse removes entries after a week, or past 1,000 in the queue); `failed` when a host
 * answered it with an error and a shard has not run it (run it again: a deletion is idempotent);
 * else `running`.
 * - An ALTER of a replicated table (a deletion's mutation) runs on one replica of each shard,
 *   the shard's leader, which marks the shard `executed` under the entry; the shard's other
 *   replicas take the mutation by replication, whether or not they run the entry themselves. So
 *   one `executed` per shard is enough: on 18.16 a host restarted after a deletion applied the
 *   mutation by replication but left its own `finished` of those entries unwritten for minutes
 *   (the cluster test's host-down case, once in CI), and a purge that waited for it was never
 *   recorded. A replica that is not its shard's leader for about 10 s gives up with an error
 *   (18.16's DDLWorker: 20 tries, up to 1 s apart): with the leader just stopped, before
 *   ZooKeeper has expired its session, no replica of the shard ran the deletion.
 * - Any other statement runs on every host: one `finished` child per host.
 */
export async function ddlTaskState (clickhouse: ClickHouse, cluster: string, path: string): Promise<'done' | 'running' | 'failed'> {
  const [{ hosts, shards }] = await clickhouse.query<{ hosts: number, shards: number }>(sql`SELECT count() AS hosts, uniqExact(shard_num) AS shards
    FROM system.clusters WHERE cluster = ${cluster}`)
  const children = async (parent: string): Promise<Array<{ name: string, value: string }> | null> => {
    try {
      return await clickhouse.query<{ name: string, value: string }>(sql`SELECT name, value FROM system.zookeeper WHERE path = ${parent}`)
    } catch (err) {
      if (/no ?node/i.test((err as Error).message)) return null
      throw err
    }
  }
  const entry = await children(path)
  if (entry === null) return 'done'
  const finished = await children(`${path}/finished`) ?? []
  if (entry.some((c) => c.name === 'shards')) {
    let executed = 0
    for (const shard of await children(`${path}/shards`) ?? []) {
      if ((await children(`${path}/shards/${shard.name}`))?.some((c) => c.name === 'executed') === true) executed++
    }
    if (executed >= Number(shards)) return 'done'
    // A host's status: "0" when it ran the statement, else the error's code and message.
    if (finished.some((f) => !/^0(\n|$)/.test(f.value))) return 'failed'
  }
  return finished.length >= Number(hosts) ? 'done' : 'running'
}
