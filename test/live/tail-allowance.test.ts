// The tail's allowances in numbers, on a hand-moved clock: a client's token bucket (what it is sent
// per second) and the per-filter allowance of what the workers serialize (docs: tail-allowance.ts).
import t from 'tap'
import { FilterAllowance, TokenBucket } from '../../lib/live/tail-allowance.ts'
import { ManualClock } from '../helpers/manual-clock.ts'

t.test('a token bucket starts full, refills at its rate, never beyond it', async (t) => {
  const clock = new ManualClock(5_000)
  const bucket = new TokenBucket(1000, clock)
  t.equal(bucket.available(), 1000, 'at t=0: the cap, 1000')
  t.ok(bucket.take(1000))
  t.equal(bucket.available(), 0)
  t.notOk(bucket.take(1), 'empty: nothing taken')
  clock.advance(250)
  t.equal(bucket.available(), 250, '250 ms refills 1000 * 0.25 = 250')
  t.notOk(bucket.take(251), 'all or nothing: 251 is refused')
  t.equal(bucket.available(), 250, 'and nothing was taken')
  t.ok(bucket.take(250))
  clock.advance(1)
  t.equal(bucket.available(), 1, '1 ms refills one')
  clock.advance(10_000)
  t.equal(bucket.available(), 1000, 'capped at the rate of one second')

  // Counting drops as the hub does: 300 events offered one by one at 100 a second, over 1.5 s.
  const slow = new TokenBucket(100, clock)
  let sent = 0
  let dropped = 0
  for (let i = 0; i < 300; i++) {
    if (i === 150) clock.advance(1500)
    if (slow.take(1)) sent++
    else dropped++
  }
  t.equal(sent, 100 + 100, '100 at once, then the bucket refilled to its cap of 100')
  t.equal(dropped, 100, 'the rest counted as dropped')
})

t.test('the filter allowance: charged at start by the moving average, settled at commit, reset each second', async (t) => {
  const clock = new ManualClock(0)
  const allowance = new FilterAllowance(100, clock)
  const first = allowance.start(['', 'status:5xx'])
  t.same(first.caps, [100, 100], 'at t=0 the cap is the whole 100')
  t.same(first.charged, [0, 0], 'nothing known of the filters yet')
  allowance.settle(['', 'status:5xx'], first, [{ serialized: 80, dropped: 0 }, { serialized: 2, dropped: 0 }])
  t.equal(allowance.left(''), 20)
  t.equal(allowance.left('status:5xx'), 98)

  const second = allowance.start(['', 'status:5xx'])
  t.same(second.caps, [20, 98], 'what is left')
  t.same(second.charged, [20, 2], 'the average (80 and 2), capped at what is left')
  t.equal(allowance.left(''), 0)

  clock.advance(250)
  t.equal(allowance.left(''), 0, 'within the second nothing comes back by waiting')
  // It serialized 5 of the 20 charged, and its cap left 30 matches out: 15 come back.
  allowance.settle(['', 'status:5xx'], second, [{ serialized: 5, dropped: 30 }, { serialized: 1, dropped: 0 }])
  t.equal(allowance.left(''), 15)
  t.equal(allowance.left('status:5xx'), 97)

  const third = allowance.start([''])
  // Average of matches per request: 80, then 80 + (35 - 80) * 0.25 = 68.75, charged whole: 69 > 15 left.
  t.same(third.charged, [15])
  clock.advance(750) // t = 1000 ms: a new second
  t.equal(allowance.left(''), 100, 'a new second: the whole allowance')
  // A charge from the last second stays there: only what went beyond it counts now.
  allowance.settle([''], third, [{ serialized: 25, dropped: 0 }])
  t.equal(allowance.left(''), 100 - (25 - 15))
  // A request charged elsewhere (its tail closed and opened again) counts whole.
  allowance.settle([''], undefined, [{ serialized: 7, dropped: 0 }])
  t.equal(allowance.left(''), 90 - 7)
})
