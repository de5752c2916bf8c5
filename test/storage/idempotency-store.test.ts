// Idempotency keys in ClickHouse (lib/storage/idempotency-store.ts) behind IdempotencyCache: two
// caches on one ClickHouse stand for two nodes, or one node before and after a restart.
import t from 'tap'
import type { Test } from 'tap'
import { createTestDatabase } from '../helpers/clickhouse.ts'
import { migrate } from '../../lib/storage/migrate.ts'
import { dropExpiredKeys, IdempotencyStore } from '../../lib/storage/idempotency-store.ts'
import { createClickHouse } from '../../lib/storage/clickhouse.ts'
import { IdempotencyCache } from '../../lib/ingest/idempotency.ts'
import type { StoredAnswer } from '../../lib/ingest/idempotency.ts'
import { SluiceError } from '../../lib/errors.ts'
import { createLogger } from '../../lib/logger.ts'
import { realTimer } from '../../lib/storage/pending-write.ts'

const log = createLogger({ level: 'silent' })
const ok = (n: number): StoredAnswer => ({ status: 200, body: { ingested: n, request_id: `req-${n}` } })

/**
 * A store closed when `t` ends, before its database is dropped (teardowns run last first): no
 * write of its is in flight beside the DROP (on the embedded engine a test process once failed
 * to exit after all its tests passed).
 */
function storeFor (t: Test, options: ConstructorParameters<typeof IdempotencyStore>[0]): IdempotencyStore {
  const store = new IdempotencyStore(options)
  t.teardown(() => store.close())
  return store
}

t.test('an answer recorded by one node is replayed by another (or after a restart), within the window', async (t) => {
  const { clickhouse } = await createTestDatabase(t)
  await migrate(clickhouse, log)
  let now = 10_000_000
  const clock = (): number => now
  const storeA = storeFor(t, { clickhouse, log, now: clock })
  const storeB = storeFor(t, { clickhouse, log, now: clock })
  const nodeA = new IdempotencyCache(1_000, 100, clock, storeA)
  const nodeB = new IdempotencyCache(1_000, 100, clock, storeB)
  let runs = 0
  t.same(await nodeA.once('org/s/tok', 'k1', 'req-1', async () => { runs++; return ok(3) }), { answer: ok(3), replayed: false })
  await storeA.flushed()
  t.equal(storeA.pending, 0, 'recorded')
  t.same(await nodeB.once('org/s/tok', 'k1', 'req-2', async () => { runs++; return ok(9) }), { answer: ok(3), replayed: true })
  t.equal(runs, 1, 'node B did not run its attempt')
  t.equal((await nodeB.once('org/s/other', 'k1', 'req-3', async () => { runs++; return ok(4) })).replayed, false, 'the key is scoped')

  // Node B keeps what it found only until the first node's expiry, not a window of its own.
  now += 999
  t.equal((await nodeB.once('org/s/tok', 'k1', 'req-4', async () => { runs++; return ok(5) })).replayed, true)
  now += 1
  const storeC = storeFor(t, { clickhouse, log, now: clock })
  const nodeC = new IdempotencyCache(1_000, 100, clock, storeC)
  t.same(await nodeC.once('org/s/tok', 'k1', 'req-5', async () => { runs++; return ok(6) }), { answer: ok(6), replayed: false }, 'expired everywhere')
  // Node B no longer replays the expired answer: it finds node C's new one (once C's row is written).
  await storeC.flushed()
  t.same(await nodeB.once('org/s/tok', 'k1', 'req-6', async () => { runs++; return ok(7) }), { answer: ok(6), replayed: true }, 'expired on B too: the new answer is replayed')
  t.equal(runs, 3, 'only A and C ran it, and the other scope')
})

