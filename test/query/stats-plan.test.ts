// Which source, step and aligned range a stats request gets; no ClickHouse needed.
import t from 'tap'
import { chooseStep, parseStep, planStats, maxPoints, minuteMaxRangeMs, rawMaxRangeMs } from '../../lib/query/stats-plan.ts'
import { rawSql } from '../../lib/storage/sql.ts'

const second = 1000
const minute = 60 * second
const hour = 60 * minute
const day = 24 * hour
const now = Date.UTC(2025, 10, 21, 12, 37, 13, 421)
const stream = { orgId: 'o', stream: 's' }

t.test('parseStep', async (t) => {
  t.equal(parseStep('10s'), 10 * second)
  t.equal(parseStep('1m'), minute)
  t.equal(parseStep('90m'), 90 * minute)
  t.equal(parseStep('1h'), hour)
  t.equal(parseStep('1d'), day)
  for (const bad of ['', '0s', '10', 's', '1.5m', '-1m', '10ms', '1w', ' 1m', '1m ', '1M', '1000000s']) {
    t.throws(() => parseStep(bad), { code: 'invalid_query' }, JSON.stringify(bad))
  }
})

t.test('chooseStep gives about 100 points on a nice step', async (t) => {
  const cases: Array<[number, number]> = [
    [30 * second, second], [15 * minute, 10 * second], [hour, 30 * second], [6 * hour, 5 * minute],
    [24 * hour, 10 * minute], [7 * day, hour], [30 * day, 6 * hour], [365 * day, day],
  ]
  for (const [range, step] of cases) t.equal(chooseStep(now - range, now), step, `${range / minute} min -> ${step / second} s`)
})

t.test('source by range and filter', async (t) => {
  const source = (range: number, filter?: string) => planStats({ ...stream, from: now - range, to: now, filter: filter === undefined ? undefined : rawSql(filter) }).source
  t.equal(source(15 * minute), 'events')
  t.equal(source(rawMaxRangeMs), 'events')
  t.equal(source(rawMaxRangeMs + minute), 'events_1m')
  t.equal(source(minuteMaxRangeMs), 'events_1m')
  t.equal(source(minuteMaxRangeMs + hour), 'events_1h')
  t.equal(source(30 * day, "path = '/'"), 'events', 'a filter reads raw rows')
  t.equal(source(30 * day, '1'), 'events_1h', "rawSql('1') is no filter")
})

t.test('ranges widen to whole steps; rollup steps to whole buckets', async (t) => {
  const raw = planStats({ ...stream, from: now - 15 * minute, to: now })
  t.same([raw.from, raw.to, raw.stepMs], [Date.UTC(2025, 10, 21, 12, 22, 10), Date.UTC(2025, 10, 21, 12, 37, 20), 10 * second])

  const minuteRollup = planStats({ ...stream, from: now - 24 * hour, to: now, stepMs: 10 * second })
  t.equal(minuteRollup.source, 'events_1m')
  t.equal(minuteRollup.stepMs, minute, 'a step under the bucket is raised to the bucket')
  t.same([minuteRollup.from, minuteRollup.to], [Date.UTC(2025, 10, 20, 12, 37), Date.UTC(2025, 10, 21, 12, 38)])

  const odd = planStats({ ...stream, from: now - 24 * hour, to: now, stepMs: 90 * second })
  t.equal(odd.stepMs, 2 * minute, 'and a step between buckets to the next whole bucket')

  const hourRollup = planStats({ ...stream, from: now - 7 * day, to: now, stepMs: 5 * minute })
  t.same([hourRollup.source, hourRollup.stepMs, hourRollup.from % hour, hourRollup.to % hour], ['events_1h', hour, 0, 0])

  const forced = planStats({ ...stream, from: now - 15 * minute, to: now, source: 'events_1h' })
  t.same([forced.from, forced.to, forced.stepMs], [Date.UTC(2025, 10, 21, 12), Date.UTC(2025, 10, 21, 13), hour])
})

t.test('limits', async (t) => {
  // 100 ms steps over 18 minutes: raw rows, so the step stands.
  t.equal(planStats({ ...stream, from: 0, to: maxPoints * 100, stepMs: 100 }).stepMs, 100, `${maxPoints} points pass`)
  t.throws(() => planStats({ ...stream, from: 0, to: (maxPoints + 1) * 100, stepMs: 100 }), { code: 'invalid_query' }, 'one more does not')
  // A step the hourly rollup raised is said as asked, then as raised (explore34d J8).
  t.throws(() => planStats({ ...stream, from: 0, to: 3650 * 86_400_000, stepMs: 60_000 }), { code: 'invalid_query', message: /^step 60000 ms \(raised to 3600000 ms, the bucket of the rollup/ })
  t.throws(() => planStats({ ...stream, from: now, to: now + hour, stepMs: 0 }), { code: 'invalid_query' })
  t.throws(() => planStats({ ...stream, from: now, to: now + hour, stepMs: 1.5 }), { code: 'invalid_query' })
  t.throws(() => planStats({ ...stream, from: now, to: now + hour, topN: 2.5 }), { code: 'invalid_query' })
  t.equal(planStats({ ...stream, from: now, to: now + hour }).topN, 10, 'top lists default to 10 entries')
})
