// The pieces of the live tail across nodes that run without a cluster: the hub's peer hooks (a
// stream tailed only elsewhere still gets a request; forwarded frames reach the clients of their
// filter and their stats merge), the forward body's codec, and a peer link's bounds against a
// real HTTP server that never answers. The whole path runs in test/cluster/cluster-tail.test.ts.
import t from 'tap'
import { EventEmitter } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { ServerResponse } from 'node:http'
import { TailHub } from '../../lib/live/tail-hub.ts'
import type { TailPeers } from '../../lib/live/tail-hub.ts'
import { LiveStats } from '../../lib/live/live-stats.ts'
import { decodeForward, encodeForward } from '../../lib/live/forward-codec.ts'
import { filterOutput } from '../../lib/live/tail-frame-join.ts'
import { PeerLink } from '../../lib/live/peer-link.ts'
import { ClusterLive } from '../../lib/live/cluster-live.ts'
import type { PeerNode } from '../../lib/storage/node-registry.ts'
import { SluiceError } from '../../lib/errors.ts'
import { createLogger } from '../../lib/logger.ts'
import { ManualClock } from '../helpers/manual-clock.ts'
import { startServer } from '../helpers/server.ts'
import { waitFor } from '../helpers/wait-for.ts'
import type { LiveOutput } from '../../lib/live/live-protocol.ts'

class FakeResponse extends EventEmitter {
  writableLength = 0
  text = ''
  writeHead (): this { return this }
  write (chunk: string | Uint8Array): boolean { this.text += chunk.toString(); return true }
  end (): void { this.emit('close') }
}

/** One task's output: events n = 0.. with status 200 or 500; bit 0 matches all, bit 1 the 500s. */
function output (statuses: number[]): LiveOutput {
  const frames = statuses.map((status, n) => Buffer.from(`event: event\ndata: ${JSON.stringify({ n, status })}\n\n`))
  const ends: number[] = []
  let end = 0
  for (const frame of frames) ends.push(end += frame.byteLength)
  const stats = new LiveStats()
  stats.count = statuses.length
  return { frames: new Uint8Array(Buffer.concat(frames)), ends, masks: statuses.map((s) => s >= 500 ? 0b11 : 0b01), dropped: [0, 0], stats: stats.toPartial() }
}

const events = (text: string): unknown[] => [...text.matchAll(/event: event\ndata: (.*)\n/g)].map((m) => JSON.parse(m[1]))

t.test('a stream tailed only on another node gets a request with its filters, and its output is forwarded', async (t) => {
  const forwarded: Array<{ filters: readonly string[], count: number }> = []
  const peers: TailPeers = {
    filtersFor: (org, stream) => org === 'o' && stream === 'web' ? ['status:5xx'] : [],
    forward: (_o, _s, filters, outputs) => forwarded.push({ filters, count: outputs.length }),
  }
  const hub = new TailHub({ clock: new ManualClock(), peers })
  t.teardown(() => hub.close())
  t.equal(hub.liveRequestFor('o', 'other'), null, 'nobody tails it anywhere: no request')
  const request = hub.liveRequestFor('o', 'web')
  t.same(request?.filters, ['status:5xx'], 'the peer\'s filter, without any local client')
  hub.publish('o', 'web', request!, [output([200, 500])])
  t.same(forwarded, [{ filters: ['status:5xx'], count: 1 }])

  const local = new FakeResponse()
  hub.open(local as unknown as ServerResponse, 'o', 'web', '')
  t.same(hub.liveRequestFor('o', 'web')?.filters, ['', 'status:5xx'], 'local and remote filters together')
  t.same(hub.openTails(), [{ org: 'o', stream: 'web', q: [''] }], 'what this node advertises')
})

t.test('forwarded frames go to the clients of their filter; forwarded stats merge into the window', async (t) => {
  const clock = new ManualClock()
  const hub = new TailHub({ clock })
  t.teardown(() => hub.close())
  const all = new FakeResponse()
  const errors = new FakeResponse()
  hub.open(all as unknown as ServerResponse, 'o', 'web', '')
  hub.open(errors as unknown as ServerResponse, 'o', 'web', 'status:5xx')
  const outs = [output([200, 500, 200, 503])]
  const stats = new LiveStats()
  stats.count = 4
  const body = encodeForward({
    orgId: 'o',
    stream: 'web',
    stats: stats.toPartial(),
    parts: [{ q: '', output: filterOutput(outs, 0, outs[0].stats) }, { q: 'status:5xx', output: filterOutput(outs, 1, outs[0].stats) }],
  })
  for (const m of decodeForward(body)) hub.publishForwarded(m.orgId, m.stream, m.stats, m.parts)
  t.same(events(all.text), [{ n: 0, status: 200 }, { n: 1, status: 500 }, { n: 2, status: 200 }, { n: 3, status: 503 }])
  t.same(events(errors.text), [{ n: 1, status: 500 }, { n: 3, status: 503 }])
  clock.advance(1000)
  const window = /event: stats\ndata: (.*)\n/.exec(all.text)
  t.equal(JSON.parse(window![1]).count, 4, 'the peer\'s events counted in the stats window')
})

