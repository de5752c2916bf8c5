// Idempotency-Key across nodes (docs/api.md section 6.7) against the local cluster: a key
// answered on node 1 is replayed on node 2, which reads it from its own ClickHouse host after
// replication. One cluster for this file. Node 1 reads from host s1r1, node 2 from s2r2. And the
// store under it (lib/storage/idempotency-store.ts) settling another node's pending keys by
// counting on every host, and repairing one partly stored on one shard.
import t from 'tap'
import { api, hostSql, ingest, startTestCluster } from '../helpers/cluster.ts'
import { isDefined, waitFor } from '../helpers/wait-for.ts'
import type { ClusterResponse } from '../helpers/cluster.ts'
import { createClickHouse } from '../../lib/storage/clickhouse.ts'
import { IdempotencyStore } from '../../lib/storage/idempotency-store.ts'
import { ShardSet } from '../../lib/storage/shard-set.ts'
import { IdempotencyCache } from '../../lib/ingest/idempotency.ts'
import type { StoredAnswer } from '../../lib/ingest/idempotency.ts'
import { SluiceError } from '../../lib/errors.ts'
import { createLogger } from '../../lib/logger.ts'

t.setTimeout(300_000) // four ClickHouse servers, ZooKeeper and two nodes start in 15-40 s on a loaded 2-core box

const cluster = await startTestCluster(t)
const [a, b] = cluster.nodes
const admin = cluster.adminToken
const db = cluster.database
/** Host indexes: 0 s1r1, 1 s1r2, 2 s2r1, 3 s2r2. */
const shardHosts = [[0, 1], [2, 3]]

/** Rows of the stream stored across the shards: per shard the replica holding the most (a 200 is a commit on one). */
async function storedRows (stream: string): Promise<number> {
  const counts = await Promise.all(cluster.clickhouseUrls.map(async (url) =>
    Number(await hostSql(url, `SELECT count() FROM ${db}.events_local WHERE stream = '${stream}'`))))
  return shardHosts.reduce((sum, [r1, r2]) => sum + Math.max(counts[r1], counts[r2]), 0)
}

function keyed (node: string, token: string, stream: string, key: string, lines: object[]): Promise<ClusterResponse> {
  return api(node, token, 'POST', `/api/ingest/${stream}`, lines.map((l) => JSON.stringify(l)).join('\n') + '\n',
    { 'content-type': 'application/x-ndjson', 'idempotency-key': key })
}

/** Rows for `key` in a host's replica of idempotency_keys. */
async function keyRows (url: string, key: string): Promise<number> {
  return Number(await hostSql(url, `SELECT count() FROM ${db}.idempotency_keys WHERE key = '${key}'`))
}

const stream = 'idem'
const created = await api(a.url, admin, 'POST', '/api/streams', { name: stream })
if (created.status !== 201) throw new Error(`create: ${created.status} ${JSON.stringify(created.body)}`)
const tokenRes = await api(a.url, admin, 'POST', `/api/streams/${stream}/ingest-token`, {})
if (tokenRes.status !== 201) throw new Error(`token: ${tokenRes.status} ${JSON.stringify(tokenRes.body)}`)
const token: string = tokenRes.body.token
// Node 2 knows the token after its next metadata refresh (500 ms here).
await waitFor(async () => {
  const r = await ingest(b.url, token, stream, [{ message: 'warm-up' }])
  return r.status === 200 ? true : undefined
}, { what: 'node 2 accepts the token', timeoutMs: 10_000, intervalMs: 100, until: isDefined, retryErrors: true })

t.test('idempotency_keys is a metadata table: replicated to every host under one ZooKeeper path', async (t) => {
  for (const url of cluster.clickhouseUrls) {
    const path = await hostSql(url, `SELECT zookeeper_path FROM system.replicas WHERE database = '${db}' AND table = 'idempotency_keys'`)
    t.equal(path, `/clickhouse/tables/all/${db}/idempotency_keys`, `host ${url}`)
  }
})

