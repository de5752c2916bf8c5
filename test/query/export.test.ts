// The export's windows (lib/query/export-query.ts): planned from the events' counts and bytes per
// minute, one query ahead, they cover the range once and in (ts, seq) order, whatever the window
// size, a filter, the width of the events, or a minute rollup that lacks rows.
import t from 'tap'
import { createTestDatabase } from '../helpers/clickhouse.ts'
import { migrate } from '../../lib/storage/migrate.ts'
import { createLogger } from '../../lib/logger.ts'
import { exportEvents, planWindows } from '../../lib/query/export-query.ts'
import { queryEvents } from '../../lib/query/events-query.ts'
import { rawSql } from '../../lib/storage/sql.ts'
import { waitFor } from '../helpers/wait-for.ts'
import { drained } from '../../lib/query/export-route.ts'
import { createServer, get as httpGet } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { ClickHouse } from '../../lib/storage/clickhouse.ts'

const minute = 60_000

/** `clickhouse`, counting its calls of `method`: the export's window queries (queryChunks), its plan's statements (query). */
function countingCalls (clickhouse: ClickHouse, method: 'query' | 'queryChunks'): { counting: ClickHouse, calls: () => number, reset: () => void } {
  let calls = 0
  const counting = new Proxy(clickhouse, {
    get (target, prop) {
      const value = Reflect.get(target, prop) as unknown
      if (typeof value !== 'function') return value
      const bound = (value as (...a: unknown[]) => unknown).bind(target)
      return prop === method ? (...args: unknown[]) => { calls++; return bound(...args) } : bound
    },
  })
  return { counting, calls: () => calls, reset: () => { calls = 0 } }
}

/** `clickhouse`, counting the export's window queries (queryChunks). */
function countingWindows (clickhouse: ClickHouse): { counting: ClickHouse, windows: () => number } {
  const { counting, calls } = countingCalls(clickhouse, 'queryChunks')
  return { counting, windows: calls }
}

t.test('planWindows packs minutes up to the limit and cuts a minute holding more', async (t) => {
  const from = 10 * minute + 30_000
  const to = 20 * minute + 5_000
  const counted = (entries: Array<[number, number]>): Map<number, { rows: number, bytes: number }> =>
    new Map(entries.map(([m, n]) => [m, { rows: n, bytes: n * 100 }]))
  const counts = counted([[10 * minute, 40], [11 * minute, 70], [12 * minute, 30], [15 * minute, 250], [20 * minute, 5]])
  const windows = planWindows(from, to, counts, 100)
  t.equal(windows[0].lo, from, 'starts at from')
  t.equal(windows.at(-1)!.hi, to, 'ends at to')
  for (let i = 1; i < windows.length; i++) t.equal(windows[i].lo, windows[i - 1].hi, `window ${i} follows the one before`)
  t.ok(windows.every((w) => w.rows <= 100 && w.lo < w.hi), 'none planned past the limit, none empty')
  const cut = windows.filter((w) => w.lo >= 15 * minute && w.hi <= 16 * minute)
  t.equal(cut.length, 3, 'the minute of 250 in three parts')
  const leading = planWindows(0, 3 * minute, counted([[2 * minute, 250]]), 100)
  t.same(leading[0], { lo: 0, hi: 2 * minute, rows: 0 }, 'empty minutes before a cut minute are a window of their own')
  t.same(planWindows(0, 5 * minute, new Map(), 100), [{ lo: 0, hi: 5 * minute, rows: 0 }], 'an empty range is one window')
  // Bytes bound a window too: 100-byte events pack by rows, 84 KB ones by bytes.
  const wide = new Map([[0, { rows: 40, bytes: 40 * 84_000 }], [minute, { rows: 40, bytes: 40 * 84_000 }], [2 * minute, { rows: 40, bytes: 4_000 }]])
  const byBytes = planWindows(0, 3 * minute, wide, 100, 1_000_000)
  t.ok(byBytes.every((w) => w.lo < w.hi), 'none empty')
  t.equal(byBytes.filter((w) => w.hi <= minute).length, 4, 'a minute of 3.4 MB in four parts of at most 1 MB')
  t.same(byBytes.at(-1), { lo: 2 * minute, hi: 3 * minute, rows: 40 }, 'narrow events by rows')
})

