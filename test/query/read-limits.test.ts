// A read whose client goes away (lib/query/read-limits.ts; docs/api.md section 7.9): its queries
// are stopped in ClickHouse, not left running to max_execution_time beside the next reads, and a
// read that finds the org's slots held by reads being stopped waits for them instead of a 429.
// Through a real HTTP server and client: the client's abort is what closes the response.
import t from 'tap'
import { createServer } from 'node:http'
import { EventEmitter } from 'node:events'
import type { ClickHouse } from '../../lib/storage/clickhouse.ts'
import type { AddressInfo } from 'node:net'
import { request } from 'undici'
import { createTestDatabase, onChdb } from '../helpers/clickhouse.ts'
import { waitFor } from '../helpers/wait-for.ts'
import { startTcpProxy } from '../helpers/tcp-proxy.ts'
import { createClickHouse } from '../../lib/storage/clickhouse.ts'
import { ReadLimits } from '../../lib/query/read-limits.ts'
import { SluiceError } from '../../lib/errors.ts'
import type { RequestContext } from '../../lib/http/reply.ts'

// The embedded engine cannot stop a running statement (lib/storage/chdb-clickhouse.ts).
t.test('a read whose client went away is stopped in ClickHouse; the next read waits for its slot', { skip: onChdb && 'chdb cannot stop a statement' }, async (t) => {
  const { clickhouse } = await createTestDatabase(t)
  const reads = new ReadLimits({ maxConcurrentPerOrg: 1, maxScansPerOrg: 1, maxQueueMs: 0, timeoutMs: 20_000, maxMemoryBytes: 1 << 30, maxGroupKeys: 1_000_000, maxThreads: 1, idleThreads: 0 })
  // A statement that runs for seconds, unless stopped (a marker to find it by in system.processes).
  const slow = 'SELECT count() FROM numbers(100000000000) WHERE sipHash64(number) % 7 = 1 AND \'read-limits-test\' != \'\''
  const answers: Array<Promise<unknown>> = []
  const server = createServer((req, res) => {
    const ctx = { req, res } as unknown as RequestContext
    const run = req.url === '/slow'
      ? reads.run(ctx, 'org_1', clickhouse, async (ch) => await ch.query(slow), true)
      : reads.run(ctx, 'org_1', clickhouse, async (ch) => await ch.query<{ one: number }>('SELECT 1 AS one'), true)
    answers.push(run.then((rows) => { res.end(JSON.stringify(rows)) }, (err: unknown) => {
      if (err instanceof SluiceError) { res.statusCode = 429; res.end(err.code) } else res.destroy()
      return err
    }))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => { server.close() })
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const running = async (): Promise<number> => (await clickhouse.query<{ n: number }>(
    "SELECT count() AS n FROM system.processes WHERE query LIKE '%read-limits-test%' AND query NOT LIKE '%system.processes%'"))[0].n

  const gone = new AbortController()
  const abandoned = request(`${base}/slow`, { signal: gone.signal }).catch((err: unknown) => err)
  await waitFor(running, { what: 'the slow read to run in ClickHouse' })
  t.equal(reads.running('org_1'), 1)

  gone.abort()
  await abandoned
  // The org's one slot is held until the slow statement has stopped; this read waits for it.
  const next = await request(`${base}/fast`)
  t.equal(next.statusCode, 200, 'no 429 for a slot held by a read being stopped')
  t.same(JSON.parse(await next.body.text()), [{ one: 1 }])
  t.equal(await running(), 0, 'the abandoned statement no longer runs in ClickHouse')
  await Promise.all(answers)
  t.equal(reads.running('org_1'), 0)

  // A slot held by a read that is running (not being stopped) still answers 429 at once.
  const busy = new AbortController()
  const holding = request(`${base}/slow`, { signal: busy.signal }).catch((err: unknown) => err)
  await waitFor(running, { what: 'the second slow read to run' })
  const refused = await request(`${base}/fast`)
  t.equal(refused.statusCode, 429)
  t.equal(await refused.body.text(), 'too_many_reads')
  busy.abort()
  await holding
  await Promise.all(answers)
  await waitFor(() => reads.running('org_1') === 0, { what: 'the slot to be released once the KILL is done' })
  t.equal(await running(), 0)
})

t.test('a read on a ClickHouse that hangs answers query_timeout past its deadline, and holds its slot until ClickHouse stops it', { skip: onChdb && 'the embedded engine has no connection to hang' }, async (t) => {
  const { clickhouse: direct, url, database } = await createTestDatabase(t)
  const proxy = await startTcpProxy(t, url)
  const clickhouse = createClickHouse({ url: proxy.url, database, user: process.env.CLICKHOUSE_USER ?? 'default', password: process.env.CLICKHOUSE_PASSWORD ?? '', requestTimeoutMs: 60_000 })
  t.teardown(async () => { await clickhouse.close() })
  // max_execution_time 1 s: ClickHouse would enforce it, but a stalled one cannot.
  const reads = new ReadLimits({ maxConcurrentPerOrg: 1, maxScansPerOrg: 1, maxQueueMs: 0, timeoutMs: 1000, maxMemoryBytes: 1 << 30, maxGroupKeys: 1_000_000, maxThreads: 1, idleThreads: 0 })
  const ctx = { res: Object.assign(new EventEmitter(), { writableFinished: false }) } as unknown as RequestContext
  t.same(await reads.run(ctx, 'org_1', clickhouse, async (ch) => await ch.query('SELECT 1 AS one')), [{ one: 1 }], 'through the proxy')

  proxy.stall()
  const err = await reads.run(ctx, 'org_1', clickhouse, async (ch) => await ch.query('SELECT 2 AS two')).catch((e: unknown) => e)
  t.match(err, { code: 'query_timeout' })
  t.equal(reads.running('org_1'), 1, 'the slot is held while the KILL waits on the stalled server')
  // The next read waits for that slot (no 429 for a read being stopped), and runs once it is free.
  let settled = false
  const next = reads.run(ctx, 'org_1', direct, async (ch) => await ch.query('SELECT 3 AS three')).finally(() => { settled = true })
  t.equal(settled, false, 'waits while ClickHouse has not stopped the read')

  proxy.resume()
  t.same(await next, [{ three: 3 }])
  await waitFor(() => reads.running('org_1') === 0, { what: 'the slots to be released' })
})

t.test('Retry-After of too_many_reads: about as long as the youngest holder has run, 1 to 30 s', async (t) => {
  let clock = 1_000_000
  const reads = new ReadLimits({ maxConcurrentPerOrg: 2, maxScansPerOrg: 1, maxQueueMs: 0, timeoutMs: 20_000, maxMemoryBytes: 1 << 30, maxGroupKeys: 1_000_000, maxThreads: 1, idleThreads: 0 }, () => clock)
  const retryAfter = (scan: boolean): unknown => {
    try {
      reads.acquire('org_1', scan)()
      return 'taken'
    } catch (err) {
      return (err as SluiceError).code === 'too_many_reads' ? (err as SluiceError).retryAfter : err
    }
  }
  const exportSlot = reads.acquire('org_1', true)
  clock += 200
  t.equal(retryAfter(true), 1, 'a scan that started 0.2 s ago: 1 s')
  clock += 2_300
  t.equal(retryAfter(true), 3, '2.5 s: 3 s')
  clock += 600_000
  t.equal(retryAfter(true), 30, 'an export running for 10 minutes: 30 s at most')
  t.equal(retryAfter(false), 'taken', 'a read that is no scan takes the other read slot')
  const quick = reads.acquire('org_1')
  t.equal(retryAfter(false), 1, 'the read slots: by the youngest holder, which just started')
  quick()
  exportSlot()
  t.equal(retryAfter(true), 'taken')
  t.equal(reads.running('org_1'), 0)
})

// The queue (docs/api.md section 7.9): a read that finds its slots taken waits for them, first
// come first served, up to query.maxQueueMs. The timers are driven by hand.
t.test('a read waits in its org\'s queue: freed slots go to the oldest waiter that can use them, never to a later read', async (t) => {
  const timers: Array<{ fn: () => void, ms: number, cancelled: boolean }> = []
  const setTimer = (fn: () => void, ms: number): () => void => {
    const timer = { fn, ms, cancelled: false }
    timers.push(timer)
    return () => { timer.cancelled = true }
  }
  const reads = new ReadLimits({ maxConcurrentPerOrg: 2, maxScansPerOrg: 1, maxQueueMs: 10_000, timeoutMs: 20_000, maxMemoryBytes: 1 << 30, maxGroupKeys: 1_000_000, maxThreads: 1, idleThreads: 0 }, Date.now, setTimer)
  // run()'s ClickHouse is only handed to the read, which makes no query here.
  const clickhouse = {} as ClickHouse
  const order: string[] = []
  const read = (name: string, scan: boolean): { ctx: EventEmitter, finish: () => void, answer: Promise<unknown> } => {
    const ctx = Object.assign(new EventEmitter(), { writableFinished: false })
    let finish = (): void => {}
    const held = new Promise<void>((resolve) => { finish = resolve })
    const answer = reads.run({ res: ctx } as unknown as RequestContext, 'org_1', clickhouse, async () => {
      order.push(name)
      await held
      return name
    }, scan).catch((err: unknown) => err)
    return { ctx, finish, answer }
  }
  const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve))

  const greedy = read('greedy', true)
  await tick()
  const polite = read('polite', true)
  const quick = read('quick', false)
  await tick()
  t.same(order, ['greedy', 'quick'], 'a read that is no scan passes a scan waiting for the scan slot')
  t.equal(reads.waiting('org_1'), 1)
  quick.finish()
  t.equal(await quick.answer, 'quick')

  // The greedy client asks again the moment its answer arrives: it queues behind the polite one.
  greedy.finish()
  t.equal(await greedy.answer, 'greedy')
  const again = read('greedy again', true)
  await tick()
  t.same(order, ['greedy', 'quick', 'polite'], 'the freed scan slot went to the read that waited for it')
  t.equal(reads.waiting('org_1'), 1)
  t.throws(() => reads.acquire('org_1', true), { code: 'too_many_reads' }, 'no read takes a slot ahead of the queue')

  // A waiter whose client goes away leaves the queue; one that waits past maxQueueMs gets 429.
  const gone = read('gone', true)
  await tick()
  t.equal(reads.waiting('org_1'), 2)
  gone.ctx.emit('close')
  t.match(await gone.answer, { code: 'too_many_reads' })
  t.equal(reads.waiting('org_1'), 1)
  const timer = timers.find((x) => !x.cancelled)!
  t.equal(timer.ms, 10_000, 'it waits query.maxQueueMs')
  timer.fn()
  const refused = await again.answer
  t.match(refused, { code: 'too_many_reads' })
  t.ok((refused as SluiceError).retryAfter! >= 1, 'with a Retry-After')
  t.equal(reads.waiting('org_1'), 0)

  // At most 4 x maxConcurrentPerOrg wait; one more is refused at once.
  const queued = Array.from({ length: 8 }, (_, i) => read(`w${i}`, true))
  await tick()
  t.equal(reads.waiting('org_1'), 8)
  t.match(await read('ninth', true).answer, { code: 'too_many_reads' })
  polite.finish()
  t.equal(await polite.answer, 'polite')
  for (const [i, w] of queued.entries()) {
    await tick()
    w.finish()
    t.equal(await w.answer, `w${i}`)
  }
  t.same(order.slice(3), queued.map((_, i) => `w${i}`), 'the queue is served in the order it came')
  t.equal(reads.running('org_1'), 0)
  t.equal(reads.waiting('org_1'), 0)
})