t.test('a key answered on node 1 is replayed on node 2: the first answer, stored once', async (t) => {
  const before = await storedRows(stream)
  const lines = [{ host: 'h', message: 'one' }, { host: 'h', message: 'two' }, { host: 'h', message: 'three' }]
  const first = await keyed(a.url, token, stream, 'order-1', lines)
  t.equal(first.status, 200)
  t.equal(first.body.ingested, 3)
  t.equal(first.headers['idempotent-replayed'], undefined, 'the first attempt ran')
  t.equal(await storedRows(stream), before + 3)
  // The retry of a client that timed out comes seconds later; node 2 sees the key once its host
  // (s2r2) has the row node 1's host (s1r1) took.
  await waitFor(async () => (await keyRows(b.clickhouseUrl, 'order-1')) > 0 ? true : undefined, { what: 'node 2\'s host has the key', timeoutMs: 10_000, intervalMs: 50, until: isDefined, retryErrors: true })
  const retry = await keyed(b.url, token, stream, 'order-1', lines)
  t.equal(retry.status, 200)
  t.equal(retry.headers['idempotent-replayed'], 'true')
  t.same(retry.body, first.body, 'the first answer, its request_id included')
  t.equal(retry.body.request_id, first.body.request_id)

  // The same key with another body, on either node: refused, nothing of it stored.
  for (const node of [b, a]) {
    const other = await keyed(node.url, token, stream, 'order-1', [{ host: 'h', message: 'something else' }])
    t.equal(other.status, 422, `node ${node.index + 1}`)
    t.equal(other.body.error, 'idempotency_key_reused')
  }
  const again = await keyed(a.url, token, stream, 'order-1', lines)
  t.equal(again.headers['idempotent-replayed'], 'true', 'node 1 replays from its memory')

  t.equal(await storedRows(stream), before + 3, 'stored once across both shards')
  // The attempt's two records (docs/api.md section 6.7): pending before its rows were written, then
  // its answer (written after the 200); the replays and refusals add none.
  const total = await waitFor(async () => Number(await hostSql(cluster.clickhouseUrls[0], `SELECT count() FROM ${db}.idempotency_keys WHERE key = 'order-1'`)),
    { what: 'the answer recorded', until: (n) => n >= 2, timeoutMs: 10_000, intervalMs: 50 })
  t.equal(total, 2, 'the pending record and the answer; replays record nothing')
})

t.test('a client error is replayed across nodes too; a new key on node 2 runs', async (t) => {
  const first = await keyed(a.url, token, stream, 'bad-1', [])
  t.equal(first.status, 400)
  t.equal(first.body.error, 'empty_body')
  await waitFor(async () => (await keyRows(b.clickhouseUrl, 'bad-1')) > 0 ? true : undefined, { what: 'node 2\'s host has the key', timeoutMs: 10_000, intervalMs: 50, until: isDefined, retryErrors: true })
  const retry = await keyed(b.url, token, stream, 'bad-1', [])
  t.equal(retry.status, 400)
  t.equal(retry.body.error, 'empty_body')
  t.equal(retry.body.request_id, first.body.request_id)
  const fresh = await keyed(b.url, token, stream, 'fresh-1', [{ message: 'new' }])
  t.equal(fresh.status, 200)
  t.equal(fresh.headers['idempotent-replayed'], undefined)
})

t.test('how long until a key answered on node 1 is visible to node 2 (measured, not asserted)', async (t) => {
  const delays: number[] = []
  for (let i = 0; i < 10; i++) {
    const key = `measure-${i}`
    const res = await keyed(a.url, token, stream, key, [{ message: `m${i}` }])
    t.equal(res.status, 200)
    const answeredAt = Date.now()
    await waitFor(async () => (await keyRows(b.clickhouseUrl, key)) > 0 ? true : undefined, { what: `node 2's host has ${key}`, timeoutMs: 10_000, intervalMs: 10, until: isDefined, retryErrors: true })
    delays.push(Date.now() - answeredAt)
  }
  delays.sort((x, y) => x - y)
  t.comment(`answer on node 1 -> key visible on node 2's host, ms: min ${delays[0]}, median ${delays[5]}, max ${delays[9]} (${delays.join(', ')})`)
  // Every one of them was replayed through node 2.
  for (let i = 0; i < 10; i++) {
    const r = await keyed(b.url, token, stream, `measure-${i}`, [{ message: `m${i}` }])
    t.equal(r.headers['idempotent-replayed'], 'true', `measure-${i} replayed on node 2`)
  }
})