t.test('an export over many windows: every event once, ascending, filtered, with rows the rollup misses', async (t) => {
  const { clickhouse } = await createTestDatabase(t)
  await migrate(clickhouse, createLogger({ level: 'warn', fd: 2 }))
  const base = 1_700_000_000_000 - (1_700_000_000_000 % minute)
  const rows: string[] = []
  for (let i = 0; i < 3_000; i++) {
    // 3,000 events over 10 minutes, a burst of 1,000 in one second of minute 4.
    const ts = i < 1_000 ? base + 4 * minute + (i % 1_000) : base + Math.floor((i - 1_000) * 10 * minute / 2_000)
    rows.push(JSON.stringify({ org_id: 'o', stream: 's', ts, received_at: ts, host: i % 3 === 0 ? 'a' : 'b', attrs: '{}', seq: i + 1, size: 10 }))
  }
  await clickhouse.insertRaw('INSERT INTO events (org_id, stream, ts, received_at, host, attrs, seq, size) FORMAT JSONEachRow', Buffer.from(rows.join('\n')))
  // Rows the minute rollup does not count (as after a rollup was dropped): minutes 4 to 5, with the burst.
  await clickhouse.command(`ALTER TABLE events_1m DELETE WHERE minute_ts >= ${base + 4 * minute} AND minute_ts < ${base + 6 * minute}`)
  await waitFor(async () => Number((await clickhouse.query<{ n: number }>('SELECT count() AS n FROM system.mutations WHERE database = currentDatabase() AND is_done = 0'))[0].n) === 0)
  const read = async (windowRows: number, where?: string): Promise<Array<{ ts: number, id: string, host: string }>> => {
    let text = ''
    for await (const chunk of exportEvents(clickhouse, { orgId: 'o', stream: 's', from: base, to: base + 10 * minute, hiddenBefore: 0, windowRows, where: where === undefined ? undefined : rawSql(where) })) {
      text += Buffer.from(chunk).toString('utf8')
    }
    return text.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l))
  }
  for (const windowRows of [50, 333, 200_000]) {
    const events = await read(windowRows)
    t.equal(events.length, 3_000, `windows of ${windowRows}: every event`)
    t.equal(new Set(events.map((e) => e.id)).size, 3_000, 'each once')
    const keys = events.map((e) => e.id.split('-').map(Number))
    t.ok(keys.every((k, i) => i === 0 || k[0] > keys[i - 1][0] || (k[0] === keys[i - 1][0] && k[1] > keys[i - 1][1])), 'ascending by (ts, seq)')
  }
  const filtered = await read(100, "host = 'a'")
  t.equal(filtered.length, 1_000)
  t.ok(filtered.every((e) => e.host === 'a'))
})

