// The live tail across nodes (lib/live/cluster-live.ts) against the local cluster: a tail on node 1
// shows what is ingested through node 2 (frames forwarded over POST /internal/live) as well as its
// own, filtered by q; its stats count node 2's events; a stopped peer never holds ingest on the
// other node. One cluster for the file.
import t from 'tap'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { api, ingest, startTestCluster, streamWithToken } from '../helpers/cluster.ts'
import { isDefined, waitFor } from '../helpers/wait-for.ts'
import { openSse } from '../helpers/sse.ts'
import type { SseClient, SseFrame } from '../helpers/sse.ts'

// Starting four ClickHouse servers, ZooKeeper and two nodes takes 15-40 s on a loaded 2-core box.
t.setTimeout(300_000)

const cluster = await startTestCluster(t)
const [a, b] = cluster.nodes
const admin = cluster.adminToken

const isEvent = (path: string) => (f: SseFrame): boolean => f.event === 'event' && JSON.parse(f.data).path === path

/**
 * Node 2 learns of node 1's tails at its next registry count (500 ms here): ingests a probe that
 * every client's filter matches through node 2 until each client has seen one.
 */
async function untilForwarded (token: string, stream: string, clients: SseClient[]): Promise<void> {
  const seen = new Set<SseClient>()
  await waitFor(async () => {
    const res = await ingest(b.url, token, stream, [{ message: 'probe', path: '/probe', status: 503 }])
    if (res.status !== 200) throw new Error(`ingest: ${res.status} ${JSON.stringify(res.body)}`)
    for (const c of clients) {
      if (seen.has(c)) continue
      await c.next(isEvent('/probe'), 300).then(() => seen.add(c), () => {})
    }
    return seen.size === clients.length ? true : undefined
  }, { what: 'node 2 forwards to node 1\'s tails', timeoutMs: 30_000, intervalMs: 200, until: isDefined, retryErrors: true })
}

/** A counter of a node's /metrics. */
async function metric (node: string, name: string): Promise<number> {
  const res = await api(node, null, 'GET', '/metrics')
  const line = String(res.body).split('\n').find((l) => l.startsWith(name + ' '))
  return line === undefined ? 0 : Number(line.split(' ')[1])
}

t.test('a tail on node 1 shows events ingested through node 2 and node 1, filtered by q', async (t) => {
  const token = await streamWithToken(admin, a.url, b.url, 'tail_x')
  const all = await openSse(a.url, '/api/streams/tail_x/tail', admin)
  const errors = await openSse(a.url, '/api/streams/tail_x/tail?q=' + encodeURIComponent('status:5xx'), admin)
  t.teardown(() => { all.close(); errors.close() })
  t.equal(all.status, 200)
  t.equal(errors.status, 200)
  await untilForwarded(token, 'tail_x', [all, errors])

  const viaB = await ingest(b.url, token, 'tail_x', [
    { message: 'ok from b', path: '/b-ok', status: 200 },
    { message: 'boom from b', path: '/b-err', status: 500 },
  ])
  t.equal(viaB.status, 200)
  const viaA = await ingest(a.url, token, 'tail_x', [
    { message: 'ok from a', path: '/a-ok', status: 200 },
    { message: 'boom from a', path: '/a-err', status: 502 },
  ])
  t.equal(viaA.status, 200)

  for (const path of ['/b-ok', '/b-err', '/a-ok', '/a-err']) {
    const frame = await all.next(isEvent(path), 10_000)
    t.equal(JSON.parse(frame.data).path, path, `the unfiltered tail on node 1 shows ${path}`)
  }
  const bErr = JSON.parse((await errors.next(isEvent('/b-err'), 10_000)).data)
  t.equal(bErr.status, 500, 'node 2\'s error reaches the q=status:5xx tail on node 1')
  t.equal(bErr.message, 'boom from b')
  await errors.next(isEvent('/a-err'), 10_000)
  const okPaths = errors.frames.filter((f) => f.event === 'event' && ['/b-ok', '/a-ok'].includes(JSON.parse(f.data).path))
  t.same(okPaths, [], 'the filtered tail got no 2xx event from either node')
})

