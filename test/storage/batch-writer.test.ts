// The batch writer against a real ClickHouse: coalescing, "resolved means queryable", a write is
// never split, the size and time triggers, flush/close, and failures (down, unknown table,
// transient errors that pass, a malformed write among good ones).
import t from 'tap'
import { eventsTableStatements } from '../../lib/storage/migrate.ts'
import type { Test } from 'tap'
import { createServer, request } from 'node:http'
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createBatchWriter, classifyInsertError, writerSettings } from '../../lib/storage/batch-writer.ts'
import { loadConfig } from '../../lib/config.ts'
import type { BatchWriterOptions, InsertStats } from '../../lib/storage/batch-writer.ts'
import { createClickHouse, ClickHouseError, clickhouseCodes } from '../../lib/storage/clickhouse.ts'
import type { ClickHouse } from '../../lib/storage/clickhouse.ts'
import { eventColumns } from '../../lib/ingest/parse-task.ts'
import { EventRowWriter } from '../../lib/ingest/row-serializer.ts'
import { EventRowJsonWriter } from '../../lib/ingest/row-json-serializer.ts'
import { eventRow, tsvRow } from '../helpers/events.ts'
import { createLogger } from '../../lib/logger.ts'
import { SluiceError } from '../../lib/errors.ts'
import { createTestDatabase, onChdb } from '../helpers/clickhouse.ts'
import { startTcpProxy } from '../helpers/tcp-proxy.ts'
import { ManualClock } from '../helpers/manual-clock.ts'
import { waitFor } from '../helpers/wait-for.ts'

const db = await createTestDatabase(t, 'sluice_test_writer')
for (const statement of eventsTableStatements) await db.clickhouse.command(statement)

const day = 1_700_000_000_000 // all rows in one daily partition, so one insert = one part

/** `n` event rows of stream `stream` in the engine's format (RowBinary; chdb: JSONCompactEachRow), as the parse workers write them. */
function eventRows (stream: string, n: number): Buffer {
  const writer = db.clickhouse.insertFormat === 'RowBinary' ? new EventRowWriter('org1', stream, day, 64) : new EventRowJsonWriter('org1', stream, day, 64)
  for (let i = 0; i < n; i++) {
    writer.write(eventRow({
      ts: day + i, host: 'web-1', path: `/api/items/${i}`, method: 'GET', status: 200, rt: 0.012, bytes: 512,
      src: '10.0.0.1', user_agent: 'curl/8.0', message: `message ${i}`, filename: null, attrs: '{}',
    }), i, 100)
  }
  return Buffer.from(writer.finish())
}

/** `n` TabSeparated event rows of stream `stream`, in eventColumns order. */
function tsvRows (stream: string, n: number): Buffer {
  let text = ''
  for (let i = 0; i < n; i++) {
    text += tsvRow({
      org_id: 'org1', stream, ts: day + i, received_at: day, host: 'web-1', path: `/api/items/${i}`, method: 'GET', status: 200,
      rt: 0.012, bytes: 512, src: '10.0.0.1', user_agent: 'curl/8.0', message: `message ${i}`, filename: null, attrs: '{}', seq: i, size: 100,
    }) + '\n'
  }
  return Buffer.from(text)
}

async function countRows (stream: string): Promise<number> {
  const rows = await db.clickhouse.query<{ n: number }>(`SELECT count() AS n FROM events WHERE stream = '${stream}'`)
  return rows[0].n
}

interface Harness {
  writer: ReturnType<typeof createBatchWriter>
  inserts: InsertStats[]
  logLines: Array<Record<string, unknown>>
}

/** The identity of rows made by eventRows(stream, n): org1, the stream, seq 0..n-1. */
/** The writer's settings as the service configures them (config/default.json). */
const settings = writerSettings(loadConfig({ env: {} }))

// The embedded engine runs in this process: there is no connection to refuse, cut or stall.
const httpOnly = onChdb && 'HTTP fault injection (proxy, refused port): the embedded engine (chdb) has no connection to cut'

function identityOf (stream: string) {
  return { orgId: 'org1', stream, seqBase: 0 }
}

function startWriter (tt: Test, options: Partial<BatchWriterOptions> = {}): Harness {
  const inserts: InsertStats[] = []
  const logLines: Array<Record<string, unknown>> = []
  const writer = createBatchWriter({
    ...settings,
    clickhouse: db.clickhouse,
    table: 'events',
    columns: eventColumns,
    format: db.clickhouse.insertFormat,
    log: createLogger({ level: 'debug', write: (line) => { logLines.push(JSON.parse(line)) } }),
    onInsert: (stats) => { inserts.push(stats) },
    ...options,
  })
  tt.teardown(() => writer.close())
  return { writer, inserts, logLines }
}

/**
 * Makes the writer busy: one insert that starts idleInsertIntervalMs, so that the next writes wait
 * for company instead of going at once (a write to an idle writer goes alone, at once).
 */
async function startBusyWriter (tt: Test, options: Partial<BatchWriterOptions> = {}): Promise<Harness> {
  const harness = startWriter(tt, options)
  const primer = options.format === 'TabSeparated' ? tsvRows('busy-primer', 1) : eventRows('busy-primer', 1)
  await harness.writer.write([primer], 1)
  harness.inserts.length = 0
  return harness
}