t.test('client errors and binary answers are recorded; retryable outcomes are not', async (t) => {
  const { clickhouse } = await createTestDatabase(t)
  await migrate(clickhouse, log)
  const storeA = storeFor(t, { clickhouse, log })
  const nodeA = new IdempotencyCache(600_000, 100, Date.now, storeA)
  const nodeB = new IdempotencyCache(600_000, 100, Date.now, storeFor(t, { clickhouse, log }))

  await t.rejects(nodeA.once('s', 'bad', 'req-1', async () => { throw new SluiceError('empty_body', 'no lines') }), { code: 'empty_body' })
  const protobuf: StoredAnswer = { status: 200, body: new Uint8Array([0, 1, 2, 255]), contentType: 'application/x-protobuf' }
  await nodeA.once('s', 'bin', 'req-2', async () => protobuf)
  await nodeA.once('s', 'empty', 'req-3', async () => ({ status: 204, body: null }))
  await t.rejects(nodeA.once('s', 'busy', 'req-4', async () => { throw new SluiceError('storage_unavailable', undefined, { retryAfter: 1 }) }), { code: 'storage_unavailable' })
  await storeA.flushed()

  const bad = await nodeB.once('s', 'bad', 'req-5', async () => ok(1))
  t.equal(bad.replayed, true)
  t.equal(bad.answer.status, 400)
  t.match(bad.answer.body, { error: 'empty_body', message: 'no lines', request_id: 'req-1' })
  t.same(await nodeB.once('s', 'bin', 'req-6', async () => ok(1)), { answer: protobuf, replayed: true }, 'bytes and content type kept')
  t.same(await nodeB.once('s', 'empty', 'req-7', async () => ok(1)), { answer: { status: 204, body: null }, replayed: true })
  t.same(await nodeB.once('s', 'busy', 'req-8', async () => ok(2)), { answer: ok(2), replayed: false }, 'a 503 is not recorded: the retry runs')
})

t.test('a ClickHouse that fails the lookup: 503 storage_unavailable, the attempt does not run (an earlier one may be stored)', async (t) => {
  const { url } = await createTestDatabase(t)
  const missing = createClickHouse({ url, database: 'sluice_no_such_database', user: 'default', password: '', requestTimeoutMs: 5_000 })
  t.teardown(() => missing.close())
  const store = new IdempotencyStore({ clickhouse: missing, log })
  const cache = new IdempotencyCache(600_000, 100, Date.now, store)
  let runs = 0
  await t.rejects(cache.once('s', 'k', 'req-1', async () => { runs++; return ok(1) }), { code: 'storage_unavailable', retryAfter: 5 })
  t.equal(runs, 0)
  await store.close()
})

t.test('a lookup given time keeps trying through an outage: answered once storage is back, refused (503, Retry-After 5) when it is not back in time', async (t) => {
  // The outage: a database whose idempotency_keys table does not exist yet (ClickHouse answers
  // each try with an error, as a restarting server's connection refusals would), made while the
  // store waits before its third try. The store's clock and its sleeps are the test's: a sleep
  // advances the clock and returns at once (the tries' own 1 s timeouts stay real).
  const { clickhouse } = await createTestDatabase(t)
  const lookupTimeoutMs = 1000
  const sleeps: number[] = []
  let now = 50_000_000
  let onSleep = async (): Promise<void> => {}
  const setTimer = (fn: () => void, ms: number): (() => void) => {
    if (ms === lookupTimeoutMs) return realTimer(fn, ms)
    sleeps.push(ms)
    now += ms
    void onSleep().then(fn)
    return () => {}
  }
  const store = storeFor(t, { clickhouse, log, now: () => now, setTimer, lookupTimeoutMs, lookupRetryGapMs: 500 })

  // Not back within the wait: 4,000 ms of sleeps in gaps of 500, then 503 with storage's Retry-After.
  const waiting = new IdempotencyCache(600_000, 100, () => now, store, 4_000)
  let runs = 0
  await t.rejects(waiting.once('s', 'k', 'req-1', async () => { runs++; return ok(1) }), { code: 'storage_unavailable', retryAfter: 5 })
  t.strictSame(sleeps, Array(8).fill(500), 'tried every 500 ms until the wait was spent')
  t.equal(runs, 0, 'the attempt did not run')

  // Back before the third try: the lookup is answered (no earlier attempt), and the attempt runs.
  sleeps.length = 0
  onSleep = async () => { if (sleeps.length === 2) await migrate(clickhouse, log) }
  const answer = await waiting.once('s', 'k2', 'req-2', async () => { runs++; return ok(2) })
  t.strictSame(answer, { answer: ok(2), replayed: false })
  t.strictSame(sleeps, [500, 500], 'answered at the third try')
  t.equal(runs, 1)
})