t.test('POST /internal/live takes only the cluster secret', async (t) => {
  const secret: string = JSON.parse(readFileSync(join(cluster.dir, 'sluice-1', 'config.json'), 'utf8')).cluster.secret
  const none = await api(a.url, null, 'POST', '/internal/live', 'x')
  t.equal(none.status, 401)
  t.equal(none.body.error, 'unauthorized')
  const wrong = await api(a.url, null, 'POST', '/internal/live', 'x', { 'x-sluice-cluster-secret': secret + 'x' })
  t.equal(wrong.status, 403)
  t.equal(wrong.body.error, 'invalid_token')
  const malformed = await api(a.url, null, 'POST', '/internal/live', 'x', { 'x-sluice-cluster-secret': secret })
  t.equal(malformed.status, 400)
  t.equal(malformed.body.error, 'bad_request')
  const empty = await api(a.url, null, 'POST', '/internal/live', '', { 'x-sluice-cluster-secret': secret })
  t.equal(empty.status, 204, 'an empty body: nothing to hand out')
})

t.test('live stats on node 1 count the events ingested through node 2', async (t) => {
  const token = await streamWithToken(admin, b.url, a.url, 'tail_stats')
  const tail = await openSse(a.url, '/api/streams/tail_stats/tail', admin)
  t.teardown(() => tail.close())
  await untilForwarded(token, 'tail_stats', [tail])
  const res = await ingest(b.url, token, 'tail_stats', Array.from({ length: 7 }, (_, i) => ({ message: `s${i}`, path: '/stats-b', status: 404 })))
  t.equal(res.status, 200)
  // The seven may straddle two one-second windows: add up /stats-b over the windows.
  let counted = 0
  let fourXX = 0
  while (counted < 7) {
    const stats = JSON.parse((await tail.next((f) => f.event === 'stats', 10_000)).data)
    counted += stats.top_paths.find((p: { path: string }) => p.path === '/stats-b')?.count ?? 0
    fourXX += stats.status_4xx
  }
  t.equal(counted, 7, 'node 1\'s stats windows count node 2\'s seven events')
  t.equal(fourXX, 7, 'and their status class')
})

t.test('a stopped peer does not hold ingest on the other node; what it misses is counted as dropped', async (t) => {
  const token = await streamWithToken(admin, a.url, b.url, 'tail_dead')
  const tail = await openSse(a.url, '/api/streams/tail_dead/tail', admin)
  t.teardown(() => tail.close())
  await untilForwarded(token, 'tail_dead', [tail])
  const droppedBefore = await metric(b.url, 'sluice_tail_forward_dropped_events_total')
  // SIGSTOP: node 1 still accepts connections (the kernel does) but answers nothing: a hung peer.
  a.child.kill('SIGSTOP')
  try {
    let accepted = 0
    await waitFor(async () => {
      const res = await ingest(b.url, token, 'tail_dead', [{ message: 'while node 1 hangs', path: '/dead', status: 200 }])
      t.equal(res.status, 200, 'node 2 takes ingest while node 1 hangs')
      accepted++
      return (await metric(b.url, 'sluice_tail_forward_dropped_events_total')) > droppedBefore ? true : undefined
    }, { what: 'node 2 counts forwards to the stopped node 1 as dropped', timeoutMs: 30_000, intervalMs: 200, until: isDefined, retryErrors: true })
    t.ok(accepted > 0, 'every request meanwhile answered 200')
  } finally {
    a.child.kill('SIGCONT')
  }
  // Node 1 comes back and node 2 forwards to it again once the back-off ends.
  await untilForwarded(token, 'tail_dead', [tail])
  const dropped = JSON.parse((await tail.next((f) => f.event === 'dropped', 10_000)).data)
  t.ok(dropped.count > 0, 'node 1\'s client is told how many events it missed')
  t.ok((await metric(b.url, 'sluice_tail_forwarded_events_total')) > 0, 'node 2 counts what it forwarded')
})