t.test('a read the queue refused keeps its place when it comes back; Retry-After counts the waiters ahead of it', async (t) => {
  const timers: Array<{ fn: () => void, cancelled: boolean }> = []
  const setTimer = (fn: () => void): () => void => {
    const timer = { fn, cancelled: false }
    timers.push(timer)
    return () => { timer.cancelled = true }
  }
  let now = 1_000_000
  const reads = new ReadLimits({ maxConcurrentPerOrg: 4, maxScansPerOrg: 1, maxQueueMs: 10_000, timeoutMs: 20_000, maxMemoryBytes: 1 << 30, maxGroupKeys: 1_000_000, maxThreads: 1, idleThreads: 0 }, () => now, setTimer)
  const clickhouse = {} as ClickHouse
  const order: string[] = []
  // A scan of the stats of `name`'s request; the same name is the same client and request.
  const read = (name: string): { finish: () => void, answer: Promise<unknown>, timer: () => void } => {
    const res = Object.assign(new EventEmitter(), { writableFinished: false })
    const ctx = { res, req: { method: 'GET', url: `/api/streams/app/stats?by=user_id&from=now-24h&who=${name}`, headers: { authorization: `Bearer ${name}` } } }
    let finish = (): void => {}
    const held = new Promise<void>((resolve) => { finish = resolve })
    const before = timers.length
    const answer = reads.run(ctx as unknown as RequestContext, 'org_1', clickhouse, async () => {
      order.push(name)
      await held
      return name
    }, true).catch((err: unknown) => err)
    return { finish, answer, timer: () => timers.slice(before).find((x) => !x.cancelled)!.fn() }
  }
  // Each read arrives 10 ms after the one before.
  const tick = (): Promise<void> => new Promise((resolve) => setImmediate(() => { now += 10; resolve() }))

  // Two scans held their slot 4 s each: the org's mean hold.
  for (const name of ['first', 'second']) {
    const r = read(name)
    await tick()
    now += 4000
    r.finish()
    await r.answer
  }
  const holder = read('holder')
  await tick()
  const w1 = read('w1')
  await tick()
  const polite = read('polite')
  await tick()
  const w2 = read('w2')
  await tick()
  t.equal(reads.waiting('org_1'), 3)
  now += 9000
  polite.timer()
  const refused = await polite.answer
  t.match(refused, { code: 'too_many_reads' }, 'past its wait: 429')
  t.equal((refused as SluiceError).retryAfter, 10, 'the holder has run 9.03 s: 10 s; the one waiter ahead, at 4 s each, would take 4')

  // A greedy client arrives, then the polite one comes back: it goes before the reads that came after it first did.
  const greedy = read('greedy')
  await tick()
  now += 5000
  const back = read('polite')
  await tick()
  t.equal(reads.waiting('org_1'), 4)
  holder.finish()
  for (const r of [w1, back, w2, greedy]) {
    await tick()
    now += 3000
    r.finish()
    await r.answer
  }
  t.same(order.slice(2), ['holder', 'w1', 'polite', 'w2', 'greedy'], 'served by first arrival')

  // Behind a deep queue, Retry-After is its length at the mean hold.
  const held = read('held')
  await tick()
  const deep = ['a', 'b', 'c', 'd', 'e'].map((name) => read(name))
  await tick()
  const last = read('last')
  await tick()
  now += 1000
  last.timer()
  const ra = ((await last.answer) as SluiceError).retryAfter!
  t.ok(ra >= 5 * 3, `5 waiters ahead at a mean hold of at least 3 s: ${ra} s`)
  held.finish()
  for (const r of deep) {
    await tick()
    r.finish()
    await r.answer
  }
  t.equal(reads.running('org_1'), 0)
})

