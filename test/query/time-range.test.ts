// The from/to parameters: every accepted form, the defaults, and each refusal as invalid_query.
import t from 'tap'
import { parseTimeRange, parseTime, defaultRangeMs } from '../../lib/query/time-range.ts'

const now = Date.UTC(2025, 10, 21, 12, 0, 0) // 2025-11-21T12:00:00Z
const minute = 60_000

t.test('accepted forms', async (t) => {
  const cases: Array<[string, number]> = [
    ['now', now],
    ['now-15m', now - 15 * minute],
    ['now-24h', now - 24 * 60 * minute],
    ['now-7d', now - 7 * 24 * 60 * minute],
    ['now-30s', now - 30_000],
    ['now+30s', now + 30_000],
    ['now+30m', now + 30 * minute],
    ['now+2h', now + 2 * 60 * minute],
    ['now+1d', now + 24 * 60 * minute],
    ['1763700000000', 1_763_700_000_000],
    ['0', 0],
    ['2025-11-21T10:00:00Z', Date.UTC(2025, 10, 21, 10)],
    ['2025-11-21t10:00:00z', Date.UTC(2025, 10, 21, 10)],
    ['2025-11-21T12:00:00.250+02:00', Date.UTC(2025, 10, 21, 10, 0, 0, 250)],
    ['2025-11-21T10:00:00.123456789Z', Date.UTC(2025, 10, 21, 10, 0, 0, 123)],
    ['2025-11-21T10:00:00.5Z', Date.UTC(2025, 10, 21, 10, 0, 0, 500)],
    ['2025-11-21T05:30:00-04:30', Date.UTC(2025, 10, 21, 10)],
    ['2024-02-29T00:00:00Z', Date.UTC(2024, 1, 29)],
    ['2016-12-31T23:59:60Z', Date.UTC(2017, 0, 1)], // a leap second carries into the next minute
  ]
  for (const [text, ms] of cases) t.equal(parseTime('from', text, now), ms, text)
})

t.test('defaults: the last 15 minutes', async (t) => {
  t.same(parseTimeRange({}, now), { from: now - defaultRangeMs, to: now })
  t.same(parseTimeRange({ from: null, to: null }, now), { from: now - defaultRangeMs, to: now }, 'null is absent')
  t.same(parseTimeRange({ from: 'now-1h' }, now), { from: now - 60 * minute, to: now }, 'to defaults to now')
  t.same(parseTimeRange({ to: '1763700000000' }, now), { from: 1_763_700_000_000 - defaultRangeMs, to: 1_763_700_000_000 },
    'from defaults to 15 minutes before to')
  t.same(parseTimeRange({ to: '60000' }, now), { from: 0, to: 60_000 }, 'but not before the epoch')
})

t.test('refusals are invalid_query', async (t) => {
  const bad = [
    '', 'yesterday', 'now-', 'now-15', 'now-15w', 'now+', 'now+5x', 'now++1d', 'now+-1d', 'now-+1d', 'now+1.5h', 'now+15', 'now-1.5h', '-1000', '1e12', '0x10', '17637000000000000',
    '2025-11-21', '2025-11-21T10:00Z', '2025-11-21T10:00:00', '2025-11-21 10:00:00Z', '2025-13-01T00:00:00Z',
    '2025-02-29T00:00:00Z', '2025-11-31T00:00:00Z', '2025-11-21T24:00:00Z', '2025-11-21T10:60:00Z',
    '2025-11-21T10:00:00+24:00', '1969-12-31T23:59:59Z', '1970-01-01T00:30:00+01:00', 'now-99999999d',
  ]
  for (const text of bad) {
    t.throws(() => parseTimeRange({ from: text }, now), { code: 'invalid_query' }, JSON.stringify(text))
  }
  t.throws(() => parseTimeRange({ from: 'now', to: 'now-1h' }, now), { code: 'invalid_query' }, 'from after to')
  t.same(parseTimeRange({ from: 'now-1h', to: 'now+2d' }, now), { from: now - 60 * minute, to: now + 2 * 24 * 60 * minute },
    'to may lie ahead, for events with a ts in the future')
  t.throws(() => parseTimeRange({ from: 'now+1h', to: 'now' }, now), { code: 'invalid_query' }, 'from ahead of to')
  t.throws(() => parseTimeRange({ from: 'now', to: 'now' }, now), { code: 'invalid_query' }, 'an empty range')
  t.throws(() => parseTimeRange({ to: 'x' }, now), { code: 'invalid_query', message: /^to:/ }, 'the message names the parameter')
})
