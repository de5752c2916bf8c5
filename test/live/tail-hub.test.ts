// TailHub's per-filter allowance with requests in flight at once: each request is charged at its
// start what requests matched of late, so a busy filter's allowance is not handed whole to every
// request in flight (the workers would serialize every event), while a selective filter, whose
// requests match little, is never cut short.
import t from 'tap'
import { EventEmitter } from 'node:events'
import type { ServerResponse } from 'node:http'
import { TailHub } from '../../lib/live/tail-hub.ts'
import { LiveStats } from '../../lib/live/live-stats.ts'
import { ManualClock } from '../helpers/manual-clock.ts'
import type { LiveOutput, LiveRequest } from '../../lib/live/live-protocol.ts'

class FakeResponse extends EventEmitter {
  writableLength = 0
  text = ''
  writeHead (): this { return this }
  write (chunk: string): boolean { this.text += chunk; return true }
  end (): void { this.emit('close') }
}

/** A task's output where the first `all` events match filter 0 and the first `marked` also filter 1. */
function output (all: number, marked: number, dropped: number[] = [0, 0]): LiveOutput {
  const frames = Array.from({ length: all }, (_, i) => Buffer.from(`event: event\ndata: ${JSON.stringify({ n: i })}\n\n`))
  const ends: number[] = []
  let end = 0
  for (const frame of frames) ends.push(end += frame.byteLength)
  return {
    frames: new Uint8Array(Buffer.concat(frames)),
    ends,
    masks: Array.from({ length: all }, (_, i) => i < marked ? 0b11 : 0b01),
    dropped,
    stats: new LiveStats().toPartial(),
  }
}

t.test('requests in flight share a busy filter\'s allowance; a selective one is never cut', async (t) => {
  // The clock does not move during the test: the allowance window stays the same.
  const hub = new TailHub({ eventsPerSecond: 100, clock: new ManualClock() })
  t.teardown(() => hub.close())
  const everything = new FakeResponse()
  const markers = new FakeResponse()
  hub.open(everything as unknown as ServerResponse, 'org', 'web', '')
  hub.open(markers as unknown as ServerResponse, 'org', 'web', 'host:marker')

  const first = hub.liveRequestFor('org', 'web')!
  t.same(first.filters, ['', 'host:marker'])
  t.same(first.caps, [100, 100], 'nothing known yet: the whole allowance')
  hub.publish('org', 'web', first, [output(50, 1)])
  // Left: 100 - 50 and 100 - 1; a request matches 50 and 1 on average.

  const inFlight: LiveRequest[] = []
  for (let i = 0; i < 5; i++) inFlight.push(hub.liveRequestFor('org', 'web')!)
  t.same(inFlight.map((r) => r.caps[0]), [50, 0, 0, 0, 0], 'the busy filter: what is left, then nothing once charged')
  t.same(inFlight.map((r) => r.caps[1]), [99, 98, 97, 96, 95], 'the selective filter: charged one a request')

  // The first in flight serialized 40 of its 50: the 10 it was charged and did not use come back.
  hub.publish('org', 'web', inFlight[0], [output(40, 1)])
  t.equal(hub.liveRequestFor('org', 'web')!.caps[0], 10)

  // Matches left out by a cap count toward the average: 0 serialized, 60 dropped.
  for (const r of inFlight.slice(1)) hub.publish('org', 'web', r, [output(0, 0, [60, 0])])
  const dropped = [...everything.text.matchAll(/event: dropped\ndata: \{"count":(\d+)\}/g)].reduce((n, m) => n + Number(m[1]), 0)
  t.equal(dropped, 240, 'the matches left out are reported as dropped')
  t.equal(everything.text.match(/event: event/g)?.length, 90, 'the events serialized are sent')
  t.equal(markers.text.match(/event: event/g)?.length, 2, 'every marker delivered')
})