t.test('an export over ten years of few events: the empty years are skipped, not planned a day at a time (explore34d J3)', async (t) => {
  const { clickhouse } = await createTestDatabase(t)
  await migrate(clickhouse, createLogger({ level: 'warn', fd: 2 }))
  const day = 86_400_000
  const end = 1_795_000_000_000
  // 5 events 400 days back, 3 two days back, 4 in the last hour.
  const times = [...[0, 1, 2, 3, 4].map((i) => end - 400 * day + i), ...[0, 1, 2].map((i) => end - 2 * day + i * 1000), ...[0, 1, 2, 3].map((i) => end - 3_600_000 + i)]
  const rows = times.map((ts, i) => JSON.stringify({ org_id: 'o', stream: 's', ts, received_at: ts, attrs: '{}', seq: i + 1, size: 10 }))
  await clickhouse.insertRaw('INSERT INTO events (org_id, stream, ts, received_at, attrs, seq, size) FORMAT JSONEachRow', Buffer.from(rows.join('\n')))
  const { counting, calls: statements, reset } = countingCalls(clickhouse, 'query')
  for (const [from, wanted] of [[end - 3650 * day, times.length], [end - 1000 * day, times.length], [end - 30 * day, 7], [end - 3650 * day - 5, times.length]] as const) {
    reset()
    let text = ''
    for await (const chunk of exportEvents(counting, { orgId: 'o', stream: 's', from, to: end, hiddenBefore: 0 })) text += Buffer.from(chunk).toString('utf8')
    const got = text.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as { ts: number })
    t.same(got.map((e) => e.ts), times.filter((ts) => ts >= from).sort((a, b) => a - b), `from ${(end - from) / day} days back: every event, ascending`)
    t.equal(got.length, wanted)
    t.ok(statements() <= 10, `${statements()} plan statements over ${Math.round((end - from) / day)} days`)
  }
  // A stream without an event in the range: one statement a side of the empty span.
  reset()
  let empty = ''
  for await (const chunk of exportEvents(counting, { orgId: 'o', stream: 'none', from: end - 3650 * day, to: end, hiddenBefore: 0 })) empty += Buffer.from(chunk).toString('utf8')
  t.equal(empty, '')
  t.ok(statements() <= 2, `${statements()} statements for an empty stream over ten years`)
})

t.test('an export of wide events: its windows are bounded by bytes as well as rows (explore27d M1)', async (t) => {
  const { clickhouse } = await createTestDatabase(t)
  await migrate(clickhouse, createLogger({ level: 'warn', fd: 2 }))
  const base = 1_700_000_000_000 - (1_700_000_000_000 % minute)
  // 300 events of 84 KB lines (their size; attrs stand in small) over 3 minutes.
  const rows = Array.from({ length: 300 }, (_, i) => JSON.stringify({ org_id: 'o', stream: 's', ts: base + i * 600, received_at: base, attrs: '{}', seq: i + 1, size: 84_000 }))
  await clickhouse.insertRaw('INSERT INTO events (org_id, stream, ts, received_at, attrs, seq, size) FORMAT JSONEachRow', Buffer.from(rows.join('\n')))
  const { counting, windows } = countingWindows(clickhouse)
  let lines = 0
  for await (const chunk of exportEvents(counting, { orgId: 'o', stream: 's', from: base, to: base + 3 * minute, hiddenBefore: 0, windowRows: 200_000, windowBytes: 1_000_000 })) {
    for (const byte of chunk) if (byte === 10) lines++
  }
  t.equal(lines, 300, 'every event')
  // 25.2 MB of events in windows of at most 1 MB (11 events): at least 26 windows, where rows
  // alone made one.
  t.ok(windows() >= 26, `${windows()} window queries`)
})

t.test('an export of bursts (each minute\'s events in one millisecond) keeps its windows to the minutes\' shares', async (t) => {
  const { clickhouse } = await createTestDatabase(t)
  await migrate(clickhouse, createLogger({ level: 'warn', fd: 2 }))
  const base = 1_700_000_000_000 - (1_700_000_000_000 % minute)
  const rows: string[] = []
  // 10 minutes of 1,000 events each, all of a minute's in one millisecond (a request's events,
  // stamped at arrival), at a different second of each minute.
  for (let i = 0; i < 10_000; i++) {
    const m = Math.floor(i / 1_000)
    const ts = base + m * minute + ((m * 7_919) % 60) * 1000
    rows.push(JSON.stringify({ org_id: 'o', stream: 's', ts, received_at: ts, attrs: '{}', seq: i + 1, size: 10 }))
  }
  await clickhouse.insertRaw('INSERT INTO events (org_id, stream, ts, received_at, attrs, seq, size) FORMAT JSONEachRow', Buffer.from(rows.join('\n')))
  const { counting, windows } = countingWindows(clickhouse)
  let lines = 0
  for await (const chunk of exportEvents(counting, { orgId: 'o', stream: 's', from: base, to: base + 10 * minute, hiddenBefore: 0, windowRows: 100 })) {
    for (const byte of chunk) if (byte === 10) lines++
  }
  t.equal(lines, 10_000, 'every event')
  // Each minute is cut in ten (1,000 / 100); before, each burst shrank the windows of the next
  // minutes until they were 1-ms windows of at most one event's share: thousands of queries.
  t.ok(windows() <= 110, `${windows()} window queries`)
})

