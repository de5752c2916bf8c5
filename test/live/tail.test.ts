// The live tail: matching events arrive straight from ingest, others are withheld; stats every
// second; dropped counts for a client that does not read; the per-org limit; bad filters.
import t from 'tap'
import { startServer } from '../helpers/server.ts'
import type { TestServer } from '../helpers/server.ts'
import { createIngestTarget, postIngest } from '../helpers/ingest.ts'
import type { IngestTarget } from '../helpers/ingest.ts'
import { openSse } from '../helpers/sse.ts'
import { waitFor } from '../helpers/wait-for.ts'

let s: TestServer
let tgt: IngestTarget
t.before(async () => {
  s = await startServer(t, { tail: { maxPerOrg: 3, maxBufferedBytes: 65536 }, writer: { flushIntervalMs: 20, minInsertIntervalMs: 0 } })
  tgt = await createIngestTarget(s, 'live')
})

t.test('a tail gets matching events and not the others, plus stats', async (t) => {
  const all = await openSse(s.url, '/api/streams/live/tail', s.adminToken)
  const errors = await openSse(s.url, '/api/streams/live/tail?q=' + encodeURIComponent('status:5xx -path:/ignored'), s.adminToken)
  t.teardown(() => { all.close(); errors.close() })
  t.equal(all.status, 200)
  await all.next((f) => f.event === 'comment')
  const r = await postIngest(tgt, [
    JSON.stringify({ path: '/ok', status: 200, rt: 0.1, bytes: 10, attrs_key: 1 }),
    JSON.stringify({ path: '/boom', status: 503, rt: 2, bytes: 5 }),
    JSON.stringify({ path: '/ignored', status: 500 }),
  ].join('\n'))
  t.equal(r.body.ingested, 3)

  const first = JSON.parse((await all.next((f) => f.event === 'event')).data)
  t.match(first, { path: '/ok', status: 200, rt: 0.1, bytes: 10, host: null, attrs: { attrs_key: 1 } })
  t.type(first.received_at, 'number')
  t.equal(JSON.parse((await all.next((f) => f.event === 'event')).data).path, '/boom')
  t.equal(JSON.parse((await all.next((f) => f.event === 'event')).data).path, '/ignored')

  const only = JSON.parse((await errors.next((f) => f.event === 'event')).data)
  t.equal(only.path, '/boom', 'the filtered tail gets the 5xx event')
  const stats = JSON.parse((await errors.next((f) => f.event === 'stats' && JSON.parse(f.data).count > 0, 3000)).data)
  t.match(stats, { count: 3, status_2xx: 1, status_5xx: 2, bytes: 15 })
  t.ok(stats.rt_p50 > 0.09 && stats.rt_p50 < 2.1)
  t.ok(Math.abs(stats.rt_p99 - 2) / 2 < 0.03, `p99 ${stats.rt_p99} within 3% of 2`)
  t.same(stats.top_paths.map((p: { path: string }) => p.path).sort(), ['/boom', '/ignored', '/ok'])
  t.notOk(errors.frames.some((f) => f.event === 'event' && JSON.parse(f.data).path !== '/boom'), 'nothing else reached the filtered tail')
})

t.test('the tail filters on attributes, OR, NOT and regexes as /events does (docs/api.md section 7.2)', async (t) => {
  const q = '(user.id:>=40 OR service:checkout) NOT message:~"^debug\\s" -attrs.skip:*'
  const tail = await openSse(s.url, '/api/streams/live/tail?q=' + encodeURIComponent(q), s.adminToken)
  t.teardown(() => tail.close())
  t.equal(tail.status, 200)
  await tail.next((f) => f.event === 'comment')
  const r = await postIngest(tgt, [
    { message: 'one', user: { id: 42 } },
    { message: 'two', user: { id: '7' } },
    { message: 'three', service: 'checkout' },
    { message: 'debug four', user: { id: 99 } },
    { message: 'five', user: { id: 50 }, skip: null },
    { message: 'six', attrs_only: 'x' },
  ].map((e) => JSON.stringify(e)).join('\n'))
  t.equal(r.body.ingested, 6)
  const got = [JSON.parse((await tail.next((f) => f.event === 'event')).data), JSON.parse((await tail.next((f) => f.event === 'event')).data)]
  t.same(got.map((e) => e.message), ['one', 'three'])
  const events = await waitFor(async () => (await s.api('GET', `/api/streams/live/events?from=now-1h&q=${encodeURIComponent(q)}`)).body.events,
    { until: (list: Array<{ message: string }>) => list.length >= 2, what: 'the events to be stored' })
  t.same(events.map((e: { message: string }) => e.message).sort(), ['one', 'three'], '/events selects the same events')
  t.notOk(tail.frames.some((f) => f.event === 'event' && !['one', 'three'].includes(JSON.parse(f.data).message)), 'nothing else reached the tail')
})