function listen (tt: Test, server: Server): Promise<number> {
  tt.teardown(() => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()) }))
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)))
}

/** A ClickHouse client for `url`, closed when `tt` ends. */
function clientFor (tt: Test, url: string, requestTimeoutMs = 5_000): ClickHouse {
  const clickhouse = createClickHouse({ url, database: db.database, user: 'default', password: '', requestTimeoutMs })
  tt.teardown(() => clickhouse.close())
  return clickhouse
}

/**
 * A proxy in front of the real ClickHouse whose first `failures` requests get `fail(res)`
 * instead of being forwarded. Returns its URL and the number of requests it forwarded.
 */
async function startFlakyProxy (tt: Test, failures: number, fail: (res: import('node:http').ServerResponse) => void) {
  const target = new URL(db.url)
  const state = { seen: 0, forwarded: 0 }
  const server = createServer((req, res) => {
    if (state.seen++ < failures) {
      req.resume()
      req.once('end', () => fail(res))
      return
    }
    state.forwarded++
    const upstream = request({ host: target.hostname, port: target.port, path: req.url, method: req.method, headers: req.headers }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers)
      up.pipe(res)
    })
    req.pipe(upstream)
  })
  const port = await listen(tt, server)
  return { url: `http://127.0.0.1:${port}`, state }
}

t.test('concurrent writes coalesce: the first goes alone at once, the others in one insert; each resolves with its rows queryable', async (tt) => {
  const { writer, inserts } = startWriter(tt, { flushIntervalMs: 50, minInsertIntervalMs: 0 })
  const writes = Array.from({ length: 50 }, (_, i) => {
    const stream = `coalesce-${i}`
    return writer.write([eventRows(stream, 10)], 10).then(() => countRows(stream))
  })
  tt.same(await Promise.all(writes), Array(50).fill(10), 'every write sees its 10 rows once resolved')
  tt.equal(inserts.length, 2, 'two inserts for 50 writes')
  tt.match(inserts[0], { rows: 10, writes: 1, ok: true, attempt: 1 }, 'the first found the writer idle')
  tt.match(inserts[1], { rows: 490, writes: 49, ok: true, attempt: 1 }, 'the others waited for it and went together')
  tt.equal(writer.pendingRows, 0)
  tt.equal(writer.pendingBytes, 0)
})

t.test('resolved means queryable, across many batches', async (tt) => {
  const { writer, inserts } = startWriter(tt, { maxBatchRows: 40, flushIntervalMs: 5, minInsertIntervalMs: 0 })
  const counts = await Promise.all(Array.from({ length: 30 }, async (_, i) => {
    const stream = `queryable-${i}`
    const rows = 1 + (i % 7) * 5
    await writer.write([eventRows(stream, rows)], rows)
    return (await countRows(stream)) === rows
  }))
  tt.ok(counts.every(Boolean), 'each write found all its rows when its promise resolved')
  tt.ok(inserts.length > 1 && inserts.length < 30, `coalesced into ${inserts.length} inserts`)
  tt.ok(inserts.every((s) => s.rows <= 40), 'no batch over maxBatchRows')
})

t.test('a write is never split: over maxBatchRows it gets an insert to itself, one part', async (tt) => {
  const { writer, inserts } = startWriter(tt, { maxBatchRows: 100, flushIntervalMs: 20, minInsertIntervalMs: 0 })
  const a = writer.write([eventRows('split-a', 60)], 60)
  const big = eventRows('split-big', 250)
  // Handed over in several chunks, as a request's worker results are.
  const b = writer.write([big.subarray(0, 1000), big.subarray(1000, 5000), big.subarray(5000)], 250)
  const c = writer.write([eventRows('split-c', 60)], 60)
  await Promise.all([a, b, c])
  tt.same(inserts.map((s) => s.rows), [60, 250, 60], 'FIFO; the big write alone; the next one did not fit with it')
  tt.equal(await countRows('split-big'), 250)
})

t.test('a batch over ClickHouse max_insert_block_size is still one block, one part', async (tt) => {
  await db.clickhouse.command('CREATE TABLE wide (n UInt32) ENGINE = MergeTree ORDER BY n')
  const rows = 1_100_000 // over the server's max_insert_block_size of 1_048_576
  const one = Buffer.from('1\n'.repeat(rows))
  const { writer, inserts } = startWriter(tt, { table: 'wide', columns: ['n'], format: 'TabSeparated', maxBatchRows: 10 })
  await writer.write([one], rows)
  tt.equal(inserts.length, 1)
  const [{ n }] = await db.clickhouse.query<{ n: number }>('SELECT count() AS n FROM wide')
  tt.equal(n, rows)
  // Level-0 parts are the ones inserts made; merges add higher levels and keep these listed.
  const [{ parts }] = await db.clickhouse.query<{ parts: number }>(
    `SELECT count() AS parts FROM system.parts WHERE database = '${db.database}' AND table = 'wide' AND level = 0`)
  tt.equal(parts, 1, 'one part: the insert was one block')

  // Without the setting ClickHouse would store the first 1_048_576 rows before it parses the bad
  // last one; as one block, nothing is stored.
  const bad = Buffer.concat([one, Buffer.from('oops\n')])
  await tt.rejects(writer.write([bad], rows + 1), { code: 'internal_error' })
  const [after] = await db.clickhouse.query<{ n: number }>('SELECT count() AS n FROM wide')
  tt.equal(after.n, rows, 'a failed big insert leaves nothing behind')
})

