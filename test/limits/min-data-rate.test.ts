// The minimum data rate's time budget, with numbers: grace at the start, earned back by bytes,
// capped at the grace (no banking of minutes), behind once it lags by more than a check interval.
import t from 'tap'
import { DataRateBudget } from '../../lib/limits/min-data-rate.ts'

t.test('silence for the grace period is allowed, a millisecond more is not', async (t) => {
  const b = new DataRateBudget({ minBytesPerSecond: 1000, graceMs: 5000 })
  b.wait(5000)
  t.equal(b.remainingMs, 0)
  t.notOk(b.isExhausted)
  b.wait(1)
  t.ok(b.isExhausted)
})

t.test('bytes earn time at the minimum rate; the budget never holds more than the grace', async (t) => {
  const b = new DataRateBudget({ minBytesPerSecond: 1000, graceMs: 5000 })
  b.receive(1_000_000) // 1,000 s worth of bytes at once
  t.equal(b.remainingMs, 5000, 'capped: a fast start cannot buy a slow minute')
  // Exactly the minimum rate: 1,000 bytes a second keeps the budget where it is.
  for (let s = 0; s < 60; s++) { b.wait(1000); b.receive(1000) }
  t.equal(b.remainingMs, 5000)
  // Half the rate for 10 s: 500 ms lost per second, 5 s of grace gone.
  for (let s = 0; s < 10; s++) { b.wait(1000); b.receive(500) }
  t.equal(b.remainingMs, 0)
  t.notOk(b.isExhausted)
  b.wait(1000)
  b.receive(500)
  t.ok(b.isExhausted, 'a 1 byte/s slowloris is cut after the grace, a half-rate one a little later')
})

t.test('behind: lagging by more than a check interval (250 ms), or half a short grace', async (t) => {
  const b = new DataRateBudget({ minBytesPerSecond: 1000, graceMs: 5000 })
  b.wait(250)
  t.notOk(b.isBehind)
  b.wait(1)
  t.ok(b.isBehind)
  b.receive(251)
  t.notOk(b.isBehind, 'caught up')
  const short = new DataRateBudget({ minBytesPerSecond: 1000, graceMs: 200 })
  short.wait(101)
  t.ok(short.isBehind)
  const off = new DataRateBudget({ minBytesPerSecond: 0, graceMs: 5000 })
  off.wait(1e9)
  t.notOk(off.isExhausted || off.isBehind, 'a rate of 0 is off')
})
