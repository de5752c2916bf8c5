// Cluster mode against the local cluster (ZooKeeper, ClickHouse 2 shards x 2 replicas, 2 Sluice
// nodes, haproxy): one cluster for this whole file, since starting it costs the most.
// Node 1 reads from host s1r1, node 2 from s2r2 (scripts/cluster/local-cluster.ts nearestHost).
import t from 'tap'
import { createServer, connect } from 'node:net'
import type { AddressInfo, Socket } from 'node:net'
import { api, hostSql, ingest, startTestCluster, streamWithToken } from '../helpers/cluster.ts'
import { isDefined, waitFor } from '../helpers/wait-for.ts'
import { createBatchWriter } from '../../lib/storage/batch-writer.ts'
import type { InsertStats } from '../../lib/storage/batch-writer.ts'
import { ShardSet } from '../../lib/storage/shard-set.ts'
import { createClickHouse } from '../../lib/storage/clickhouse.ts'
import { createLogger } from '../../lib/logger.ts'
import { MetadataStore } from '../../lib/storage/metadata-store.ts'
import { migrate } from '../../lib/storage/migrate.ts'
import { enforceRetention } from '../../lib/storage/retention.ts'

// Starting four ClickHouse servers, ZooKeeper and two nodes takes 15-40 s on a loaded 2-core box;
// a replica's restart and catch-up as much again. tap's default (.taprc) is 120 s per file. The
// file takes 130-250 s in CI, but ON CLUSTER deletions beside a browser test have taken 56 and
// 231 s instead of 15-20 for one test (2026-11-27, clean clones): room for such a run to finish.
t.setTimeout(900_000)

const cluster = await startTestCluster(t)
const [a, b] = cluster.nodes
const admin = cluster.adminToken
const db = cluster.database
/** Host indexes: 0 s1r1, 1 s1r2, 2 s2r1, 3 s2r2. */
const shardHosts = [[0, 1], [2, 3]]

/** Rows of the stream in each host's local events table (or `aggregate` over another local table). */
async function localCounts (stream: string, table = 'events_local', aggregate = 'count()'): Promise<number[]> {
  return Promise.all(cluster.clickhouseUrls.map(async (url) =>
    Number(await hostSql(url, `SELECT ${aggregate} FROM ${db}.${table} WHERE stream = '${stream}'`))))
}

/** Every event of the stream through one node's events API, page by page. */
async function eventsThrough (node: string, stream: string): Promise<Array<Record<string, unknown>>> {
  const out: Array<Record<string, unknown>> = []
  let cursor = ''
  for (;;) {
    const res = await api(node, admin, 'GET', `/api/streams/${stream}/events?from=now-1h&to=now%2B1h&limit=1000${cursor}`)
    if (res.status !== 200) throw new Error(`events: ${res.status} ${JSON.stringify(res.body)}`)
    out.push(...res.body.events)
    if (res.body.next_cursor === null) return out
    cursor = `&cursor=${encodeURIComponent(res.body.next_cursor)}`
  }
}

/** `n` requests of `lines` lines each, alternately through each of `nodes`; every line has a unique `seq` attr. */
async function sendAlternating (nodes: string[], token: string, stream: string, n: number, lines: number, tag: string): Promise<number[]> {
  const statuses: number[] = []
  for (let i = 0; i < n; i++) {
    const rows = Array.from({ length: lines }, (_, k) => ({ host: `h${i % 3}`, path: `/p/${tag}`, status: k % 5 === 0 ? 500 : 200, rt: 0.01, tag, line: i * lines + k }))
    const res = await ingest(nodes[i % nodes.length], token, stream, rows)
    statuses.push(res.status)
  }
  return statuses
}