t.test('size trigger: a full batch goes without waiting for the interval', async (tt) => {
  const { writer, inserts } = startWriter(tt, { maxBatchRows: 100, flushIntervalMs: 600_000, minInsertIntervalMs: 600_000, idleInsertIntervalMs: 600_000 })
  await writer.write([eventRows('size-1', 100)], 100)
  await writer.write([eventRows('size-2', 150)], 150) // full twice in a row: no minInsertInterval
  tt.equal(inserts.length, 2)
  tt.equal(await countRows('size-2'), 150)
})

t.test('time trigger: a row that finds an insert in flight waits flushIntervalMs for company, then goes', async (tt) => {
  const clock = new ManualClock()
  const { writer, inserts } = startWriter(tt, { flushIntervalMs: 150, minInsertIntervalMs: 0, now: clock.now, setTimer: clock.setTimer })
  const first = writer.write([eventRows('time-1', 1)], 1) // idle writer: at once
  let laterDone = false
  const later = Promise.all([writer.write([eventRows('time-2', 1)], 1), writer.write([eventRows('time-3', 1)], 1)])
    .then(() => { laterDone = true })
  await first
  // Once the first insert has returned, the others are due flushIntervalMs after they arrived (at 0).
  await waitFor(() => clock.dueTimes.includes(150), { what: 'a flush timer at 150 ms' })
  clock.advanceTo(149)
  tt.equal(inserts.length, 1, 'nothing more was sent before the interval')
  tt.notOk(laterDone)
  clock.advanceTo(150)
  await later
  tt.same(inserts.map((s) => s.writes), [1, 2], 'the third write kept the second company')
})

t.test('time trigger: the wait counts from the request\'s arrival, the earliest of the waiting writes', async (tt) => {
  const { writer, inserts } = startWriter(tt, { flushIntervalMs: 600_000, minInsertIntervalMs: 0 })
  let firstDone = false
  const inFlight = writer.write([eventRows('arrival-0', 1)], 1) // idle writer: at once
  const first = writer.write([eventRows('arrival-1', 2)], 2, { arrivedAt: performance.now() }).then(() => { firstDone = true })
  await inFlight
  await new Promise((resolve) => setImmediate(resolve))
  tt.equal(inserts.length, 1, 'a row that just arrived while an insert was in flight waits for company')
  tt.notOk(firstDone)
  // Written later, but its request arrived longer ago than the interval: the batch is due.
  const second = writer.write([eventRows('arrival-2', 3)], 3, { arrivedAt: performance.now() - 600_000 })
  await Promise.all([first, second])
  tt.equal(inserts.length, 2, 'both went in one insert')
  tt.equal(inserts[1].rows, 5)
  tt.equal(await countRows('arrival-1'), 2)
  tt.equal(await countRows('arrival-2'), 3)
  // An arrival "after" the call counts from the call: the row is not held past the interval.
  const { writer: soon } = startWriter(tt, { flushIntervalMs: 20, minInsertIntervalMs: 0 })
  await soon.write([eventRows('arrival-3', 1)], 1, { arrivedAt: performance.now() + 3_600_000 })
  tt.equal(await countRows('arrival-3'), 1)
})

t.test('idleInsertIntervalMs spaces small inserts to an idle writer', async (tt) => {
  const clock = new ManualClock()
  const { writer, inserts } = startWriter(tt, { flushIntervalMs: 0, minInsertIntervalMs: 300, idleInsertIntervalMs: 300, now: clock.now, setTimer: clock.setTimer })
  await writer.write([eventRows('spaced-1', 1)], 1) // started at 0
  let secondDone = false
  const second = writer.write([eventRows('spaced-2', 1)], 1).then(() => { secondDone = true })
  await waitFor(() => clock.dueTimes.includes(300), { what: 'the second insert due idleInsertIntervalMs after the first started' })
  clock.advanceTo(299)
  tt.equal(inserts.length, 1)
  tt.notOk(secondDone)
  clock.advanceTo(300)
  await second
  tt.equal(inserts.length, 2)
  // idleMs (a read's idle threads, lib/query/read-limits.ts): the time since the last insert ended.
  tt.equal(writer.idleMs(), 0, 'the last insert ended at 300')
  clock.advanceTo(1300)
  tt.equal(writer.idleMs(), 1000)
})