t.test('an exported line holds the same JSON as the event in /events, whatever its strings', async (t) => {
  const { clickhouse } = await createTestDatabase(t)
  await migrate(clickhouse, createLogger({ level: 'warn', fd: 2 }))
  const base = 1_700_000_000_000
  const tricky = ['plain', 'quote " and \\ backslash', 'line\nbreak\ttab\r\u0001\u001f', 'slash / </script>', 'emoji 🚀 é ü', '","received_at":1,"attrs":"x', '\u2028\u2029', '']
  const deep = '{"x":' + '['.repeat(3_000) + ']'.repeat(3_000) + '}'
  const rows = tricky.map((text, i) => JSON.stringify({
    org_id: 'o', stream: 's', ts: base + i, received_at: base + 100 + i, seq: i + 1, size: 10,
    host: i % 2 === 0 ? text : null, message: text, level: i % 3 === 0 ? 'error' : null, status: i === 0 ? 200 : null,
    rt: [0.1, 1e-7, 123.456, 5][i % 4], bytes: i === 1 ? 2 ** 53 - 1 : null,
    attrs: i === 7 ? deep : JSON.stringify({ text, n: i, nested: { a: [1, { b: text }] }, 'k","received_at":': true }),
  }))
  await clickhouse.insertRaw('INSERT INTO events (org_id, stream, ts, received_at, seq, size, host, message, level, status, rt, bytes, attrs) FORMAT JSONEachRow', Buffer.from(rows.join('\n')))
  let text = ''
  for await (const chunk of exportEvents(clickhouse, { orgId: 'o', stream: 's', from: base, to: base + 1000, hiddenBefore: 0 })) text += Buffer.from(chunk).toString('utf8')
  const exported = text.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l))
  const page = await queryEvents(clickhouse, { orgId: 'o', stream: 's', from: base, to: base + 1000, limit: 100 })
  t.equal(exported.length, tricky.length)
  t.strictSame(exported, page.events.reverse(), 'the same members and values, in ascending order')
  t.same(exported.map((e) => Object.keys(e)), page.events.map((e) => Object.keys(e)), 'in the same order')
  t.equal(exported[7].attrs, deep, 'attrs nesting past the limit come as their text')
})

t.test('a slow reader: each wait for drain leaves no listener behind on the response', async (t) => {
  // A real server and client: the server writes 64 KiB chunks to a client that reads them
  // slowly, waiting for 'drain' each time the socket is full (as the export route does).
  const counts: number[] = []
  let drains = 0
  const server = createServer((_req, res) => {
    void (async () => {
      const baseline = res.listenerCount('close') + res.listenerCount('error')
      const chunk = Buffer.alloc(64 * 1024, 120)
      for (let i = 0; i < 400; i++) {
        if (!res.write(chunk)) {
          drains++
          await drained(res)
          counts.push(res.listenerCount('close') + res.listenerCount('error') - baseline)
        }
      }
      res.end()
    })()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => { server.close() })
  const { port } = server.address() as AddressInfo
  let received = 0
  await new Promise<void>((resolve, reject) => {
    httpGet({ port, host: '127.0.0.1', path: '/' }, (res) => {
      res.on('data', (d: Buffer) => {
        received += d.length
        res.pause()
        setTimeout(() => res.resume(), 1)
      })
      res.on('end', resolve)
      res.on('error', reject)
    }).on('error', reject)
  })
  t.equal(received, 400 * 64 * 1024)
  t.ok(drains > 10, `the writer waited for drain ${drains} times`)
  t.same([...new Set(counts)], [0], 'no listener left by any wait')
})
