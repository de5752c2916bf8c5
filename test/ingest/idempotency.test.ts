// IdempotencyCache#once, the retry loop every ingest input shares: one attempt per key, its final
// answer replayed, retryable outcomes forgotten, a waiting retry running its own attempt then.
import t from 'tap'
import { IdempotencyCache } from '../../lib/ingest/idempotency.ts'
import type { StoredAnswer } from '../../lib/ingest/idempotency.ts'
import { SluiceError } from '../../lib/errors.ts'

const ok = (n: number): StoredAnswer => ({ status: 200, body: { ingested: n } })

t.test('a second call with the key replays the first answer without running its attempt', async (t) => {
  const cache = new IdempotencyCache()
  let runs = 0
  const first = await cache.once('org/s/tok', 'k1', 'req-1', async () => { runs++; return ok(3) })
  t.same(first, { answer: ok(3), replayed: false })
  const again = await cache.once('org/s/tok', 'k1', 'req-2', async () => { runs++; return ok(9) })
  t.same(again, { answer: ok(3), replayed: true })
  t.equal(runs, 1)
  const otherScope = await cache.once('org/s/other-token', 'k1', 'req-3', async () => { runs++; return ok(5) })
  t.equal(otherScope.replayed, false, 'the key is scoped')
  t.equal(runs, 2)
})

t.test('a concurrent retry waits for the running attempt and gets its answer', async (t) => {
  const cache = new IdempotencyCache()
  let finish!: (answer: StoredAnswer) => void
  const first = cache.once('s', 'k', 'req-1', () => new Promise<StoredAnswer>((resolve) => { finish = resolve }))
  let secondRan = false
  const second = cache.once('s', 'k', 'req-2', async () => { secondRan = true; return ok(0) })
  finish(ok(7))
  t.same(await first, { answer: ok(7), replayed: false })
  t.same(await second, { answer: ok(7), replayed: true })
  t.notOk(secondRan)
})

t.test('a client error is kept in the error shape; a retryable one is forgotten and the waiting retry runs', async (t) => {
  const cache = new IdempotencyCache()
  await t.rejects(cache.once('s', 'bad', 'req-1', async () => { throw new SluiceError('empty_body', 'no lines') }), { code: 'empty_body' })
  const replayed = await cache.once('s', 'bad', 'req-2', async () => ok(1))
  t.equal(replayed.replayed, true)
  t.equal(replayed.answer.status, 400)
  t.match(replayed.answer.body, { error: 'empty_body', message: 'no lines', request_id: 'req-1' })

  let fail!: (err: unknown) => void
  const first = cache.once('s', 'busy', 'req-3', () => new Promise<StoredAnswer>((_resolve, reject) => { fail = reject }))
  const retry = cache.once('s', 'busy', 'req-4', async () => ok(2))
  fail(new SluiceError('storage_unavailable', undefined, { retryAfter: 1 }))
  await t.rejects(first, { code: 'storage_unavailable' })
  t.same(await retry, { answer: ok(2), replayed: false }, 'the retry ran its own attempt')
  t.same(await cache.once('s', 'busy', 'req-5', async () => ok(8)), { answer: ok(2), replayed: true })
})

t.test('an answer is replayed within the window only', async (t) => {
  let clock = 0
  const cache = new IdempotencyCache(1_000, 100, () => clock)
  await cache.once('s', 'k', 'req-1', async () => ok(1))
  clock = 999
  t.equal((await cache.once('s', 'k', 'req-2', async () => ok(2))).replayed, true)
  clock = 1_000
  t.same(await cache.once('s', 'k', 'req-3', async () => ok(3)), { answer: ok(3), replayed: false })
})

t.test('a replay is checked against the first request\'s fingerprint; an unknown one is not compared', async (t) => {
  const cache = new IdempotencyCache()
  const print = (mine: string): { fingerprint: () => string, check: (first: string) => Promise<void> } => ({
    fingerprint: () => mine,
    check: async (first) => { if (first !== '' && first !== mine) throw new SluiceError('idempotency_key_reused') },
  })
  await cache.once('s', 'k', 'req-1', async () => ok(1), print('aaa'))
  t.same(await cache.once('s', 'k', 'req-2', async () => ok(2), print('aaa')), { answer: ok(1), replayed: true })
  await t.rejects(cache.once('s', 'k', 'req-3', async () => ok(3), print('bbb')), { code: 'idempotency_key_reused' })
  t.same(await cache.once('s', 'k', 'req-4', async () => ok(4), print('aaa')), { answer: ok(1), replayed: true }, 'the key keeps its first answer')
  await t.rejects(cache.once('s', 'early', 'req-5', async () => { throw new SluiceError('unsupported_content_type') }, print('')), { code: 'unsupported_content_type' })
  t.equal((await cache.once('s', 'early', 'req-6', async () => ok(6), print('ccc'))).replayed, true, 'a body never read is not compared')
})