t.test('idle writer: a lone write goes at once; under load writes wait and batch (injected clock)', async (tt) => {
  // The clock stands still unless the test moves it, and the intervals are long (flushIntervalMs
  // 10 minutes, minInsertIntervalMs 1 minute): a write that resolves went out without waiting
  // for either.
  const clock = new ManualClock(1_000)
  const { writer, inserts } = startWriter(tt, {
    flushIntervalMs: 600_000, minInsertIntervalMs: 60_000, idleInsertIntervalMs: 60_000, retryTimeoutMs: 3_600_000, now: clock.now, setTimer: clock.setTimer, // no deadline passes as the clock jumps
  })

  await writer.write([eventRows('idle-1', 10)], 10)
  tt.equal(await countRows('idle-1'), 10, 'an idle writer sent a lone write at once')
  tt.same(inserts.map((s) => s.writes), [1])

  // An insert started at clock 1_000; within idleInsertIntervalMs a write waits.
  clock.jumpTo(31_000)
  let withinDone = false
  const within = writer.write([eventRows('idle-2', 2)], 2).then(() => { withinDone = true })
  tt.equal(clock.nextDueAt, 61_000, 'a write within idleInsertIntervalMs of the last insert start waits for it')
  tt.equal(inserts.length, 1)
  tt.notOk(withinDone)
  // Once idleInsertIntervalMs have passed it goes, long before flushIntervalMs, with what came
  // meanwhile (here a write arriving before the late timer ran).
  clock.jumpTo(61_500)
  const joining = writer.write([eventRows('idle-3', 3)], 3)
  await Promise.all([within, joining])
  tt.same(inserts.map((s) => s.rows), [10, 5], 'the two waiting writes went in one insert')

  // Idle again, idleInsertIntervalMs after the last start: at once. Writes arriving while it is
  // in flight wait for it and then for company (flushIntervalMs), together.
  clock.jumpTo(200_000)
  const alone = writer.write([eventRows('idle-4', 1)], 1)
  const second = writer.write([eventRows('idle-5', 4)], 4)
  const third = writer.write([eventRows('idle-6', 6)], 6)
  let laterDone = false
  const later = Promise.all([second, third]).then(() => { laterDone = true })
  await alone
  tt.equal(await countRows('idle-4'), 1, 'the lone write went at once')
  tt.equal(await waitFor(() => clock.nextDueAt, { until: (at) => at !== Infinity, what: 'the flush timer' }), 800_000,
    'the writes that arrived while it was in flight wait flushIntervalMs for company')
  tt.notOk(laterDone)
  tt.equal(inserts.length, 3)
  await writer.flush()
  await later
  tt.same(inserts.map((s) => [s.writes, s.rows]), [[1, 10], [2, 5], [1, 1], [2, 10]], 'and went in one insert')
})

t.test('an idle writer waits idleInsertIntervalMs, not minInsertIntervalMs; writes that queue up still batch (injected clock)', async (tt) => {
  // The clock stands still: minInsertIntervalMs (1 minute) never passes, idleInsertIntervalMs 0 always has.
  const clock = new ManualClock(1_000)
  const { writer, inserts } = startWriter(tt, {
    flushIntervalMs: 600_000, minInsertIntervalMs: 60_000, idleInsertIntervalMs: 0, retryTimeoutMs: 3_600_000, now: clock.now, setTimer: clock.setTimer,
  })
  // The writer's own bookkeeping after an insert (its rows leave pendingRows after the answer).
  const settled = (w = writer) => waitFor(() => w.pendingRows === 0, { what: 'the writer idle again' })
  await writer.write([eventRows('idle-fast-1', 1)], 1)
  await settled()
  await writer.write([eventRows('idle-fast-2', 2)], 2) // idle again right after the first insert: at once
  await settled()
  tt.same(inserts.map((s) => s.rows), [1, 2], 'each write to an idle writer went at once')
  // Writes arriving while an insert is in flight wait for company (flushIntervalMs), together.
  const first = writer.write([eventRows('idle-fast-3', 3)], 3)
  const queued = [writer.write([eventRows('idle-fast-4', 4)], 4), writer.write([eventRows('idle-fast-5', 5)], 5)]
  await first
  tt.ok(await waitFor(() => clock.dueTimes.includes(601_000), { what: 'the flush timer, flushIntervalMs after the first queued write' }),
    'the queued writes wait flushIntervalMs for company')
  tt.equal(inserts.length, 3, 'the queued writes wait')
  await writer.flush()
  await Promise.all(queued)
  tt.same(inserts.map((s) => s.rows), [1, 2, 3, 9], 'and went in one insert')
  // idleInsertIntervalMs is used up to minInsertIntervalMs, never beyond.
  const { writer: capped, inserts: cappedInserts } = startWriter(tt, { flushIntervalMs: 600_000, minInsertIntervalMs: 0, idleInsertIntervalMs: 600_000 })
  await capped.write([eventRows('idle-cap-1', 1)], 1)
  await settled(capped)
  await capped.write([eventRows('idle-cap-2', 1)], 1)
  tt.equal(cappedInserts.length, 2, 'capped at minInsertIntervalMs (0)')
})