t.test('ingest through either node lands on both shards, and every query on either node sees all of it', async (t) => {
  const token = await streamWithToken(admin, a.url, b.url, 'spread')
  const requests = 20
  const lines = 25
  const statuses = await sendAlternating([a.url, b.url], token, 'spread', requests, lines, 'spread')
  t.strictSame(statuses, Array(requests).fill(200), 'every request answered 200')
  const total = requests * lines

  // A 200 means committed on the shard that took the batch: its rows are there at once.
  const counts = await localCounts('spread')
  const perShard = shardHosts.map(([r1, r2]) => Math.max(counts[r1], counts[r2]))
  t.ok(perShard[0] > 0 && perShard[1] > 0, `both shards took batches (${perShard.join(' + ')})`)
  t.equal(perShard[0] + perShard[1], total, 'each row on exactly one shard')
  // The other replica of each shard catches up by replication: the events and, replicated on
  // their own, the rollups the stats read (a read may go to either replica).
  await waitFor(async () => {
    const c = await localCounts('spread')
    const rollup = await localCounts('spread', 'events_by_status_1h_local', 'sum(n)')
    return shardHosts.every(([r1, r2]) => c[r1] === c[r2] && rollup[r1] === rollup[r2]) ? c : undefined
  }, { what: 'replicas of each shard hold the same rows', timeoutMs: 30_000, intervalMs: 200, until: isDefined, retryErrors: true })

  for (const node of [a, b]) {
    const events = await eventsThrough(node.url, 'spread')
    t.equal(events.length, total, `events API on node ${node.index + 1}: all ${total}`)
    t.equal(new Set(events.map((e) => (e.attrs as { line: number }).line)).size, total, `node ${node.index + 1}: each line once`)
    const stats = await api(node.url, admin, 'GET', '/api/streams/spread/stats?from=now-1h&to=now%2B1h')
    t.equal(stats.status, 200)
    t.equal(stats.body.totals.count, total, `stats on node ${node.index + 1}: all of it`)
    t.equal(stats.body.top.status.find((s: { status: number }) => s.status === 500)?.count, total / 5, `stats top lists on node ${node.index + 1} count every shard`)
  }
})

t.test('reads of any field on either node see every shard: q on attributes, stats?by=, /fields, context, export', async (t) => {
  const token = await streamWithToken(admin, a.url, b.url, 'apps')
  const base = Date.now() - 1_800_000
  const services = ['checkout', 'cart', 'search']
  // 1,000 application events, one a second, through both nodes in turn (so both shards hold some).
  const rows = Array.from({ length: 1000 }, (_, n) => ({
    ts: base + n * 1000,
    host: `h${n % 4}`,
    'service.name': services[n % 3],
    level: n % 10 === 0 ? 'error' : 'info',
    msg: `request ${n}`,
    user_id: n % 50,
    order: { total: n + 0.5 },
    trace_id: `tr-${n}`,
  }))
  for (let i = 0; i < 20; i++) {
    const res = await ingest([a.url, b.url][i % 2], token, 'apps', rows.slice(i * 50, i * 50 + 50))
    t.equal(res.status, 200)
  }
  await waitFor(async () => {
    const c = await localCounts('apps')
    return shardHosts.every(([r1, r2]) => c[r1] === c[r2]) && c[0] + c[2] === rows.length ? c : undefined
  }, { what: 'replicas of each shard hold the same rows', timeoutMs: 30_000, intervalMs: 200, until: isDefined, retryErrors: true })
  const counts = await localCounts('apps')
  t.ok(counts[0] > 0 && counts[2] > 0, `both shards hold events (${counts[0]} + ${counts[2]})`)

  const range = `from=${base}&to=${base + rows.length * 1000}`
  const q = (text: string): string => `${range}&q=${encodeURIComponent(text)}`
  const expected = (pred: (r: typeof rows[number]) => boolean): number => rows.filter(pred).length
  for (const node of [a, b]) {
    const name = `node ${node.index + 1}`
    const byUser = await api(node.url, admin, 'GET', `/api/streams/apps/events?${q('user_id:7')}&limit=1000`)
    t.equal(byUser.status, 200)
    t.equal(byUser.body.events.length, expected((r) => r.user_id === 7), `${name}: an attribute`)
    const either = await api(node.url, admin, 'GET', `/api/streams/apps/events?${q('service:checkout OR order.total:>990')}&limit=1000`)
    t.equal(either.body.events.length, expected((r) => r['service.name'] === 'checkout' || r.order.total > 990), `${name}: OR of a column and a comparison`)
    const regex = await api(node.url, admin, 'GET', `/api/streams/apps/events?${q('trace_id:~"^tr-12[0-9]$" -level:error')}&limit=1000`)
    t.equal(regex.body.events.length, expected((r) => /^tr-12[0-9]$/.test(r.trace_id) && r.level !== 'error'), `${name}: a regex and NOT`)

    const stats = await api(node.url, admin, 'GET', `/api/streams/apps/stats?${range}&by=user_id&top=3`)
    t.equal(stats.status, 200)
    t.same(stats.body.groups, [{ value: '0', count: 20 }, { value: '1', count: 20 }, { value: '10', count: 20 }], `${name}: stats?by= an attribute`)
    t.equal(stats.body.totals.count, rows.length)

    const fields = await api(node.url, admin, 'GET', `/api/streams/apps/fields?${range}`)
    t.equal(fields.status, 200)
    const userField = (fields.body.fields as Array<{ name: string, count: number, type: string }>).find((f) => f.name === 'user_id')
    t.match(userField, { kind: 'attribute', type: 'number', count: rows.length }, `${name}: /fields`)

    const hit = await api(node.url, admin, 'GET', `/api/streams/apps/events?${q('trace_id:tr-500')}`)
    t.equal(hit.body.events.length, 1)
    const ctx = await api(node.url, admin, 'GET', `/api/streams/apps/events/${encodeURIComponent(hit.body.events[0].id)}/context?before=3&after=3&same=service`)
    t.equal(ctx.status, 200)
    t.same([...ctx.body.before, ctx.body.event, ...ctx.body.after].map((e: { trace_id: string }) => e.trace_id),
      ['tr-491', 'tr-494', 'tr-497', 'tr-500', 'tr-503', 'tr-506', 'tr-509'], `${name}: context of one service across shards`)
    // same= empty: any neighbour (the anchor's statement then selects no field of its own).
    const any = await api(node.url, admin, 'GET', `/api/streams/apps/events/${encodeURIComponent(hit.body.events[0].id)}/context?before=2&after=2&same=`)
    t.equal(any.status, 200)
    t.same([...any.body.before, any.body.event, ...any.body.after].map((e: { trace_id: string }) => e.trace_id),
      ['tr-498', 'tr-499', 'tr-500', 'tr-501', 'tr-502'], `${name}: context of any neighbour across shards`)

    const exported = await api(node.url, admin, 'GET', `/api/streams/apps/export?${q('service:cart')}`)
    t.equal(exported.status, 200)
    const lines = String(exported.body).trim().split('\n').map((l) => JSON.parse(l) as { ts: number, service: string })
    t.equal(lines.length, expected((r) => r['service.name'] === 'cart'), `${name}: export`)
    t.ok(lines.every((l, i) => l.service === 'cart' && (i === 0 || lines[i - 1].ts <= l.ts)), `${name}: export in ascending time`)
  }
})