t.test('a costly regular expression in a tail does not hold ingest: it is matched within a budget (docs/api.md section 7.5)', async (t) => {
  // A server of its own (three tails). Each of the two patterns takes about 2 M automaton steps
  // over one of these 2 KB messages (20 ms): matched on every row, the body below held its
  // request until it failed with 408 (explore16 F1).
  const own = await startServer(t, { tail: { maxPerOrg: 3 } })
  const target = await createIngestTarget(own, 'big')
  const tails = await Promise.all(['message:~"[^z]{999}z"', 'message:~"[^y]{999}y"', 'message:~"^b"']
    .map((q) => openSse(own.url, '/api/streams/big/tail?q=' + encodeURIComponent(q), own.adminToken)))
  t.teardown(() => { for (const tail of tails) tail.close() })
  t.same(tails.map((tail) => tail.status), [200, 200, 200])
  await Promise.all(tails.map((tail) => tail.next((f) => f.event === 'comment')))
  const lines = Array.from({ length: 3000 }, (_, i) => JSON.stringify({ message: `${'a'.repeat(2000)}${i}z` }))
  lines.push(JSON.stringify({ message: 'b marks the end' }))
  const r = await postIngest(target, lines.join('\n'))
  t.equal(r.status, 200)
  t.equal(r.body.ingested, 3001)
  const marker = JSON.parse((await tails[2].next((f) => f.event === 'event')).data)
  t.equal(marker.message, 'b marks the end', 'a cheap pattern beside them still gets its event')
  // Every message matches the first pattern, but no row's match fits in its share of the steps:
  // cut off, it counts as none (without the budget this tail got every event, after 80 s).
  await tails[0].next((f) => f.event === 'stats' && JSON.parse(f.data).count > 0, 5000)
  t.equal(tails[0].frames.filter((f) => f.event === 'event').length, 0, 'the costly pattern: no event delivered')
})

t.test('a client that does not read gets a dropped count', async (t) => {
  const slow = await openSse(s.url, '/api/streams/live/tail', s.adminToken)
  t.teardown(() => slow.close())
  await slow.next((f) => f.event === 'comment')
  slow.socket.pause()
  const line = JSON.stringify({ path: '/flood', message: 'x'.repeat(400) })
  // Enough to fill the socket buffers and the server's allowance for this client.
  for (let i = 0; i < 20; i++) {
    const r = await postIngest(tgt, (line + '\n').repeat(1000))
    t.equal(r.status, 200)
  }
  slow.socket.resume()
  const dropped = JSON.parse((await slow.next((f) => f.event === 'dropped', 10_000)).data)
  t.ok(dropped.count > 0, `dropped ${dropped.count}`)
})

t.test('the per-org tail limit answers 429 too_many_tails; bad filters 400', async (t) => {
  // A server of its own: no tail of another test, closed or closing, counts against the limit.
  const own = await startServer(t, { tail: { maxPerOrg: 3 } })
  await own.api('POST', '/api/streams', { body: { name: 'live' } })
  const open = await Promise.all([1, 2, 3].map(() => openSse(own.url, '/api/streams/live/tail', own.adminToken)))
  t.teardown(() => { for (const c of open) c.close() })
  t.same(open.map((c) => c.status), [200, 200, 200])
  const over = await own.api('GET', '/api/streams/live/tail')
  t.equal(over.status, 429)
  t.equal(over.body.error, 'too_many_tails')
  t.ok(Number(over.headers['retry-after']) >= 1)
  open[0].close()
  const again = await waitFor(async () => {
    const tail = await openSse(own.url, '/api/streams/live/tail', own.adminToken)
    open.push(tail)
    return tail.status
  }, { until: (status) => status === 200, what: 'the closed tail\'s slot to be free' })
  t.equal(again, 200, 'a closed tail frees its slot')
  const bad = await own.api('GET', '/api/streams/live/tail?q=' + encodeURIComponent('status:abc'))
  t.equal(bad.status, 400)
  t.equal(bad.body.error, 'invalid_query')
  t.equal((await own.api('GET', '/api/streams/nope/tail')).status, 404)
})

t.test('a tail ends when its stream is deleted; a change to the stream does not end it', async (t) => {
  const target = await createIngestTarget(s, 'doomed')
  const tail = await openSse(s.url, '/api/streams/doomed/tail', s.adminToken)
  t.teardown(() => tail.close())
  const before = s.app.tailHub.clientCount
  t.equal((await s.api('PATCH', '/api/streams/doomed', { body: { description: 'soon gone' } })).status, 200)
  await s.app.store.reload() // a metadata refresh replaces every record: the tail stays
  await postIngest(target, JSON.stringify({ path: '/before' }))
  t.equal(JSON.parse((await tail.next((f) => f.event === 'event')).data).path, '/before')
  // A stats tick after both, which is when a tail whose stream is gone would end.
  const ticks = (): number => tail.frames.filter((f) => f.event === 'stats').length
  const seen = ticks()
  await waitFor(() => ticks() > seen, { what: 'a stats tick after the refresh' })
  t.equal(tail.frames.filter((f) => f.event === 'end').length, 0, 'a PATCH and a refresh keep the tail open')
  t.equal((await s.api('DELETE', '/api/streams/doomed')).status, 204)
  const end = await tail.next((f) => f.event === 'end', 3000)
  t.same(JSON.parse(end.data), { reason: 'stream_deleted' })
  await waitFor(() => s.app.tailHub.clientCount === before - 1, { what: 'the tail to end' })
  t.equal((await s.api('GET', '/api/streams/doomed/tail')).status, 404, 'a reconnect finds no stream')
})