t.test('flush() sends what waits now and resolves once it is committed', async (tt) => {
  const { writer, inserts } = await startBusyWriter(tt, { flushIntervalMs: 600_000, minInsertIntervalMs: 600_000, idleInsertIntervalMs: 600_000 })
  let resolved = false
  const rows = eventRows('flush', 7)
  const write = writer.write([rows], 7).then(() => { resolved = true })
  tt.equal(writer.pendingRows, 7)
  tt.equal(writer.pendingBytes, rows.byteLength)
  tt.equal(inserts.length, 0, 'nothing sent before the interval')
  await writer.flush()
  tt.ok(resolved, 'the write resolved before flush() did')
  tt.equal(await countRows('flush'), 7)
  tt.equal(writer.pendingRows, 0)
  tt.equal(writer.pendingBytes, 0)
  await write
  await writer.flush() // nothing pending: resolves at once
})

t.test('close() stores what was accepted, then refuses writes with shutting_down', async (tt) => {
  const { writer } = await startBusyWriter(tt, { flushIntervalMs: 600_000, minInsertIntervalMs: 600_000, idleInsertIntervalMs: 600_000 })
  const accepted = writer.write([eventRows('close', 3)], 3)
  const closing = writer.close()
  await tt.rejects(writer.write([eventRows('close-late', 1)], 1), { code: 'shutting_down', retryAfter: 1 })
  await closing
  await accepted
  tt.equal(await countRows('close'), 3)
  tt.equal(await countRows('close-late'), 0)
  tt.equal(writer.close(), closing, 'close() is idempotent')
})

t.test('ClickHouse unreachable: retried with backoff, then storage_unavailable with Retry-After', { skip: httpOnly }, async (tt) => {
  const probe = createServer()
  const port = await new Promise<number>((resolve) => probe.listen(0, '127.0.0.1', () => resolve((probe.address() as AddressInfo).port)))
  await new Promise<void>((resolve) => probe.close(() => resolve())) // nothing listens there now
  const clock = new ManualClock()
  const retryTimeoutMs = 600
  const { writer, inserts, logLines } = startWriter(tt, {
    clickhouse: clientFor(tt, `http://127.0.0.1:${port}`), retryTimeoutMs, flushIntervalMs: 0, now: clock.now, setTimer: clock.setTimer,
  })
  let settled = false
  const result = writer.write([eventRows('down', 5)], 5).then(() => null, (e: unknown) => e).finally(() => { settled = true })
  // Each attempt fails on the refused connection (real I/O, the clock stands still meanwhile);
  // the backoff before the next one is a timer, run here. The attempt's own deadline is a timer
  // too, but past the retry budget (attemptTimeoutMs later), so it never runs.
  while (!settled) {
    const backoff = await waitFor(() => settled ? Infinity : clock.nextDueAt, { until: (at) => at < retryTimeoutMs || settled, what: 'a backoff timer or the answer' })
    if (!settled) clock.advanceTo(backoff)
  }
  const err = await result
  tt.ok(err instanceof SluiceError)
  tt.match(err, { code: 'storage_unavailable', status: 503 })
  const retryAfter = (err as SluiceError).retryAfter!
  tt.ok(Number.isInteger(retryAfter) && retryAfter >= 1, `Retry-After ${retryAfter}`)
  tt.ok(inserts.length >= 2, `${inserts.length} attempts`)
  tt.ok(inserts.every((s) => !s.ok))
  tt.ok(clock.now() < retryTimeoutMs, `gave up at ${clock.now()} ms, within the retry budget on its own clock`)
  tt.ok(logLines.some((l) => l.level === 'error' && l.msg === 'ClickHouse insert failed past its retries'))
  tt.equal(writer.pendingRows, 0)
})

t.test('unknown table: not retried, storage_unavailable at once', async (tt) => {
  // The clock never moves: the answer comes without any backoff or timer having run.
  const clock = new ManualClock()
  const { writer, inserts, logLines } = startWriter(tt, { table: 'no_such_table', retryTimeoutMs: 30_000, flushIntervalMs: 0, now: clock.now, setTimer: clock.setTimer })
  await tt.rejects(writer.write([eventRows('nowhere', 2)], 2), { code: 'storage_unavailable' })
  tt.equal(clock.now(), 0)
  tt.equal(inserts.length, 1, 'one attempt')
  tt.ok(logLines.some((l) => l.level === 'error' && l.msg === 'ClickHouse refused the insert; not retried'))
})

t.test('TOO_MANY_PARTS that passes: retried, stored exactly once', { skip: httpOnly }, async (tt) => {
  const proxy = await startFlakyProxy(tt, 2, (res) => {
    res.writeHead(500, { 'content-type': 'text/plain' })
    res.end('Code: 252, e.displayText() = DB::Exception: Too many parts (300). Merges are processing significantly slower than inserts., e.what() = DB::Exception\n')
  })
  const { writer, inserts } = startWriter(tt, { clickhouse: clientFor(tt, proxy.url), retryTimeoutMs: 10_000, flushIntervalMs: 0 })
  await writer.write([eventRows('recover-parts', 12)], 12)
  tt.same(inserts.map((s) => [s.attempt, s.ok]), [[1, false], [2, false], [3, true]])
  tt.equal(proxy.state.forwarded, 1)
  tt.equal(await countRows('recover-parts'), 12, 'exactly once')
})