t.test('another node\'s pending keys settled across the shards: stored replayed, absent run, partly stored on one shard repaired then run; a replica down is left out, a shard down is unknown', async (t) => {
  const log = createLogger({ level: 'silent' })
  const client = { user: 'default', password: '', database: db, requestTimeoutMs: 60_000 }
  const shards = new ShardSet({ urls: cluster.clickhouseUrls, client, log })
  await shards.start()
  const chA = createClickHouse({ ...client, url: cluster.clickhouseUrls[0] })
  const chB = createClickHouse({ ...client, url: cluster.clickhouseUrls[3] })
  t.teardown(async () => { await shards.close(); await chA.close(); await chB.close() })
  // As app.ts has them in cluster mode; node B does not wait out node A's attempt (holdMs 0).
  const options = { log, shards, eventsTable: 'events_local', repairPartial: true, settleGapMs: 10 }
  const nodeA = new IdempotencyCache(600_000, 100, Date.now, new IdempotencyStore({ clickhouse: chA, ...options }))
  const storeB = new IdempotencyStore({ clickhouse: chB, ...options, holdMs: 0 })
  const nodeB = new IdempotencyCache(600_000, 100, Date.now, storeB)
  const ok = (n: number): StoredAnswer => ({ status: 200, body: { ingested: n, request_id: `req-${n}` } })
  const row = (seq: number): string => `('org1', 'pend', ${Date.now()}, ${Date.now()}, ${seq}, 10)`
  const rangeRows = (url: string, seqBase: number): Promise<string> =>
    hostSql(url, `SELECT count() FROM ${db}.events_local WHERE org_id = 'org1' AND stream = 'pend' AND seq >= ${seqBase} AND seq < ${seqBase + 2 ** 25}`)
  // Attempts on node A whose rows went to a shard and whose answers were lost (node A killed):
  // both rows on shard 1 (host s1r1), none, and one of two on shard 2 (host s2r1: a body cut off).
  const attempts = [['c-stored', 2 ** 25, 2, 0], ['c-absent', 2 * 2 ** 25, 0, 0], ['c-partial', 3 * 2 ** 25, 1, 2], ['c-unknown', 4 * 2 ** 25, 2, 0]] as const
  for (const [key, seqBase, stored, host] of attempts) {
    await t.rejects(nodeA.once('s', key, 'req-a', async (commit) => {
      await commit.beforeWrite({ orgId: 'org1', stream: 'pend', seqBase, rows: 2, answer: ok(2) })
      if (stored > 0) await hostSql(cluster.clickhouseUrls[host], `INSERT INTO ${db}.events_local (org_id, stream, ts, received_at, seq, size) VALUES ${[row(seqBase), row(seqBase + 1)].slice(0, stored).join(', ')}`)
      throw new SluiceError('storage_outcome_unknown', undefined, { retryAfter: 1 })
    }), { code: 'storage_outcome_unknown' })
    await waitFor(async () => (await keyRows(cluster.clickhouseUrls[3], key)) > 0 ? true : undefined, { what: `node B's host has ${key}`, timeoutMs: 10_000, intervalMs: 50, until: isDefined, retryErrors: true })
  }
  let runs = 0
  t.same(await nodeB.once('s', 'c-stored', 'req-b', async () => { runs++; return ok(9) }), { answer: ok(2), replayed: true }, 'stored on shard 1: replayed')
  t.same(await nodeB.once('s', 'c-absent', 'req-c', async () => { runs++; return ok(3) }), { answer: ok(3), replayed: false }, 'absent: run')
  t.equal(runs, 1)
  // The repair's mutation may outlast one retry (503 storage_unavailable, nothing stored): retry as a client would.
  const partial = await waitFor(async () => {
    try {
      return await nodeB.once('s', 'c-partial', 'req-e', async () => { runs++; return ok(4) })
    } catch (err) {
      if (err instanceof SluiceError && err.code === 'storage_unavailable') return undefined
      throw err
    }
  }, { what: 'the partly stored key repaired', timeoutMs: 60_000, intervalMs: 200, until: isDefined })
  t.same(partial, { answer: ok(4), replayed: false }, 'partly stored on shard 2: its rows deleted, then run')
  t.equal(runs, 2)
  for (const host of [2, 3]) t.equal(await rangeRows(cluster.clickhouseUrls[host], 3 * 2 ** 25), '0', `the cut-off row is gone from host ${host}`)
  // A replica that does not answer is left out while another of its shard answers; a shard none
  // of whose hosts answers, or a host whose shard is not known yet, leaves the key unknown (503).
  const dead = createClickHouse({ ...client, url: 'http://127.0.0.1:1' }) // nothing listens there
  t.teardown(() => dead.close())
  const withHosts = (extra: Array<{ shard: string | undefined, clickhouse: typeof dead }>): IdempotencyCache =>
    new IdempotencyCache(600_000, 100, Date.now, new IdempotencyStore({ clickhouse: chB, ...options, holdMs: 0, shards: { hosts: [...shards.hosts, ...extra] } }))
  await t.rejects(withHosts([{ shard: undefined, clickhouse: chB }]).once('s', 'c-unknown', 'req-f', async () => { runs++; return ok(5) }),
    { code: 'storage_unavailable' }, 'a host of unknown shard: unknown')
  await t.rejects(withHosts([{ shard: 'a shard of its own', clickhouse: dead }]).once('s', 'c-unknown', 'req-g', async () => { runs++; return ok(5) }),
    { code: 'storage_unavailable' }, 'a shard none of whose hosts answers: unknown')
  t.equal(runs, 2, 'nothing run while a shard cannot be counted')
  t.same(await withHosts([{ shard: shards.hosts[0].shard, clickhouse: dead }]).once('s', 'c-unknown', 'req-h', async () => { runs++; return ok(5) }),
    { answer: ok(2), replayed: true }, 'a replica of shard 1 down, another answers: stored, replayed')
})
