// Exactly once through retries in cluster mode (docs/api.md sections 6.6 and 6.7; issue 24): the
// three clients of test/faults/retry-scenarios.ts (keyed, timestamped, changing) send steady
// traffic to node 1; node 1 is SIGKILLed while an insert of its is in a ClickHouse host; the
// clients retry on node 2, which settles node 1's pending keys (after holdMs) and repairs an
// attempt that node 1's death left partly stored. Keyed and timestamped: 0 missing, 0 stored
// twice, nothing stored unacknowledged. Changing bodies: 0 missing, duplicates counted and reported.
// The kill mostly finds an insert whose body was sent whole (stored) or requests not yet sent
// (absent): a body cut between two rows, which 18.16 stores in part, takes a kill in the
// milliseconds its body is on its way (a SIGSTOP-until-caught loop needed 178 inserts for one
// body part-sent), so cluster-idempotency.test.ts cuts one by hand for the repair.
import t from 'tap'
import { hostSql, startTestCluster, streamWithToken } from '../helpers/cluster.ts'
import { waitFor } from '../helpers/wait-for.ts'
import { assertExactlyOnce, progressed, retryClients, startLoads, summarize } from '../faults/retry-scenarios.ts'
import type { RetryClient } from '../faults/retry-scenarios.ts'

t.setTimeout(300_000) // the cluster starts in 15-40 s on a loaded 2-core box; the scenario takes 1-2 min

const cluster = await startTestCluster(t)
const [node1, node2] = cluster.nodes
const db = cluster.database
/** Host indexes per shard: 0 s1r1, 1 s1r2, 2 s2r1, 3 s2r2. */
const shardHosts = [[0, 1], [2, 3]]

/** Per shard, the replicas' row counts of the load's streams in events_local. */
async function replicaCounts (): Promise<number[][]> {
  const streams = retryClients.map((c) => `'${c}'`).join(', ')
  return await Promise.all(shardHosts.map((hosts) => Promise.all(hosts.map(async (h) =>
    Number(await hostSql(cluster.clickhouseUrls[h], `SELECT count() FROM ${db}.events_local WHERE stream IN (${streams})`))))))
}

/** Whether any host runs an insert of a Sluice node (node 2 takes no traffic before the kill: node 1's). */
async function insertInFlight (): Promise<boolean> {
  const counts = await Promise.all(cluster.clickhouseUrls.map((url) =>
    hostSql(url, "SELECT count() FROM system.processes WHERE query_id LIKE 'sluice-insert-%'")))
  return counts.some((n) => Number(n) > 0)
}

t.test('node 1 SIGKILLed mid-insert, the clients retry on node 2: exactly once for keyed and timestamped retries', async (t) => {
  const shape = { clients: 4, linesPerRequest: 2000 }
  const tokens = {} as Record<RetryClient, string>
  for (const c of retryClients) tokens[c] = await streamWithToken(cluster.adminToken, node1.url, node2.url, c)
  let target = node1.url
  // The clients give a request 60 s (past node 2's holdMs on node 1's pending keys and a
  // repair's mutation), and a batch 100 attempts: a key stuck unknown fails the test, not the run.
  const loads = startLoads(() => target, tokens, shape, 60_000, 100)
  try {
    await progressed(cluster.clickhouseUrls[0], db, shape.linesPerRequest, 'steady traffic through node 1')
    await waitFor(insertInFlight, { what: 'an insert of node 1 in a ClickHouse host', timeoutMs: 60_000, intervalMs: 1 })
    target = node2.url // the retries of the requests node 1's death drops go to node 2
    node1.child.kill('SIGKILL')
    await waitFor(() => node1.child.hasExited, { what: 'node 1 gone', timeoutMs: 10_000 })
    await progressed(cluster.clickhouseUrls[0], db, 2 * shape.linesPerRequest, 'traffic stored through node 2')
  } finally {
    loads.stop()
  }
  const results = await loads.results
  // The checker reads through the Distributed table: wait until both replicas of each shard hold
  // the same rows, twice in a row (a replica still fetching a part would hide it).
  let last = ''
  await waitFor(async () => {
    const counts = await replicaCounts()
    const now = JSON.stringify(counts)
    const settled = counts.every(([a, b]) => a === b) && now === last
    last = now
    return settled
  }, { what: 'replicas in agreement', timeoutMs: 60_000, intervalMs: 500 })
  const r = await summarize('node 1 SIGKILLed mid-insert, retries on node 2', cluster.clickhouseUrls[0], db, results, node2.url)
  assertExactlyOnce(t, r)
  // The kill caught requests of every client in flight: their retries went through node 2.
  for (const c of retryClients) t.ok((r.clients[c].answerCounts['0 dropped'] ?? 0) > 0, `${c}: requests dropped by the kill, retried on node 2`)
})