t.test('connection reset after the body was sent: checked, found absent, retried, stored exactly once', { skip: httpOnly }, async (tt) => {
  const proxy = await startFlakyProxy(tt, 1, (res) => { res.socket?.destroy() })
  const { writer, inserts } = startWriter(tt, { clickhouse: clientFor(tt, proxy.url), retryTimeoutMs: 10_000, flushIntervalMs: 0 })
  await writer.write([eventRows('recover-reset', 4)], 4, { identity: identityOf('recover-reset') })
  tt.same(inserts.map((s) => [s.ok, s.ambiguous]), [[false, true], [true, false]])
  tt.equal(await countRows('recover-reset'), 4, 'exactly once')
})

t.test('connection reset without an identity to check: storage_outcome_unknown, not a blind retry', { skip: httpOnly }, async (tt) => {
  const proxy = await startFlakyProxy(tt, 1, (res) => { res.socket?.destroy() })
  const { writer, inserts } = startWriter(tt, { clickhouse: clientFor(tt, proxy.url), retryTimeoutMs: 10_000, flushIntervalMs: 0 })
  const err = await writer.write([eventRows('reset-anon', 4)], 4).then(() => null, (e: unknown) => e)
  tt.match(err, { code: 'storage_outcome_unknown', status: 503 })
  tt.ok((err as SluiceError).retryAfter! >= 1)
  tt.equal(inserts.length, 1, 'not retried')
  tt.equal(proxy.state.forwarded, 0)
})

t.test('hung ClickHouse: the attempt is aborted; the write settles storage_outcome_unknown while ClickHouse still hangs, and a queued write storage_unavailable', { skip: httpOnly }, async (tt) => {
  const proxy = await startTcpProxy(tt, db.url)
  const clickhouse = clientFor(tt, proxy.url, 60_000) // the client's idle timeout must not be what ends the wait
  const { writer, inserts } = startWriter(tt, { clickhouse, retryTimeoutMs: 300, attemptTimeoutMs: 1_000, flushIntervalMs: 0, minInsertIntervalMs: 0 })
  await writer.write([eventRows('hung-warm', 1)], 1, { identity: identityOf('hung-warm') }) // a pooled socket, as in steady state
  await waitFor(() => writer.pendingRows === 0, { what: 'the writer idle' })
  proxy.stall()
  const settled: string[] = []
  const first = writer.write([eventRows('hung-1', 3)], 3, { identity: identityOf('hung-1') })
    .then(() => 'ok', (e: SluiceError) => e.code).then((code) => { settled.push(`first:${code}`); return code })
  // The first write went out at once (an idle writer, minInsertIntervalMs 0): the second queues behind it.
  const second = writer.write([eventRows('hung-2', 2)], 2, { identity: identityOf('hung-2') })
    .then(() => 'ok', (e: SluiceError) => e.code).then((code) => { settled.push(`second:${code}`); return code })
  tt.equal(await first, 'storage_outcome_unknown', 'its insert may be committed when ClickHouse resumes')
  tt.equal(await second, 'storage_unavailable', 'never sent: nothing of it can be stored')
  tt.same(settled.sort(), ['first:storage_outcome_unknown', 'second:storage_unavailable'], 'both answered while ClickHouse was still stalled')
  tt.same(inserts.slice(1).map((s) => [s.rows, s.ok, s.ambiguous]), [[3, false, true]], 'one attempt, aborted')
  tt.equal(writer.pendingRows, 0)
  proxy.resume()
  // What the stalled server does with the held insert when it runs again is exactly the doubt
  // the answer admitted: stored or not. The never-sent write must not appear. A write after the
  // resume goes through once the stall gate's probe has answered.
  await writer.write([eventRows('hung-3', 1)], 1, { identity: identityOf('hung-3') })
  tt.equal(await countRows('hung-2'), 0)
  tt.ok([0, 3].includes(await countRows('hung-1')), 'the unknown write is stored whole or not at all')
})

