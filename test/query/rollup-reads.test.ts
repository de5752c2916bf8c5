// Reads that a rollup answers sooner, held to what raw rows give: stats?by=level over a day or
// more without q (the hourly levels rollup, stats-plan.ts groupsFromRollup: whole-hour steps, the
// same groups and per-point counts; shorter ranges and any q keep reading raw rows at their own
// steps), and /fields' total without q over an hour or more (the minute rollup plus raw rows for
// the partial minutes at either end).
import t from 'tap'
import { startServer } from '../helpers/server.ts'
import { createIngestTarget, postIngest } from '../helpers/ingest.ts'

const hour = 3_600_000
const levels = ['debug', 'info', 'info', 'info', 'warn', 'error', null]

t.test('by=level from the hourly rollup and /fields\' total from the minute rollup match raw rows', async (t) => {
  const s = await startServer(t)
  const tgt = await createIngestTarget(s, 'app')
  const now = Date.now()
  const start = now - 30 * hour
  // 30 h of events, one every 3 minutes and 7 s, levels in a cycle (some without one).
  const lines = Array.from({ length: 560 }, (_, i) => JSON.stringify({ ts: start + i * 187_000, message: `m${i}`, level: levels[i % levels.length] ?? undefined }))
  t.equal((await postIngest(tgt, lines.join('\n'))).body.ingested, 560)

  const range = `from=${start}&to=${now}`
  const rollup = await s.api('GET', `/api/streams/app/stats?${range}&by=level`)
  t.equal(rollup.status, 200)
  t.equal(rollup.body.step_ms, hour, 'whole hours')
  t.equal(rollup.body.from % hour, 0)
  // The same range, step and grouping through raw rows: a q that every event passes.
  const raw = await s.api('GET', `/api/streams/app/stats?from=${rollup.body.from}&to=${rollup.body.to}&step=1h&by=level&q=${encodeURIComponent('ts:>=0')}`)
  t.equal(raw.status, 200)
  t.same(rollup.body.groups, raw.body.groups, 'the same top levels and counts')
  t.same(rollup.body.series.map((p: { t: number, groups: object }) => [p.t, p.groups]), raw.body.series.map((p: { t: number, groups: object }) => [p.t, p.groups]), 'the same counts per hour')
  t.equal(rollup.body.groups.reduce((n: number, g: { count: number }) => n + g.count, 0), 480, 'events without a level in no group')

  const short = await s.api('GET', `/api/streams/app/stats?from=${now - 6 * hour}&to=${now}&by=level`)
  t.ok(short.body.step_ms < hour, `under a day: raw rows at a finer step (${short.body.step_ms} ms)`)
  const filtered = await s.api('GET', `/api/streams/app/stats?${range}&by=level&q=${encodeURIComponent('message:m1*')}`)
  t.ok(filtered.body.step_ms < hour, 'with q: raw rows')
  t.same(filtered.body.groups.map((g: { value: string }) => g.value).sort(), ['debug', 'error', 'info', 'warn'])

  // /fields: the total over unaligned ends (partial minutes from raw rows), and the counts scaled by it.
  for (const [from, to] of [[start, now], [start + 95_500, now - 61_250], [start + 187_000 * 100 + 1, start + 187_000 * 100 + 3 * hour]]) {
    const fast = await s.api('GET', `/api/streams/app/fields?from=${from}&to=${to}`)
    const exact = await s.api('GET', `/api/streams/app/fields?from=${from}&to=${to}&q=${encodeURIComponent('ts:>=0')}`)
    t.equal(fast.status, 200)
    t.equal(fast.body.total, exact.body.total, `the same total over [${from - start}, ${to - start}) (${exact.body.total})`)
    t.same(fast.body.fields, exact.body.fields, 'the same fields, counts and top values')
  }
})

t.test('/fields?sample= counts over slices holding about that many events', async (t) => {
  const s = await startServer(t)
  const tgt = await createIngestTarget(s, 'many')
  const now = Date.now()
  const lines = Array.from({ length: 3000 }, (_, i) => JSON.stringify({ ts: now - 2 * hour + i * 2000, service: i % 3 === 0 ? 'a' : 'b', message: 'x', request_id: `r${i}` }))
  t.equal((await postIngest(tgt, lines.join('\n'))).body.ingested, 3000)
  const range = `from=${now - 2 * hour - 1000}&to=${now}`
  const whole = await s.api('GET', `/api/streams/many/fields?${range}`)
  t.same([whole.body.total, whole.body.sampled], [3000, false], 'under the default sample: exact')
  const sampled = await s.api('GET', `/api/streams/many/fields?${range}&sample=1000`)
  t.same([sampled.body.total, sampled.body.sampled], [3000, true], 'past sample: sampled, the total exact')
  const service = sampled.body.fields.find((f: { name: string }) => f.name === 'service')
  t.ok(Math.abs(service.count - 3000) <= 100, `counts scaled to the range (${service.count})`)
  t.ok(Math.abs(service.top[0].count - 2000) <= 200 && service.top[0].value === 'b', `top values too (${JSON.stringify(service.top)})`)
  const ids = sampled.body.fields.find((f: { name: string }) => f.name === 'request_id')
  t.ok(Math.abs(ids.count - 3000) <= 100, `a field of unique values is counted (${ids.count})`)
  t.same(ids.top, [], 'but lists no top values: each was seen once in the sample, its count would be the scale')
  t.equal(whole.body.fields.find((f: { name: string }) => f.name === 'request_id').top.length, 5, 'exact, it lists them, once each')
  t.equal((await s.api('GET', `/api/streams/many/fields?${range}&sample=999`)).status, 400, 'at least 1000')
})

t.test('/fields sampled lists the most frequent values of a field of mostly unique ones', async (t) => {
  // 4% of events are user h0, 2% h1, 1% h2, every other one a user of its own (explore15 F1:
  // ClickHouse's topK over such a sample missed the heaviest values and listed ids seen twice).
  const s = await startServer(t)
  const tgt = await createIngestTarget(s, 'users')
  const now = Date.now()
  const userOf = (i: number): string => i % 100 < 4 ? 'h0' : i % 100 < 6 ? 'h1' : i % 100 === 6 ? 'h2' : `u${i}`
  const bytesOf = (i: number): number => ({ h0: 512, h1: 256, h2: 128 } as Record<string, number>)[userOf(i)] ?? 10_000 + i
  const lines = Array.from({ length: 20_000 }, (_, i) => JSON.stringify({ ts: now - hour + i * 150, message: `request for ${userOf(i)}`, user: { id: userOf(i) }, bytes: bytesOf(i) }))
  t.equal((await postIngest(tgt, lines.join('\n'))).body.ingested, 20_000)
  const answer = await s.api('GET', `/api/streams/users/fields?from=${now - hour - 1000}&to=${now}&sample=2000`)
  t.same([answer.status, answer.body.sampled], [200, true])
  for (const name of ['user.id', 'message', 'bytes']) {
    const field = answer.body.fields.find((f: { name: string }) => f.name === name)
    const heavy = name === 'bytes' ? [512, 256, 128] : ['h0', 'h1', 'h2'].map((u) => name === 'message' ? `request for ${u}` : u)
    t.same(field.top.map((v: { value: string }) => v.value), heavy, `${name}: the three heavy values, in order, and no value seen once`)
    for (const [k, truth] of [800, 400, 200].entries()) {
      t.ok(Math.abs(field.top[k].count - truth) <= truth / 4, `${name} ${field.top[k].value}: ${field.top[k].count} near ${truth}`)
    }
  }
})