t.test('a stream created on node 2 takes ingest on node 1 within the metadata refresh interval', async (t) => {
  const created = await api(b.url, admin, 'POST', '/api/streams', { name: 'from-b' })
  t.equal(created.status, 201)
  const token = await api(b.url, admin, 'POST', '/api/streams/from-b/ingest-token', {})
  t.equal(token.status, 201)
  const res = await waitFor(async () => {
    const r = await ingest(a.url, token.body.token, 'from-b', [{ host: 'x', message: 'hello' }])
    return r.status === 200 ? r : undefined
  }, { what: 'node 1 accepts the token made on node 2', timeoutMs: 10_000, intervalMs: 100, until: isDefined, retryErrors: true })
  t.equal(res.body.ingested, 1)
  // A 200 is a commit on one replica; a read through the other may wait for replication.
  const events = await waitFor(async () => {
    const e = await eventsThrough(b.url, 'from-b')
    return e.length > 0 ? e : undefined
  }, { what: 'node 2 reads it', timeoutMs: 30_000, intervalMs: 200, until: isDefined, retryErrors: true })
  t.equal(events.length, 1, 'node 2 reads what node 1 stored')
})

/**
 * A TCP proxy to one ClickHouse host that, once armed, forwards the next request whole and then
 * cuts the client's connection at the first byte of the answer: ClickHouse received the body
 * and committed the insert (it answers an INSERT only at its end), the client never learns it.
 */