t.test('a stall: no new first attempt goes into the hung ClickHouse; writes queued meanwhile get storage_unavailable; a probe reopens the gate (injected clock)', { skip: httpOnly }, async (tt) => {
  const proxy = await startTcpProxy(tt, db.url)
  const clickhouse = clientFor(tt, proxy.url, 600_000) // only the writer's own deadlines end a wait
  const clock = new ManualClock()
  const { writer, inserts, logLines } = startWriter(tt, {
    clickhouse, retryTimeoutMs: 5_000, attemptTimeoutMs: 3_000, flushIntervalMs: 0, minInsertIntervalMs: 0, now: clock.now, setTimer: clock.setTimer,
  })
  await writer.write([eventRows('gate-warm', 1)], 1, { identity: identityOf('gate-warm') })
  await waitFor(() => writer.pendingRows === 0, { what: 'the writer idle' })
  proxy.stall()
  const answers: Record<string, string> = {}
  const answeredAt: Record<string, number> = {}
  const track = (name: string, p: Promise<void>) => p.then(() => 'ok', (e: SluiceError) => e.code).then((code) => { answers[name] = code; answeredAt[name] = clock.now() })
  // In flight when the stall begins: its attempt is aborted at attemptTimeoutMs (3 s).
  const first = track('first', writer.write([eventRows('gate-1', 3)], 3, { identity: identityOf('gate-1') }))
  clock.advanceTo(3_000)
  await waitFor(() => inserts.length === 2, { what: 'the aborted attempt reported' })
  tt.same([inserts[1].ok, inserts[1].ambiguous], [false, true], 'the attempt ended without an answer')
  tt.equal(writer.stalls, 1, 'the gate closed')
  // Written during the stall: queued, never sent, 503 storage_unavailable when its time is up.
  const later = track('later', writer.write([eventRows('gate-2', 2)], 2, { identity: identityOf('gate-2') }))
  // The clock runs on through the stall, timer by timer (the probes, the outcome check's polls).
  // Every request into the stalled proxy hangs until its timer aborts it, so running the next
  // timer is all that time passing would do; the real pause between steps lets aborts settle.
  await waitFor(() => {
    if (answers.first !== undefined && answers.later !== undefined) return true
    if (clock.nextDueAt !== Infinity) clock.advanceTo(clock.nextDueAt)
    return false
  }, { what: 'both writes answered', timeoutMs: 60_000, intervalMs: 5 })
  await Promise.all([first, later])
  tt.same(answers, { first: 'storage_outcome_unknown', later: 'storage_unavailable' })
  tt.equal(inserts.length, 2, 'no insert was sent into the hung ClickHouse after the first went unanswered')
  // Each within retryTimeoutMs + attemptTimeoutMs (8 s) of its write(): the first at 0, the later one at 3 s.
  tt.ok(answeredAt.first <= 8_000 && answeredAt.later <= 3_000 + 8_000, `both answered within their 8 s (${JSON.stringify(answeredAt)})`)
  proxy.resume()
  // The next probe (every 250 ms on the writer's clock) answers: the gate opens. The clock moves
  // one probe interval per 100 ms of real time, well inside a probe's own 1 s timeout.
  await waitFor(() => {
    if (logLines.some((l) => l.msg === 'ClickHouse answers again; inserts resume')) return true
    clock.advance(250)
    return false
  }, { what: 'the gate to open after the resume', timeoutMs: 30_000, intervalMs: 100 })
  await writer.write([eventRows('gate-3', 4)], 4, { identity: identityOf('gate-3') })
  tt.equal(await countRows('gate-3'), 4)
  tt.equal(await countRows('gate-2'), 0, 'the write queued during the stall was never sent')
  tt.equal(writer.stalls, 1)
  tt.ok(logLines.some((l) => l.msg === 'ClickHouse answers again; inserts resume'))
})

t.test('a stall shorter than the deadline: the aborted insert is checked once ClickHouse answers; stored exactly once', { skip: httpOnly }, async (tt) => {
  const proxy = await startTcpProxy(tt, db.url)
  const clickhouse = clientFor(tt, proxy.url, 60_000)
  let stallEnds: (() => void) | undefined
  const { writer, inserts, logLines } = startWriter(tt, {
    clickhouse, retryTimeoutMs: 5_000, attemptTimeoutMs: 500, flushIntervalMs: 0, minInsertIntervalMs: 0,
    // Resume right after the first attempt was aborted: the held insert reaches ClickHouse then.
    onInsert: (stats) => { inserts.push(stats); if (stats.ambiguous) stallEnds?.() },
  })
  await writer.write([eventRows('stall-warm', 1)], 1)
  stallEnds = () => { stallEnds = undefined; setImmediate(() => proxy.resume()) }
  proxy.stall()
  await writer.write([eventRows('stall-1', 6)], 6, { identity: identityOf('stall-1') })
  tt.equal(await countRows('stall-1'), 6, 'resolved, and stored exactly once')
  tt.equal(inserts[1].ambiguous, true, 'the first attempt was aborted')
  const checked = logLines.find((l) => l.msg === 'ClickHouse insert ended without an answer; checked what it stored')
  tt.ok(checked, 'the outcome was checked')
  tt.equal(checked!.unknown, 0)
  tt.equal((checked!.stored as number) + (checked!.absent as number), 1)
  tt.equal(inserts.length, checked!.absent === 1 ? 3 : 2, 'retried only when found absent')
})

t.test('a malformed write fails alone (internal_error); its batch mates are stored', async (tt) => {
  const { writer, inserts, logLines } = await startBusyWriter(tt, { format: 'TabSeparated', flushIntervalMs: 600_000, minInsertIntervalMs: 600_000, idleInsertIntervalMs: 600_000 })
  const good1 = writer.write([tsvRows('mal-good-1', 3)], 3)
  const bad = writer.write([Buffer.from('org1\tmal-bad\tnot-a-number\n')], 1)
  const good2 = writer.write([tsvRows('mal-good-2', 4)], 4)
  const flushed = writer.flush()
  await tt.rejects(bad, { code: 'internal_error' })
  await good1
  await good2
  await flushed
  tt.same(inserts.map((s) => [s.writes, s.ok]), [[3, false], [1, true], [1, false], [1, true]])
  tt.equal(await countRows('mal-good-1'), 3)
  tt.equal(await countRows('mal-good-2'), 4)
  tt.equal(await countRows('mal-bad'), 0)
  tt.ok(logLines.some((l) => l.level === 'error' && (l.err as { message?: string })?.message?.includes('Code: 27')), 'logged loudly, with the ClickHouse error')
})