t.test('a statement of a read takes query.idleThreads while no ingest and no other read runs, query.maxThreads otherwise', async (t) => {
  const { clickhouse } = await createTestDatabase(t)
  let ingestIdleMs = 5_000
  const reads = new ReadLimits({ maxConcurrentPerOrg: 4, maxScansPerOrg: 2, maxQueueMs: 0, timeoutMs: 20_000, maxMemoryBytes: 1 << 30, maxGroupKeys: 1_000_000, maxThreads: 1, idleThreads: 0 },
    Date.now, undefined, { idleThreads: 3, ingestIdleMs: () => ingestIdleMs })
  const ctx = { res: Object.assign(new EventEmitter(), { writableFinished: false }) } as unknown as RequestContext
  // The settings ClickHouse ran the statement with.
  const threadsOf = async (ch: ClickHouse): Promise<number> =>
    Number((await ch.query<{ value: string }>("SELECT value FROM system.settings WHERE name = 'max_threads'"))[0].value)

  t.equal(await reads.run(ctx, 'org_1', clickhouse, threadsOf, true), 3, 'alone, ingest idle for 5 s: the idle threads')
  ingestIdleMs = 999
  t.equal(await reads.run(ctx, 'org_1', clickhouse, threadsOf, true), 1, 'ingest active within the last second: maxThreads')
  ingestIdleMs = 0
  t.equal(await reads.run(ctx, 'org_1', clickhouse, threadsOf), 1, 'ingest running now: maxThreads')

  ingestIdleMs = 5_000
  // Each statement decides when it starts: of two side by side (one read's, as /fields runs
  // them, or two reads'), the first takes the idle threads and the second maxThreads; the next
  // statement alone takes the idle threads again.
  const [first, second] = await reads.run(ctx, 'org_1', clickhouse, async (ch) => await Promise.all([threadsOf(ch), threadsOf(ch)]))
  t.same([first, second], [3, 1], 'one read\'s statements side by side')
  const [a, b] = await Promise.all([reads.run(ctx, 'org_1', clickhouse, threadsOf), reads.run(ctx, 'org_2', clickhouse, threadsOf)])
  t.same([a, b].sort(), [1, 3], 'two reads\' statements side by side')
  t.equal(await reads.run(ctx, 'org_1', clickhouse, threadsOf), 3, 'alone again')
  // A statement whose rows are streamed counts from its first chunk to its last.
  const streamed = await reads.run(ctx, 'org_1', clickhouse, async (ch) => {
    const chunks = ch.queryChunks("SELECT value FROM system.settings WHERE name = 'max_threads'")
    const iterator = chunks[Symbol.asyncIterator]()
    const head = await iterator.next()
    const during = await threadsOf(ch)
    while (!(await iterator.next()).done) { /* drain */ }
    return [Number((JSON.parse(Buffer.from(head.value as Uint8Array).toString()) as { value: string }).value), during]
  })
  t.same(streamed, [3, 1], 'the streamed statement took the idle threads; one beside it, maxThreads')

  const never = new ReadLimits({ maxConcurrentPerOrg: 4, maxScansPerOrg: 2, maxQueueMs: 0, timeoutMs: 20_000, maxMemoryBytes: 1 << 30, maxGroupKeys: 1_000_000, maxThreads: 2, idleThreads: 0 },
    Date.now, undefined, { idleThreads: 1, ingestIdleMs: () => 60_000 })
  t.equal(await never.run(ctx, 'org_1', clickhouse, threadsOf), 2, 'idle threads below maxThreads: never fewer than maxThreads')
})

t.test('where the server has os_thread_priority, a read\'s statements run at the niceness given (below ingest)', { skip: !onChdb && '18.16 has no os_thread_priority (server-features.ts threadPriority)' }, async (t) => {
  const { clickhouse } = await createTestDatabase(t)
  const reads = new ReadLimits({ maxConcurrentPerOrg: 4, maxScansPerOrg: 2, maxQueueMs: 0, timeoutMs: 20_000, maxMemoryBytes: 1 << 30, maxGroupKeys: 1_000_000, maxThreads: 1, idleThreads: 0 },
    Date.now, undefined, { idleThreads: 1, ingestIdleMs: () => 0, niceness: 19 })
  const ctx = { res: Object.assign(new EventEmitter(), { writableFinished: false }) } as unknown as RequestContext
  const nice = await reads.run(ctx, 'org_1', clickhouse, async (ch) =>
    Number((await ch.query<{ value: string }>("SELECT value FROM system.settings WHERE name = 'os_thread_priority'"))[0].value))
  t.equal(nice, 19)
})