t.test('the forward codec: several messages per body, and a malformed body is bad_request', async (t) => {
  const outs = [output([500, 200])]
  const one = encodeForward({ orgId: 'o', stream: 'a', stats: outs[0].stats, parts: [{ q: 'x', output: { ...filterOutput(outs, 1, outs[0].stats), dropped: [7] } }] })
  const two = encodeForward({ orgId: 'o', stream: 'b', stats: outs[0].stats, parts: [] })
  const decoded = decodeForward(Buffer.concat([one, two]))
  t.same(decoded.map((m) => m.stream), ['a', 'b'])
  t.same(decoded[0].parts[0].output.dropped, [7])
  t.same(events(Buffer.from(decoded[0].parts[0].output.frames).toString()), [{ n: 0, status: 500 }])
  for (const bad of [Buffer.from('not json\n'), one.subarray(0, one.length - 3), Buffer.from('{"o":"o","s":"a","st":{},"p":[]}\n')]) {
    let code: string | undefined
    try { decodeForward(bad) } catch (err) { code = err instanceof SluiceError ? err.code : String(err) }
    t.equal(code, 'bad_request')
  }
})

t.test('a peer link to a hung peer: bounded queue, drops counted per filter, then a back-off', async (t) => {
  const held: Array<() => void> = []
  const server = createServer((_req, res) => { held.push(() => res.destroy()) })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => { for (const h of held) h(); server.close() })
  let now = 0
  let dropped = 0
  let failed!: () => void
  const failedOnce = new Promise<void>((resolve) => { failed = resolve })
  const link = new PeerLink({
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    secret: 's',
    maxQueuedBytes: 100,
    timeoutMs: 300,
    backoffMs: 5000,
    onSent: () => {},
    onDropped: (n) => { dropped += n; if (n === 1) failed() },
    log: createLogger({ level: 'error' }),
    now: () => now,
  })
  t.teardown(() => link.close())
  const message = (events: number) => ({ bytes: Buffer.alloc(60), events, perFilter: [['o/web\n', events]] as Array<[string, number]> })
  link.enqueue(message(1)) // in flight, never answered
  link.enqueue(message(2)) // queued: 60 of 100 bytes
  link.enqueue(message(3)) // would make 120: dropped at once
  t.equal(dropped, 3, 'past the queue bound: dropped and counted, without waiting')
  t.equal(link.takeLost('o/web\n'), 3, 'the filter\'s lost events, for its next message')
  t.equal(link.takeLost('o/web\n'), 0, 'taken once')
  await failedOnce // the POST timed out: it and what queued behind it are dropped
  t.equal(dropped, 6)
  link.enqueue(message(4))
  t.equal(dropped, 10, 'backed off: dropped at once')
  now = 5000
  link.enqueue(message(5))
  t.equal(dropped, 10, 'after the back-off it is queued again')
})

t.test('cluster-live sends one message per peer address with its filters\' frames and the secret', async (t) => {
  const bodies: Array<{ secret: unknown, body: Buffer }> = []
  let got!: () => void
  const arrived = new Promise<void>((resolve) => { got = resolve })
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = []
    for await (const c of req) chunks.push(c as Buffer)
    bodies.push({ secret: req.headers['x-sluice-cluster-secret'], body: Buffer.concat(chunks) })
    res.writeHead(204).end()
    got()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => server.close())
  const address = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const tails = JSON.stringify([{ org: 'o', stream: 'web', q: ['status:5xx'] }])
  // The same node twice (restarted under a new id, the old heartbeat not expired yet), this node
  // itself, and a node without an address: one peer.
  const peers: PeerNode[] = [
    { nodeId: 'old', address, tails }, { nodeId: 'new', address, tails },
    { nodeId: 'self', address: 'http://127.0.0.1:1', tails }, { nodeId: 'bare', address: '', tails },
  ]
  let sent = 0
  const live = new ClusterLive({
    nodeUrl: 'http://127.0.0.1:1', secret: 'sekret', peers: () => peers, beat: async () => {},
    log: createLogger({ level: 'error' }), onSent: (n) => { sent += n }, onDropped: () => {},
  })
  t.teardown(() => live.close())
  t.same(live.filtersFor('o', 'web'), ['status:5xx'])
  t.same(live.filtersFor('o', 'other'), [])
  live.forward('o', 'web', ['', 'status:5xx'], [output([500, 200, 503])])
  await arrived
  t.equal(bodies.length, 1, 'one POST')
  t.equal(bodies[0].secret, 'sekret')
  const [m] = decodeForward(bodies[0].body)
  t.same([m.orgId, m.stream, m.stats.count], ['o', 'web', 3], 'the stats of every event of the request')
  t.same(m.parts.map((p) => p.q), ['status:5xx'], 'only the filter the peer tails, once')
  t.same(events(Buffer.from(m.parts[0].output.frames).toString()), [{ n: 0, status: 500 }, { n: 2, status: 503 }])
  t.equal(await waitFor(() => sent), 2, 'counted as forwarded once answered')
})

t.test('a single node has no internal route and no peers', async (t) => {
  const s = await startServer(t)
  const res = await s.api('POST', '/internal/live', { token: null, body: 'x', headers: { 'x-sluice-cluster-secret': 'anything' } })
  t.equal(res.status, 404)
  t.equal(res.body.error, 'not_found')
})