t.test('a pending key: settled by counting its rows; stored, the answer is replayed; absent, the retry runs', async (t) => {
  const { clickhouse } = await createTestDatabase(t)
  await migrate(clickhouse, log)
  const storeA = storeFor(t, { clickhouse, log, settleGapMs: 10 })
  const storeB = storeFor(t, { clickhouse, log, settleGapMs: 10, holdMs: 0, repairPartial: true })
  const nodeA = new IdempotencyCache(600_000, 100, Date.now, storeA)
  const nodeB = new IdempotencyCache(600_000, 100, Date.now, storeB)
  const row = (seq: number) => `('org1', 'pend', ${Date.now()}, ${Date.now()}, ${seq}, 10)`
  // Attempts on node A whose rows went to the writer and whose answers were lost (503 unknown).
  // 'partial': a body cut off when its node was killed (18.16 stores the rows before the cut).
  for (const [key, seqBase, stored] of [['stored', 2 ** 25, 2], ['absent', 2 * 2 ** 25, 0], ['partial', 3 * 2 ** 25, 1]] as const) {
    await t.rejects(nodeA.once('s', key, 'req-a', async (commit) => {
      await commit.beforeWrite({ orgId: 'org1', stream: 'pend', seqBase, rows: 2, answer: ok(2) })
      if (stored > 0) await clickhouse.command(`INSERT INTO events (org_id, stream, ts, received_at, seq, size) VALUES ${[row(seqBase), row(seqBase + 1)].slice(0, stored).join(', ')}`)
      throw new SluiceError('storage_outcome_unknown', undefined, { retryAfter: 1 })
    }), { code: 'storage_outcome_unknown' })
  }
  let runs = 0
  // Node B (or A after a restart) gets the retries.
  t.same(await nodeB.once('s', 'stored', 'req-b', async () => { runs++; return ok(9) }), { answer: ok(2), replayed: true }, 'stored: replayed')
  // The retry that runs after settling knows it (its writer budget starts then: ingest-pipeline.ts).
  const settledRuns: boolean[] = []
  t.same(await nodeB.once('s', 'absent', 'req-c', async (commit) => { runs++; settledRuns.push(commit.afterSettling); return ok(3) }), { answer: ok(3), replayed: false }, 'absent: run')
  t.equal(runs, 1)
  t.same(await nodeB.once('s', 'partial', 'req-e', async (commit) => { runs++; settledRuns.push(commit.afterSettling); return ok(4) }), { answer: ok(4), replayed: false }, 'partly stored: its rows deleted, then run')
  t.same(await nodeB.once('s', 'new-key', 'req-f', async (commit) => { settledRuns.push(commit.afterSettling); return ok(1) }), { answer: ok(1), replayed: false })
  t.same(settledRuns, [true, true, false], 'afterSettling: for the runs after a pending record was settled absent only')
  const [left] = await clickhouse.query<{ n: number }>(`SELECT count() AS n FROM events WHERE seq >= ${3 * 2 ** 25}`)
  t.equal(Number(left.n), 0, 'the cut-off rows are gone')
  t.equal(runs, 2)
  // Node A's own retry of the stored key, after it recorded the answer final.
  await storeB.flushed()
  t.same(await nodeA.once('s', 'stored', 'req-d', async () => { runs++; return ok(8) }), { answer: ok(2), replayed: true })
  t.equal(runs, 2)
})

t.test('the janitor drops the hours whose keys have all expired', async (t) => {
  const { clickhouse } = await createTestDatabase(t)
  await migrate(clickhouse, log)
  const hour = 3_600_000
  const now = 500 * hour + 1_000
  const store = storeFor(t, { clickhouse, log })
  store.record('s', 'old', '{"status":200,"body":null}', '', now - 3 * hour, 498 * hour + 5) // hour 498, expired
  store.record('s', 'late', '{"status":200,"body":null}', '', now - hour, 500 * hour - 5) // hour 499, expired
  store.record('s', 'live', '{"status":200,"body":null}', '', now - 1_000, now + 600_000) // hour 500
  await store.flushed()
  t.equal(await dropExpiredKeys(clickhouse, now), 2)
  const left = await clickhouse.query<{ key: string }>('SELECT key FROM idempotency_keys ORDER BY key')
  t.same(left.map((r) => r.key), ['live'])
  t.equal(await dropExpiredKeys(clickhouse, now), 0, 'the live hour stays')
})