t.test('RowBinary: a write cut inside a row fails alone; its batch mates are stored', async (tt) => {
  const { writer, inserts } = await startBusyWriter(tt, { flushIntervalMs: 600_000, minInsertIntervalMs: 600_000, idleInsertIntervalMs: 600_000 })
  const good1 = writer.write([eventRows('rb-good-1', 3)], 3)
  const good2 = writer.write([eventRows('rb-good-2', 4)], 4)
  const cut = eventRows('rb-cut', 2)
  // A text format's rows must end in '\n' (write() checks): the cut row gets one, and is still broken.
  const bad = writer.write([onChdb ? Buffer.concat([cut.subarray(0, cut.length - 3), Buffer.from('\n')]) : cut.subarray(0, cut.length - 3)], 2)
  const flushed = writer.flush()
  await tt.rejects(bad, { code: 'internal_error' })
  await good1
  await good2
  await flushed
  tt.same(inserts.map((s) => [s.writes, s.ok]), [[3, false], [1, true], [1, true], [1, false]])
  tt.equal(await countRows('rb-good-1'), 3)
  tt.equal(await countRows('rb-good-2'), 4)
  tt.equal(await countRows('rb-cut'), 0, 'not even its whole first row')
})

t.test('an aborted write leaves the queue before its insert starts', async (tt) => {
  const { writer, inserts } = await startBusyWriter(tt, { flushIntervalMs: 600_000, minInsertIntervalMs: 600_000, idleInsertIntervalMs: 600_000 })
  const ac = new AbortController()
  const aborted = writer.write([eventRows('aborted', 5)], 5, { signal: ac.signal })
  const kept = writer.write([eventRows('kept', 2)], 2)
  ac.abort(new Error('client went away'))
  await tt.rejects(aborted, { message: 'client went away' })
  tt.equal(writer.pendingRows, 2)
  await writer.flush()
  await kept
  tt.same(inserts.map((s) => s.rows), [2])
  tt.equal(await countRows('aborted'), 0)
})

t.test('over maxPendingBytes writes are held in order; needsDrain tells admission', async (tt) => {
  const a = eventRows('held-a', 20)
  const { writer, inserts } = startWriter(tt, { maxPendingBytes: a.byteLength + 10, flushIntervalMs: 600_000, minInsertIntervalMs: 600_000, idleInsertIntervalMs: 600_000 })
  tt.equal(writer.needsDrain, false)
  const first = writer.write([a], 20)
  tt.equal(writer.needsDrain, false, 'still room')
  const second = writer.write([eventRows('held-b', 20)], 20)
  tt.equal(writer.needsDrain, true, 'the second write is held')
  tt.equal(writer.pendingRows, 40, 'held rows count as pending')
  await Promise.all([first, second]) // holding writes makes the waiting batch due at once
  tt.same(inserts.map((s) => s.rows), [20, 20])
  tt.equal(writer.needsDrain, false)
})

t.test('write() argument checks', async (tt) => {
  const { writer, inserts } = startWriter(tt)
  await writer.write([], 0)
  await tt.rejects(writer.write([Buffer.alloc(0)], 1), TypeError, 'rows in no bytes')
  const tsv = startWriter(tt, { format: 'TabSeparated' }).writer
  await tt.rejects(tsv.write([Buffer.from('org1\tx')], 1), TypeError, 'a TabSeparated row without its newline')
  await tt.rejects(writer.write([eventRows('neg', 1)], -1), TypeError)
  tt.equal(inserts.length, 0)
  tt.throws(() => createBatchWriter({ ...settings, clickhouse: db.clickhouse, table: 'events; DROP', columns: eventColumns, log: createLogger({ level: 'silent' }) }), TypeError)
  tt.throws(() => createBatchWriter({ ...settings, clickhouse: db.clickhouse, table: 'events', columns: eventColumns, format: 'CSV' as 'RowBinary', log: createLogger({ level: 'silent' }) }), TypeError)
})

t.test('errors are classified by numeric code', async (tt) => {
  const err = (code: number) => new ClickHouseError('x', code)
  tt.equal(classifyInsertError(err(0)), 'transient', 'no answer from ClickHouse')
  tt.equal(classifyInsertError(err(clickhouseCodes.TOO_MANY_PARTS)), 'transient')
  tt.equal(classifyInsertError(err(clickhouseCodes.MEMORY_LIMIT_EXCEEDED)), 'transient')
  tt.equal(classifyInsertError(err(clickhouseCodes.TIMEOUT_EXCEEDED)), 'transient')
  tt.equal(classifyInsertError(err(clickhouseCodes.CANNOT_PARSE_INPUT_ASSERTION_FAILED)), 'malformed')
  tt.equal(classifyInsertError(err(clickhouseCodes.UNKNOWN_TABLE)), 'refused')
  tt.equal(classifyInsertError(new TypeError('bug')), 'refused')
})