t.test('a tail ends when the PAT that opened it is revoked or expires: no event after that (explore26)', async (t) => {
  let clock = Date.now()
  const own = await startServer(t, { writer: { flushIntervalMs: 20, minInsertIntervalMs: 0 } }, { now: () => clock })
  const target = await createIngestTarget(own, 'guarded')
  const reader = (await own.api('POST', '/api/tokens', { body: { name: 'reader', abilities: ['data:read'] } })).body
  const short = (await own.api('POST', '/api/tokens', { body: { name: 'short', abilities: ['data:read'], ttl: 60 } })).body
  const byReader = await openSse(own.url, '/api/streams/guarded/tail', reader.token)
  const byShort = await openSse(own.url, '/api/streams/guarded/tail', short.token)
  t.teardown(() => { byReader.close(); byShort.close() })
  t.equal(byReader.status, 200)
  await postIngest(target, JSON.stringify({ path: '/while-valid' }))
  t.equal(JSON.parse((await byReader.next((f) => f.event === 'event')).data).path, '/while-valid')
  t.equal(JSON.parse((await byShort.next((f) => f.event === 'event')).data).path, '/while-valid')

  // Revoked: ended before the next event reaches it.
  t.equal((await own.api('DELETE', `/api/tokens/${reader.id}`)).status, 204)
  // Expired: the tokens' clock passes its 60 s.
  clock += 61_000
  await postIngest(target, JSON.stringify({ path: '/after' }))
  for (const [name, tail] of [['revoked', byReader], ['expired', byShort]] as const) {
    const end = await tail.next((f) => f.event === 'end', 3000)
    t.same(JSON.parse(end.data), { reason: 'token_invalid' }, `${name}: event: end`)
    t.same(tail.frames.filter((f) => f.event === 'event').map((f) => JSON.parse(f.data).path), [], `${name}: no event after`)
  }
  await waitFor(() => own.app.tailHub.clientCount === 0, { what: 'both tails to end' })
  t.equal((await own.api('GET', '/api/streams/guarded/tail', { token: reader.token })).status, 403, 'a reconnect is refused')
})

t.test('HEAD of a tail answers what a GET would: 429 when the org has its tails open', async (t) => {
  const own = await startServer(t, { tail: { maxPerOrg: 1 } })
  await own.api('POST', '/api/streams', { body: { name: 'h' } })
  t.equal((await own.api('HEAD', '/api/streams/h/tail')).status, 200)
  const tail = await openSse(own.url, '/api/streams/h/tail', own.adminToken)
  t.teardown(() => tail.close())
  const head = await own.api('HEAD', '/api/streams/h/tail')
  t.equal(head.status, 429)
  t.ok(Number(head.headers['retry-after']) >= 1)
})

t.test('shutdown ends the tails', async (t) => {
  const own = await startServer(t)
  await own.api('POST', '/api/streams', { body: { name: 'x' } })
  const tail = await openSse(own.url, '/api/streams/x/tail', own.adminToken)
  const ended = new Promise<void>((resolve) => tail.socket.once('end', () => resolve()))
  await own.app.close()
  await ended
  t.pass('the stream ended')
})

t.test('a quiet stream gets every event; past eventsPerSecond the rest are counted as dropped', async (t) => {
  const own = await startServer(t, { tail: { eventsPerSecond: 100 } })
  const target = await createIngestTarget(own, 'capped')
  const client = await openSse(own.url, '/api/streams/capped/tail', own.adminToken)
  t.teardown(() => client.close())
  await client.next((f) => f.event === 'comment')
  const body = Array.from({ length: 300 }, (_, i) => JSON.stringify({ path: `/e/${i}` })).join('\n')
  t.equal((await postIngest(target, body)).body.ingested, 300)
  const dropped = JSON.parse((await client.next((f) => f.event === 'dropped')).data)
  const events = client.frames.filter((f) => f.event === 'event')
  t.equal(events.length, 100, 'the allowance of one second')
  t.equal(dropped.count, 200, 'the rest are counted')
  t.equal(JSON.parse(events[0].data).path, '/e/0', 'in body order')

  const quiet = await startServer(t)
  const quietTarget = await createIngestTarget(quiet, 'quiet')
  const all = await openSse(quiet.url, '/api/streams/quiet/tail', quiet.adminToken)
  t.teardown(() => all.close())
  await all.next((f) => f.event === 'comment')
  t.equal((await postIngest(quietTarget, body)).body.ingested, 300)
  for (let i = 0; i < 300; i++) await all.next((f) => f.event === 'event' && JSON.parse(f.data).path === `/e/${i}`)
  t.notOk(all.frames.some((f) => f.event === 'dropped'), 'nothing dropped')
})
