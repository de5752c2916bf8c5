// PathCounter: exact counts by bytes, past its first table and arena sizes, cleared between
// tasks; the paths it reports are chosen as LiveStats chooses among string paths.
import t from 'tap'
import { PathCounter } from '../../lib/live/path-counter.ts'
import { LiveStats } from '../../lib/live/live-stats.ts'
import { eventRow } from '../helpers/events.ts'

/** Counts each path of `paths` from a buffer holding them all, as the scanner's spans. */
function countAll (counter: PathCounter, paths: string[]): void {
  const bytes = Buffer.from(paths.join('\n'))
  let start = 0
  for (const path of paths) {
    const end = start + Buffer.byteLength(path)
    counter.add(bytes, start, end)
    start = end + 1
  }
}

t.test('counts each distinct path exactly, multibyte and empty ones included', async (t) => {
  const counter = new PathCounter()
  const paths = ['/a', '/b', '/a', '/caf\u00e9', '/a', '', '/caf\u00e9', '/b\u{1f600}']
  countAll(counter, paths)
  t.equal(counter.size, 5)
  t.strictSame(new Map(counter.frequent(10)), new Map([['/a', 3], ['/caf\u00e9', 2], ['/b', 1], ['', 1], ['/b\u{1f600}', 1]]))
})

t.test('grows past 1024 distinct paths and 16 KiB of bytes, and clears', async (t) => {
  const counter = new PathCounter()
  const paths: string[] = []
  for (let i = 0; i < 5000; i++) paths.push(`/api/v1/orders/${i % 3000}/items-${'x'.repeat(i % 7)}`)
  countAll(counter, paths)
  const counts = new Map<string, number>()
  for (const p of paths) counts.set(p, (counts.get(p) ?? 0) + 1)
  t.equal(counter.size, counts.size)
  const reported = counter.frequent(counts.size)
  t.equal(reported.length, counts.size)
  t.strictSame(new Map(reported), counts, 'every count exact')
  counter.clear()
  t.equal(counter.size, 0)
  countAll(counter, ['/x', '/x'])
  t.strictSame(counter.frequent(5), [['/x', 2]], 'nothing left from before the clear')
})

t.test('reports paths as LiveStats chooses them: repeated ones first, most frequent if too many', async (t) => {
  const paths: string[] = []
  // 50 paths seen 1-5 times, 10 of each count: 40 repeated, more than a task reports.
  for (let i = 0; i < 50; i++) for (let k = 0; k <= i % 5; k++) paths.push(`/p${i}`)
  for (let i = 0; i < 10; i++) paths.push(`/once${i}`)
  const counter = new PathCounter()
  countAll(counter, paths)
  // The same events through LiveStats#add, its paths counted in a counter of its own, and as
  // partials merged from one-event partials (LiveStats keeps merged paths in a Map by string).
  const fromBytes = new LiveStats()
  const rowCounter = new PathCounter()
  const fromStrings = new LiveStats()
  for (const path of paths) {
    fromBytes.add(eventRow({ ts: 0, status: 200, bytes: 1, rt: 0.1, path }), rowCounter)
    const one = new LiveStats()
    const oneCounter = new PathCounter()
    one.add(eventRow({ ts: 0, status: 200, bytes: 1, rt: 0.1, path }), oneCounter)
    fromStrings.merge(one.toPartial(oneCounter))
  }
  t.strictSame(new Map(rowCounter.frequent(1000)), new Map(counter.frequent(1000)), 'LiveStats#add counts each path once')
  const a = fromBytes.toPartial(rowCounter)
  const b = fromStrings.toPartial()
  t.equal(a.paths.length, 32)
  const byCount = (list: Array<[string, number]>): number[] => list.map(([, n]) => n).sort((x, y) => y - x)
  t.strictSame(byCount(a.paths), byCount(b.paths), 'the same counts are reported')
  t.strictSame(byCount(a.paths), [...Array(10).fill(5), ...Array(10).fill(4), ...Array(10).fill(3), 2, 2], 'the most frequent of the repeated paths')
  t.strictSame({ ...a, paths: [] }, { ...b, paths: [] }, 'the other aggregates alike')

  const few = new PathCounter()
  countAll(few, ['/r', '/r', '/s', '/t'])
  t.strictSame(few.frequent(2), [['/r', 2], ['/s', 1]], 'then paths seen once, in the order they came')
})