async function startCuttingProxy (target: string): Promise<{ url: string, arm (): void, cuts: number, close (): Promise<void> }> {
  const port = Number(new URL(target).port)
  let armed = false
  const sockets = new Set<Socket>()
  const state = { cuts: 0 }
  const server = createServer((client) => {
    const upstream = connect(port, '127.0.0.1')
    for (const s of [client, upstream]) { sockets.add(s); s.on('error', () => {}); s.on('close', () => sockets.delete(s)) }
    client.pipe(upstream)
    upstream.on('data', (d: Buffer) => {
      if (armed) { armed = false; state.cuts++; client.destroy(); upstream.destroy(); return }
      client.write(d)
    })
    upstream.on('end', () => client.end())
    client.on('close', () => upstream.destroy())
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    arm () { armed = true },
    get cuts () { return state.cuts },
    async close () { for (const s of sockets) s.destroy(); await new Promise((resolve) => server.close(resolve)) },
  }
}

t.test('an ingest token revoked on node 1 is refused on node 2 within the metadata refresh interval', async (t) => {
  const token = await streamWithToken(admin, a.url, b.url, 'revoked')
  t.equal((await ingest(b.url, token, 'revoked', [{ message: 'before' }])).status, 200, 'node 2 takes the token')
  const tokens = await api(a.url, admin, 'GET', '/api/streams/revoked/ingest-tokens')
  t.equal((await api(a.url, admin, 'DELETE', `/api/streams/revoked/ingest-tokens/${tokens.body.tokens[0].id}`)).status, 204)
  t.equal((await ingest(a.url, token, 'revoked', [{ message: 'after' }])).body.error, 'invalid_token', 'node 1 refuses it at once')
  const refused = await waitFor(async () => {
    const r = await ingest(b.url, token, 'revoked', [{ message: 'after' }])
    return r.status === 403 ? r : undefined
  }, { what: 'node 2 refuses the revoked token', timeoutMs: 10_000, intervalMs: 100, until: isDefined, retryErrors: true })
  t.equal(refused.body.error, 'invalid_token')
})

t.test('the per-org limits are shared by the live nodes', async (t) => {
  const token = await streamWithToken(admin, a.url, b.url, 'limits')
  // Each node enforces limits.requestsPerMinute (3000) / 2 live nodes.
  for (const node of [a, b]) {
    const res = await waitFor(async () => {
      const r = await ingest(node.url, token, 'limits', [{ message: 'x' }])
      return r.headers['x-ratelimit-limit'] === '1500' ? r : undefined
    }, { what: `node ${node.index + 1} counts both nodes`, timeoutMs: 10_000, intervalMs: 100, until: isDefined, retryErrors: true })
    t.equal(res.status, 200, `node ${node.index + 1} takes half of the org's request rate`)
  }
})

t.test('an insert whose answer was lost after ClickHouse committed it is retried to the same shard and stored once', async (t) => {
  const proxy = await startCuttingProxy(cluster.clickhouseUrls[0])
  t.teardown(() => proxy.close())
  const log = createLogger({ level: 'silent' })
  const client = { user: 'default', password: '', database: db, requestTimeoutMs: 10_000 }
  const shards = new ShardSet({ urls: [proxy.url], client, log })
  await shards.start()
  t.teardown(() => shards.close())
  const clickhouse = createClickHouse({ ...client, url: cluster.clickhouseUrls[0] })
  t.teardown(() => clickhouse.close())
  const attempts: InsertStats[] = []
  const writer = createBatchWriter({
    clickhouse, shards, table: 'events_local', columns: ['org_id', 'stream', 'ts', 'received_at', 'attrs', 'seq', 'size'], log,
    maxBatchRows: 1000, flushIntervalMs: 0, minInsertIntervalMs: 0, idleInsertIntervalMs: 0, retryTimeoutMs: 5000, attemptTimeoutMs: 3000, maxPendingBytes: 1 << 20,
    onInsert: (s) => attempts.push(s),
  })
  const now = Date.now()
  const rows = Array.from({ length: 50 }, (_, i) => `o\tonce\t${now}\t${now}\t{}\t${i}\t10\n`).join('')
  proxy.arm()
  await writer.write([Buffer.from(rows)], 50) // resolves: the retry's answer came back
  await writer.close()
  t.equal(proxy.cuts, 1, 'the first answer was cut')
  t.strictSame(attempts.map((s) => [s.ok, s.ambiguous]), [[false, true], [true, false]], 'an ambiguous attempt, then a successful retry')
  const stored = Number(await hostSql(cluster.clickhouseUrls[0], `SELECT count() FROM ${db}.events_local WHERE stream = 'once'`))
  t.equal(stored, 50, 'stored once: the replicated table dropped the retried block')
})

const day = 86_400_000
const rowColumns = 'org_id, stream, ts, received_at, host, path, method, status, rt, bytes, src, user_agent, message, filename, attrs, seq, size'
/** A TabSeparated row of the default org's `stream` at `ts` with seq `i`, for insertRows. */
function row (store: MetadataStore, stream: string, ts: number, i: number): string {
  return [store.orgByName('default')!.id, stream, ts, Date.now(), 'h', '/p', 'GET', 200, 0.1, 1, '\\N', '\\N', '\\N', '\\N', '{}', i, 10].join('\t')
}
/** Rows straight into one host's local events table (the rollups' views run as for any insert). */
function insertRows (url: string, rows: string[]): Promise<string> {
  return hostSql(url, `INSERT INTO ${db}.events_local (${rowColumns}) FORMAT TabSeparated\n${rows.join('\n')}\n`)
}

t.test('a stream deletion and retention reach every shard', async (t) => {
  const token = await streamWithToken(admin, a.url, b.url, 'doomed')
  t.strictSame(await sendAlternating([a.url, b.url], token, 'doomed', 6, 10, 'doomed'), Array(6).fill(200))
  const deleted = await api(b.url, admin, 'DELETE', '/api/streams/doomed')
  t.equal(deleted.status, 204)
  await waitFor(async () => {
    const c = await localCounts('doomed')
    return c.every((n) => n === 0) ? c : undefined
  }, { what: 'the deletion mutations ran on every shard and replica', timeoutMs: 180_000, intervalMs: 200, until: isDefined, retryErrors: true })
  t.pass('no row of the deleted stream is left on any host')

  t.equal((await api(a.url, admin, 'POST', '/api/streams', { name: 'keep1', retention_days: 1 })).status, 201)
  // 180 s, ClickHouse's own distributed_ddl_task_timeout: retention's ALTER ... ON CLUSTER waits
  // for every host (over 10 s on a loaded box, and past 60 s once in a full CI run beside a
  // browser test).
  const clickhouse = createClickHouse({ url: cluster.clickhouseUrls[0], user: 'default', password: '', database: db, requestTimeoutMs: 180_000 })
  t.teardown(() => clickhouse.close())
  const log = createLogger({ level: 'silent' })
  const store = new MetadataStore({ clickhouse, log, refreshIntervalMs: 60_000, cluster: cluster.cluster })
  await store.reload()
  const now = Date.now()
  // Each shard gets an old and a young row of the 1-day stream.
  await insertRows(cluster.clickhouseUrls[0], [row(store, 'keep1', now - 3 * day, 1), row(store, 'keep1', now - 3_600_000, 2)])
  await insertRows(cluster.clickhouseUrls[2], [row(store, 'keep1', now - 3 * day, 3), row(store, 'keep1', now - 3_600_000, 4)])
  const result = await enforceRetention(clickhouse, store, now, log, cluster.cluster)
  t.equal(result.deletedStreams, 1, 'the short-retention stream is trimmed')
  const seqs = await waitFor(async () => {
    const out = await hostSql(cluster.clickhouseUrls[3], `SELECT seq FROM ${db}.events WHERE stream = 'keep1' ORDER BY seq FORMAT TSV`)
    return out === '2\n4' ? out : undefined
  }, { what: 'the old rows are gone from both shards', timeoutMs: 180_000, intervalMs: 200, until: isDefined, retryErrors: true })
  t.equal(seqs, '2\n4', 'the young rows of both shards stay')
  await store.stop()
})

/** Per host, the mutations not done; then the DDL queue entries fewer than four hosts finished. */
async function purgeBlockers (): Promise<string[]> {
  const queue = '/clickhouse/task_queue/ddl'
  const out = await Promise.all(cluster.clickhouseUrls.map(async (url, i) => {
    const mutations = await hostSql(url, `SELECT table, mutation_id, parts_to_do FROM system.mutations
      WHERE database = '${db}' AND is_done = 0 FORMAT TSV`).catch((err: Error) => err.message)
    return `host ${i}: mutations not done [${mutations.replaceAll('\n', '; ')}]`
  }))
  const url = cluster.clickhouseUrls[0]
  const names = (await hostSql(url, `SELECT name FROM system.zookeeper WHERE path = '${queue}' ORDER BY name FORMAT TSV`)).split('\n').filter(Boolean)
  for (const name of names.slice(-40)) {
    // Each host's status: "0" when it ran the statement, else the error's code and message.
    const done = await hostSql(url, `SELECT groupArray(concat(name, ' ', replaceAll(value, '\\n', ' '))) FROM system.zookeeper
      WHERE path = '${queue}/${name}/finished' FORMAT TSV`).catch((err: Error) => err.message)
    if ((done.match(/ 0 /g)?.length ?? 0) < 4) out.push(`${name} finished by ${done}`)
  }
  return out
}

t.test('a host down: a stream deletion and retention go on without it, and it catches up when back', async (t) => {
  // s2r1, as in 'one replica down' below: no node reads from it.
  const down = 2
  await cluster.stopClickHouse(down)
  // Mutations on a loaded machine can take minutes (the waits below are generous); should one
  // still fail, the host comes back for the tests after this one.
  let restarted = false
  t.teardown(async () => { if (!restarted) await cluster.startClickHouse(down) })

  // A stream deleted with a host down: the DELETE answers once the live hosts ran each
  // statement (the node waits 2 s per statement for the others), the live hosts delete at once,
  // and the purge is recorded only once the returning host has run its queue too.
  const doomedToken = await streamWithToken(admin, a.url, b.url, 'doomed2')
  t.strictSame(await sendAlternating([a.url, b.url], doomedToken, 'doomed2', 4, 10, 'doomed2'), Array(4).fill(200))
  t.equal((await api(a.url, admin, 'DELETE', '/api/streams/doomed2')).status, 204, 'a stream is deleted with a host down')
  await waitFor(async () => {
    const c = await Promise.all([0, 1, 3].map((i) => hostSql(cluster.clickhouseUrls[i], `SELECT count() FROM ${db}.events_local WHERE stream = 'doomed2'`)))
    return c.every((n) => n === '0') ? c : { c, pending: await purgeBlockers() }
  }, { what: 'the live hosts deleted the stream', timeoutMs: 180_000, intervalMs: 200, until: (v) => Array.isArray(v), retryErrors: true })
  const purgedAt = (): Promise<string> => hostSql(cluster.clickhouseUrls[0], `SELECT max(purged_at) FROM ${db}.stream_deletions FINAL WHERE name = 'doomed2'`)
  t.equal(await purgedAt(), '0', 'no purge recorded while a host has not run the deletion')

  // Retention with a host down: each ON CLUSTER statement waits at most its DDL wait for the
  // hosts (1 s here), then the janitor goes on; the live hosts delete at once, the returning one
  // from the DDL queue and replication.
  t.equal((await api(a.url, admin, 'POST', '/api/streams', { name: 'keep2', retention_days: 1 })).status, 201)
  const retentionClient = createClickHouse({ url: cluster.clickhouseUrls[0], user: 'default', password: '', database: db, requestTimeoutMs: 60_000 })
  t.teardown(() => retentionClient.close())
  const log = createLogger({ level: 'silent' })
  const store = new MetadataStore({ clickhouse: retentionClient, log, refreshIntervalMs: 60_000, cluster: cluster.cluster })
  await store.reload()
  const now = Date.now()
  await insertRows(cluster.clickhouseUrls[0], [row(store, 'keep2', now - 3 * day, 1), row(store, 'keep2', now - 3_600_000, 2)])
  await insertRows(cluster.clickhouseUrls[3], [row(store, 'keep2', now - 3 * day, 3), row(store, 'keep2', now - 3_600_000, 4)])
  const trimmed = await enforceRetention(retentionClient, store, now, log, cluster.cluster, false, 1)
  t.equal(trimmed.deletedStreams, 1, 'retention goes on with a host down: the statements wait for it no longer than the DDL wait')
  await store.stop()
  await waitFor(async () => {
    const out = await hostSql(cluster.clickhouseUrls[3], `SELECT seq FROM ${db}.events WHERE stream = 'keep2' ORDER BY seq FORMAT TSV`)
    return out === '2\n4' ? out : undefined
  }, { what: 'the live hosts deleted the old rows', timeoutMs: 180_000, intervalMs: 200, until: isDefined, retryErrors: true })
  t.pass('the old rows are gone while a host is down')

  await cluster.startClickHouse(down)
  restarted = true
  await waitFor(async () => {
    const out = await Promise.all(['doomed2', 'keep2'].map((stream) =>
      hostSql(cluster.clickhouseUrls[down], `SELECT groupArray(seq) FROM (SELECT seq FROM ${db}.events_local WHERE stream = '${stream}' ORDER BY seq)`)))
    return out[0] === '[]' && out[1] === '[4]' ? out : undefined
  }, { what: 'the returned host ran the deletion and the retention delete', timeoutMs: 180_000, intervalMs: 200, until: isDefined, retryErrors: true })
  t.pass('the returned host deleted the stream and the old rows too')
  // The probe's last value names what still held the purge back, should the wait fail.
  await waitFor(async () => Number(await purgedAt()) > 0 ? { purged: true } : { purged: false, pending: await purgeBlockers() },
    { what: 'the purge is recorded once the returned host ran the deletion', timeoutMs: 180_000, intervalMs: 200, until: (v) => v.purged, retryErrors: true })
  t.pass('the purge is recorded once every host ran the deletion')
})

t.test('insert_quorum: a write resolves once both replicas hold it; a shard short of replicas takes no batch', async (t) => {
  const log = createLogger({ level: 'silent' })
  const client = { user: 'default', password: '', database: db, requestTimeoutMs: 10_000 }
  const shards = new ShardSet({ urls: cluster.clickhouseUrls, client, log })
  await shards.start()
  t.teardown(() => shards.close())
  const clickhouse = createClickHouse({ ...client, url: cluster.clickhouseUrls[0] })
  t.teardown(() => clickhouse.close())
  const writer = createBatchWriter({
    clickhouse, shards, insertQuorum: 2, table: 'events_local', columns: ['org_id', 'stream', 'ts', 'received_at', 'attrs', 'seq', 'size'], log,
    maxBatchRows: 1000, flushIntervalMs: 0, minInsertIntervalMs: 0, idleInsertIntervalMs: 0, retryTimeoutMs: 5000, attemptTimeoutMs: 3000, maxPendingBytes: 1 << 20,
  })
  const rows = (stream: string, n: number): Buffer => {
    const now = Date.now()
    return Buffer.from(Array.from({ length: n }, (_, i) => `o\t${stream}\t${now}\t${now}\t{}\t${i}\t10\n`).join(''))
  }
  const count = async (url: string, stream: string): Promise<number> =>
    Number(await hostSql(url, `SELECT count() FROM ${db}.events_local WHERE stream = '${stream}'`))
  for (let i = 0; i < 4; i++) await writer.write([rows(`quorum-${i}`, 20)], 20) // round robin: both shards
  for (let i = 0; i < 4; i++) {
    const perHost = await Promise.all(cluster.clickhouseUrls.map((url) => count(url, `quorum-${i}`)))
    const shard = perHost[0] > 0 ? 0 : 1
    t.strictSame(shardHosts[shard].map((h) => perHost[h]), [20, 20], `write ${i}: on both replicas of shard ${shard + 1} at once`)
  }
  await cluster.stopClickHouse(1) // s1r2: shard 1 can no longer reach a quorum of 2
  for (let i = 0; i < 4; i++) await writer.write([rows(`short-${i}`, 20)], 20)
  for (let i = 0; i < 4; i++) {
    t.equal(await count(cluster.clickhouseUrls[0], `short-${i}`), 0, `write ${i}: not on shard 1`)
    t.equal(await count(cluster.clickhouseUrls[2], `short-${i}`), 20, `write ${i}: on shard 2`)
  }
  await writer.close()
  await cluster.startClickHouse(1)
})

t.test('one replica down: every request still answers 200 and every query still sees everything', async (t) => {
  const token = await streamWithToken(admin, a.url, b.url, 'degraded')
  // s2r1: no node reads from it, and it is the replica shard 2's batches go to first, so the
  // writer meets its absence (refused, retried on another host) as do Distributed reads.
  const down = 2
  await cluster.stopClickHouse(down)
  const requests = 12
  const lines = 10
  const statuses = await sendAlternating([cluster.url], token, 'degraded', requests, lines, 'degraded')
  t.strictSame(statuses, Array(requests).fill(200), 'every request through the load balancer answered 200')
  // What a node does at start: with the schema current it runs no ON CLUSTER DDL, which would
  // wait for the missing host.
  const clickhouse = createClickHouse({ url: cluster.clickhouseUrls[0], user: 'default', password: '', database: db, requestTimeoutMs: 10_000 })
  t.strictSame((await migrate(clickhouse, createLogger({ level: 'silent' }), undefined, { cluster: cluster.cluster })).applied, [],
    'a node starts while a replica is down')
  await clickhouse.close()
  for (const node of [a, b]) {
    const events = await waitFor(async () => {
      const e = await eventsThrough(node.url, 'degraded')
      return e.length >= requests * lines ? e : undefined
    }, { what: `node ${node.index + 1} reads every event (after replication)`, timeoutMs: 30_000, intervalMs: 200, until: isDefined, retryErrors: true })
    t.equal(events.length, requests * lines, `node ${node.index + 1} reads every event`)
  }

  await cluster.startClickHouse(down)
  await waitFor(async () => {
    const c = await localCounts('degraded')
    return c[2] === c[3] ? c : undefined
  }, { what: 'the returned replica caught up with its shard', timeoutMs: 60_000, intervalMs: 200, until: isDefined, retryErrors: true })
  t.pass('replica back and in step')
})

t.test('both replicas of one shard down: writes go to the other shard, reads answer 503 storage_unavailable, nothing acknowledged is lost', async (t) => {
  const token = await streamWithToken(admin, a.url, b.url, 'shard-down')
  const before = await sendAlternating([a.url], token, 'shard-down', 4, 10, 'before')
  t.strictSame(before, [200, 200, 200, 200])
  await Promise.all([cluster.stopClickHouse(2), cluster.stopClickHouse(3)]) // shard 2; node 2 reads from s2r2
  t.equal((await api(b.url, null, 'GET', '/readyz')).status, 503, 'node 2, its nearest ClickHouse gone, is not ready')
  const during = await sendAlternating([a.url], token, 'shard-down', 8, 10, 'during')
  t.strictSame(during, Array(8).fill(200), 'node 1 stores every request on shard 1')
  const read = await api(a.url, admin, 'GET', '/api/streams/shard-down/events?from=now-1h&to=now%2B1h')
  t.equal(read.status, 503, 'a read over every shard cannot answer with one missing')
  t.equal(read.body.error, 'storage_unavailable')
  t.ok(Number(read.headers['retry-after']) >= 1, 'with Retry-After')
  await Promise.all([cluster.startClickHouse(2), cluster.startClickHouse(3)])
  const events = await waitFor(() => eventsThrough(a.url, 'shard-down'), { what: 'reads answer again', timeoutMs: 60_000, intervalMs: 500, until: isDefined, retryErrors: true })
  t.equal(events.length, 120, 'every acknowledged row is there')
  await waitFor(async () => (await api(b.url, null, 'GET', '/readyz')).status === 200 ? true : undefined, { what: 'node 2 is ready again', timeoutMs: 60_000, intervalMs: 500, until: isDefined, retryErrors: true })
})

t.test('ZooKeeper down: writes answer 503 with Retry-After and store nothing; ingest recovers by itself once it is back', async (t) => {
  const token = await streamWithToken(admin, a.url, b.url, 'zk-down')
  await cluster.stopZooKeeper()
  const lines = (tag: string): object[] => Array.from({ length: 10 }, (_, k) => ({ host: 'zk', tag, line: k }))
  const answers = await Promise.all([a.url, b.url, a.url].map((node, i) => ingest(node, token, 'zk-down', lines(`down-${i}`))))
  for (const res of answers) {
    t.equal(res.status, 503, 'no commit without ZooKeeper')
    t.ok(['storage_unavailable', 'storage_outcome_unknown'].includes(res.body.error), `code ${res.body.error}`)
    t.ok(Number(res.headers['retry-after']) >= 1, 'with Retry-After')
  }
  await cluster.startZooKeeper()
  const back = Date.now()
  const recovered = await waitFor(async () => {
    const res = await ingest(a.url, token, 'zk-down', lines('after'))
    return res.status === 200 ? res : undefined
  }, { what: 'a write succeeds again', timeoutMs: 60_000, intervalMs: 250, until: isDefined, retryErrors: true })
  t.equal(recovered.body.ingested, 10)
  t.comment(`ingest recovered ${Date.now() - back} ms after ZooKeeper answered again`)
  const stored = await waitFor(async () => {
    const e = await eventsThrough(a.url, 'zk-down')
    return e.length >= 10 ? e : undefined
  }, { what: 'the acknowledged rows are readable (replication)', timeoutMs: 30_000, intervalMs: 200, until: isDefined, retryErrors: true })
  const unknown = answers.filter((r) => r.body.error === 'storage_outcome_unknown').length
  t.ok(stored.length >= 10 && stored.length <= 10 + unknown * 10, `only the acknowledged rows, and those whose outcome was unknown (${stored.length})`)
})
