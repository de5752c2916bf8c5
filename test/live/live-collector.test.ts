// LiveCollector in the worker: matches within a filter's cap are serialized and counted exactly;
// past the cap an empty q still counts exactly, a filter counts by sampling one row in
// `sampleEvery` (so `dropped` is an estimate there); live stats see every row.
import t from 'tap'
import { LiveCollector, sampledEvery, sampleEvery } from '../../lib/live/live-collector.ts'
import type { EventRow } from '../../lib/events/event-row.ts'
import { eventRow } from '../helpers/events.ts'

function row (i: number): EventRow {
  return eventRow({
    ts: 1_700_000_000_000 + i,
    host: i % 2 === 0 ? 'even' : 'odd',
    path: `/p/${i % 3}`,
    method: 'GET',
    status: 200,
    rt: 0.01,
    bytes: 10,
    src: null,
    user_agent: null,
    message: null,
    filename: null,
    attrs: '{}',
  })
}

t.test('within the caps every match is serialized once and counted', async (t) => {
  const c = new LiveCollector({ filters: ['', 'host:even'], caps: [1000, 1000] }, 0)
  for (let i = 0; i < 100; i++) c.add(row(i), i)
  const out = c.finish()
  t.equal(out.ends.length, 100, 'each row serialized once, whatever it matched')
  const frames = Buffer.from(out.frames).toString().split('\n\n').slice(0, -1)
  t.equal(frames.length, 100)
  t.same(JSON.parse(frames[3].replace('event: event\ndata: ', '')).ts, row(3).ts, 'SSE frames of the events, in order')
  t.equal(out.masks.filter((m) => m === 0b11).length, 50, 'the even rows matched both')
  t.equal(out.masks.filter((m) => m === 0b01).length, 50)
  t.same(out.dropped, [0, 0])
  t.equal(out.stats.count, 100)
})

t.test('past the cap: an empty q counts exactly, a filter by sampling', async (t) => {
  const rows = 2000 * sampleEvery
  const c = new LiveCollector({ filters: ['', 'host:even', 'host:nobody'], caps: [10, 10, 10] }, 0)
  for (let i = 0; i < rows; i++) c.add(row(i), i)
  const out = c.finish()
  t.equal(out.masks.filter((m) => (m & 0b001) !== 0).length, 10, 'q empty: its cap serialized')
  t.equal(out.masks.filter((m) => (m & 0b010) !== 0).length, 10, 'host:even: its cap serialized')
  t.equal(out.dropped[0], rows - 10, 'q empty: every other row counted as dropped')
  // Rows are sampled at random: an estimate, here within 10% (about 10 standard deviations),
  // even though every other row matches (a sample of every 16th row would see only even ones).
  const trueDropped = rows / 2 - 10
  t.ok(Math.abs(out.dropped[1] - trueDropped) <= 0.1 * trueDropped, `host:even: estimated ${out.dropped[1]}, true ${trueDropped}`)
  t.equal(out.dropped[1] % sampleEvery, 0, 'an estimate: whole samples')
  t.equal(out.dropped[2], 0, 'a filter that matches nothing drops nothing')
  t.equal(out.stats.count, rows, 'live stats count every row')
})

function messageRow (i: number, message: string): EventRow {
  return eventRow({ ts: 1_700_000_000_000 + i, host: 'h', path: '/', method: 'GET', status: 200, rt: 0.01, bytes: 10, src: null, user_agent: null, message, filename: null, attrs: '{}' })
}

t.test('regular expressions share a budget of automaton steps: past it a filter is sampled, its matches standing for the rows passed over', async (t) => {
  // About 6,600 steps a row (600 characters, about 11 states each) against a budget of about 3,400
  // (1,000 + 4 per character): past the base budget the filter is sampled; a filter without a
  // regex is matched against every row.
  const rows = 20_000
  const message = `${'x'.repeat(600)}end`
  const c = new LiveCollector({ filters: ['message:~"x{1,10}end"', 'message:xxx*'], caps: [rows, rows] }, 0)
  for (let i = 0; i < rows; i++) c.add(messageRow(i, message), i)
  const out = c.finish()
  const delivered = out.masks.filter((m) => (m & 0b01) !== 0).length
  t.ok(delivered < rows / 4, `the regex filter is sampled: ${delivered} of ${rows} delivered`)
  t.ok(delivered > 0, 'its matches within the budget are delivered')
  t.ok(Math.abs(delivered + out.dropped[0] - rows) <= 0.1 * rows, `delivered and dropped estimate every match: ${delivered} + ${out.dropped[0]}`)
  t.equal(out.masks.filter((m) => (m & 0b10) !== 0).length, rows, 'the filter without a regex: every row')
  t.same(out.dropped[1], 0)
})

t.test('a regular expression stopped past its steps does not match that row', async (t) => {
  // 1,000 states over a 2,000-character message: about 2 M steps a row (20 ms), past any share.
  const c = new LiveCollector({ filters: ['message:~"[^z]{999}z"', ''], caps: [1000, 1000] }, 0)
  for (let i = 0; i < 300; i++) c.add(messageRow(i, `${'a'.repeat(2000)}z`), i)
  const out = c.finish()
  t.equal(out.masks.filter((m) => (m & 0b01) !== 0).length, 0, 'none delivered')
  t.equal(out.masks.length, 300, 'the empty q still gets every row')
  t.equal(out.stats.count, 300)
})

t.test('a costly pattern stays thinned across tasks (a stream fed line by line); a cheap one is not, and one that turns cheap recovers', async (t) => {
  const costly = 'message:~"[^w]{999}w"'
  const cheap = 'message:~"^v"'
  const task = (message: string): void => {
    const c = new LiveCollector({ filters: [costly, cheap], caps: [100, 100] }, 0)
    c.add(messageRow(0, message), 0)
    c.finish()
  }
  task(`${'a'.repeat(2000)}w`)
  t.ok(sampledEvery(costly) >= sampleEvery, `cut off in a one-line task: sampled from the next task on (1 in ${sampledEvery(costly)})`)
  for (let i = 0; i < 200; i++) task(`${'a'.repeat(2000)}w`)
  t.ok(sampledEvery(costly) >= sampleEvery, `still after 200 more (1 in ${sampledEvery(costly)})`)
  t.equal(sampledEvery(cheap), 1, 'the cheap pattern beside it: every row')
  // Short messages: each match fits in a quarter of the share, so the sampling halves per task.
  for (let i = 0; i < 20_000 && sampledEvery(costly) > 1; i++) task('w')
  t.equal(sampledEvery(costly), 1, 'matched cheaply again, it is back to every row')
})