t.test('a charge from an earlier second stays there; only what went beyond it counts now', async (t) => {
  const clock = new ManualClock()
  const hub = new TailHub({ eventsPerSecond: 100, clock })
  t.teardown(() => hub.close())
  const client = new FakeResponse()
  hub.open(client as unknown as ServerResponse, 'org', 'web', '')

  hub.publish('org', 'web', hub.liveRequestFor('org', 'web')!, [output(50, 0, [0])])
  const inFlight = [hub.liveRequestFor('org', 'web')!, hub.liveRequestFor('org', 'web')!]
  t.same(inFlight.map((r) => r.caps[0]), [50, 0], 'charged 50 each at the start')

  clock.advance(1000) // the next second: a new allowance window, and a stats tick
  t.match(client.text, /event: stats\ndata: \{"t":1000,/, 'a stats event stamped with the injected time')
  hub.publish('org', 'web', inFlight[0], [output(50, 0, [0])])
  t.equal(hub.liveRequestFor('org', 'web')!.caps[0], 100, 'serialized what it was charged: nothing more this second')
  hub.publish('org', 'web', inFlight[1], [output(20, 0, [0])])
  t.equal(hub.liveRequestFor('org', 'web')!.caps[0], 50 - 20, 'charged 0, serialized 20: on top of the charge just made')
})

t.test('heartbeats and stats come on the injected clock', async (t) => {
  const clock = new ManualClock()
  const hub = new TailHub({ clock, statsIntervalMs: 1000, heartbeatMs: 15_000 })
  t.teardown(() => hub.close())
  const client = new FakeResponse()
  hub.open(client as unknown as ServerResponse, 'org', 'web', '')
  clock.advance(14_999)
  t.equal(client.text.match(/event: stats/g)?.length, 14, 'one stats event a second')
  t.notMatch(client.text, /: heartbeat/)
  clock.advance(1)
  t.equal(client.text.match(/: heartbeat\n\n/g)?.length, 1, 'a heartbeat at 15 s')
  hub.close()
  const before = client.text.length
  clock.advance(60_000)
  t.equal(client.text.length, before, 'nothing after close()')
})

t.test('clients with the same filter get the same frames; one out of room gets what fits, then a dropped count', async (t) => {
  const clock = new ManualClock()
  const hub = new TailHub({ eventsPerSecond: 100, maxBufferedBytes: 64 * 1024, clock })
  t.teardown(() => hub.close())
  const a = new FakeResponse()
  const b = new FakeResponse()
  const full = new FakeResponse()
  for (const res of [a, b, full]) hub.open(res as unknown as ServerResponse, 'org', 'web', '')
  full.writableLength = 64 * 1024 + 1 // its socket is backed up past the limit: nothing more fits

  hub.publish('org', 'web', hub.liveRequestFor('org', 'web')!, [output(30, 0, [5, 0]), output(20, 0, [0, 0])])
  t.equal(a.text, b.text, 'the same frames')
  t.equal(a.text.match(/event: event/g)?.length, 50)
  t.same(JSON.parse(/data: (.*)\n/.exec(a.text)![1]), { n: 0 }, 'in body order')
  t.match(a.text, /event: dropped\ndata: \{"count":5\}/, 'what the workers dropped')
  t.notMatch(full.text, /event: event/, 'nothing for the backed-up client')
  t.notMatch(full.text, /event: dropped/, 'its count waits until it drains')

  full.writableLength = 0
  hub.publish('org', 'web', hub.liveRequestFor('org', 'web')!, [output(60, 0, [0, 0])])
  // 110 matched in all, no time passed: 100 tokens, the rest dropped.
  const sent = a.text.match(/event: event/g)?.length ?? 0
  const droppedNow = Number(/event: dropped\ndata: \{"count":(\d+)\}\n\n$/.exec(a.text)?.[1] ?? 0)
  t.equal(sent, 100, 'a client is sent eventsPerSecond at most')
  t.equal(droppedNow, 10, 'past its tokens: the rest of the 60 counted as dropped')
  t.equal(full.text.match(/event: event/g)?.length, 60, 'the drained client gets the new events')
  t.match(full.text, /event: dropped\ndata: \{"count":55\}/, 'and what it missed: 50 events and the workers\' 5')
  clock.advance(250) // a quarter second refills a quarter of the tokens: 25
  hub.publish('org', 'web', hub.liveRequestFor('org', 'web')!, [output(40, 0, [0, 0])])
  t.equal(a.text.match(/event: event/g)?.length, 100 + 25, '25 more sent after 250 ms')
  t.match(a.text, /event: dropped\ndata: \{"count":15\}\n\n$/, 'the other 15 dropped')
})
