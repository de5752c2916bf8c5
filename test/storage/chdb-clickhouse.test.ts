// The embedded engine's gateway (lib/storage/chdb-clickhouse.ts): what differs from the HTTP one and
// is part of its contract. Runs in `npm run test:chdb` only (SLUICE_TEST_ENGINE=chdb): chdb holds
// one data directory per process, and `npm test` does not install it.
import t from 'tap'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { createTestDatabase, onChdb } from '../helpers/clickhouse.ts'
import { ClickHouseError, clickhouseCodes } from '../../lib/storage/clickhouse.ts'

if (!onChdb) {
  t.plan(0, 'the embedded engine only (npm run test:chdb)')
} else {
  const db = await createTestDatabase(t, 'sluice_test_chdb')
  const ch = db.clickhouse
  await ch.command('CREATE TABLE t (n UInt64, s String) ENGINE = MergeTree ORDER BY n')

  t.test('the engine is ClickHouse 26.x and takes event rows as JSONCompactEachRow', async (t) => {
    t.match(await ch.version(), /^2[6-9]\.|^[3-9]\d\./)
    t.equal(ch.insertFormat, 'JSONCompactEachRow')
    t.match(ch.url, /^chdb:\//, 'an absolute directory')
  })

  t.test('a statement\'s settings apply to it only (a SET would stay on the session)', async (t) => {
    const limited = await ch.query('SELECT count() AS n FROM numbers(1000)', { settings: { max_rows_to_read: 10 } }).then(() => null, (e: unknown) => e)
    t.equal((limited as ClickHouseError | null)?.chCode, clickhouseCodes.TOO_MANY_ROWS, 'the limit holds for its statement')
    // Every session of the pool, not only the one that ran it.
    const counts = await Promise.all(Array.from({ length: 12 }, () => ch.query<{ n: number }>('SELECT count() AS n FROM numbers(1000)')))
    t.same(counts.map((rows) => rows[0].n), Array(12).fill(1000))
    const [row] = await ch.query<{ v: string }>("SELECT getSetting('max_rows_to_read') AS v")
    t.equal(Number(row.v), 0)
  })

  t.test('a statement that fails after writing rows leaves none of them to the next statement', async (t) => {
    // chdb keeps what a failed statement wrote on its session and hands it out with the next
    // statement's answer (explore20 F3: stats reads answered 500 after a TIMEOUT_EXCEEDED); the
    // gateway replaces such a session. Sluice's own statements have two sessions, so the next
    // statements here run on the failed one's place.
    for (let i = 0; i < 3; i++) {
      const failed = await ch.query('SELECT number AS k, throwIf(number = 150000) AS x FROM numbers(200000)', { settings: { max_block_size: 1000 } })
        .then(() => null, (e: unknown) => e)
      t.equal((failed as ClickHouseError | null)?.chCode, 395, 'the statement failed (FUNCTION_THROW_IF_VALUE_IS_NON_ZERO)')
    }
    const answers = await Promise.all(Array.from({ length: 6 }, (_, i) => ch.query<{ n: number }>(`SELECT ${i} AS n`)))
    t.same(answers, Array.from({ length: 6 }, (_, i) => [{ n: i }]), 'each answer is its own statement\'s row, alone')
  })

  t.test('an insert has stored its rows when it returns (async_insert=0; the engine has no async insert queue)', async (t) => {
    // 26.x turns async_insert on by default; the gateway sends async_insert=0 with every insert.
    await ch.insertRaw('INSERT INTO t (n, s) FORMAT JSONEachRow', Buffer.from('{"n":1,"s":"a"}\n{"n":2,"s":"b"}\n'))
    t.same(await ch.query('SELECT n, s FROM t ORDER BY n'), [{ n: 1, s: 'a' }, { n: 2, s: 'b' }], 'read back at once')
    // Even an insert that asks to be async and not waited for is stored when it returns: chdb runs
    // no async insert queue (system.asynchronous_inserts stays empty), so the setting cannot lose rows.
    await ch.insertRaw('INSERT INTO t (n, s) FORMAT JSONEachRow', Buffer.from('{"n":3,"s":"c"}\n'), undefined,
      { async_insert: '1', wait_for_async_insert: '0', async_insert_busy_timeout_min_ms: '3000', async_insert_busy_timeout_max_ms: '3000' })
    t.same(await ch.query('SELECT count() AS n FROM t'), [{ n: 3 }])
    t.same(await ch.query('SELECT count() AS n FROM system.asynchronous_inserts'), [{ n: 0 }])
  })

  t.test('a heavy statement neither blocks the event loop nor holds up another one', async (t) => {
    const delay = monitorEventLoopDelay({ resolution: 10 })
    delay.enable()
    const heavyStarted = performance.now()
    const heavy = ch.query('SELECT sum(cityHash64(number)) AS s FROM numbers(300000000)')
    await new Promise((resolve) => setTimeout(resolve, 20))
    const quickStarted = performance.now()
    await ch.query('SELECT 1 AS one')
    const quickMs = performance.now() - quickStarted
    await heavy
    const heavyMs = performance.now() - heavyStarted
    delay.disable()
    const maxDelayMs = delay.max / 1e6
    t.comment(`heavy query ${Math.round(heavyMs)} ms, quick query beside it ${quickMs.toFixed(1)} ms, event-loop delay max ${maxDelayMs.toFixed(1)} ms`)
    t.ok(maxDelayMs < 100, `event loop delay at most ${maxDelayMs.toFixed(1)} ms`)
    t.ok(quickMs < heavyMs / 2, 'the quick query ran on a session of its own')
  })

  // A statement that holds its session for ~2 s without using a core.
  const sleeping = 'SELECT sleepEachRow(0.5) FROM numbers(4) SETTINGS max_block_size = 1'

  t.test('an insert does not wait for a session while reads hold every read session', async (t) => {
    let held = 0
    const readers = Array.from({ length: 4 }, (_, i) => ch.query(sleeping, { queryId: `sluice-read-slow-${i}` }).then(() => { held++ }))
    await ch.insertRaw('INSERT INTO t (n, s) FORMAT JSONEachRow', Buffer.from('{"n":10,"s":"beside the readers"}\n'))
    t.equal(held, 0, 'stored while the four reads still ran')
    await Promise.all(readers)
    t.same(await ch.query('SELECT s FROM t WHERE n = 10'), [{ s: 'beside the readers' }])
  })

  t.test('Sluice\'s own statements do not wait while reads hold every read session', async (t) => {
    let held = 0
    const readers = Array.from({ length: 4 }, (_, i) => ch.query(sleeping, { queryId: `sluice-read-held-${i}` }).then(() => { held++ }))
    const own = await Promise.all([
      ch.query<{ n: number }>('SELECT count() AS n FROM t'),
      ch.ping(),
      ch.command('CREATE TABLE IF NOT EXISTS t2 (n UInt64) ENGINE = MergeTree ORDER BY n'),
    ])
    t.equal(own[1], true, 'ping answers')
    t.equal(held, 0, 'a query, a ping and a DDL statement answered beside four running reads')
    // A fifth read waits for a read session, not for one of Sluice's own.
    let fifth = false
    const fifthRead = ch.query('SELECT 1 AS one', { queryId: 'sluice-read-fifth-0' }).then((rows) => { fifth = true; return rows })
    await ch.query('SELECT 2 AS two')
    t.equal(fifth, false, 'the fifth read waits while four hold the read sessions')
    t.same(await fifthRead, [{ one: 1 }], 'and runs once one is free')
    await Promise.all(readers)
  })

  t.test('a reader that stops taking chunks holds no session: exports to slow clients leave the engine to the others (explore18 F1)', async (t) => {
    // More paused readers than read sessions, each after its first chunk.
    const readers = Array.from({ length: 6 }, (_, i) => ch.queryChunks('SELECT number, toString(number) AS s FROM numbers(300000)', { queryId: `sluice-read-paused-${i}` })[Symbol.asyncIterator]())
    for (const r of readers) t.equal((await r.next()).done, false)
    t.same(await ch.query('SELECT 3 AS three', { queryId: 'sluice-read-beside-0' }), [{ three: 3 }], 'a read runs beside six paused ones')
    let lines = 0
    for (let chunk = await readers[0].next(); chunk.done !== true; chunk = await readers[0].next()) lines += Buffer.from(chunk.value).toString().split('\n').length - 1
    t.ok(lines > 0, 'a paused reader goes on where it stopped')
    await Promise.all(readers.map((r) => r.return?.()))
  })

  t.test('cancel() returns once the statements of the prefix have ended by themselves (chdb cannot stop one)', async (t) => {
    const gone = new AbortController()
    const abandoned = ch.query(sleeping, { queryId: 'sluice-read-gone-0', signal: gone.signal }).then(() => 'answered', (e: unknown) => e)
    gone.abort(new Error('client went away'))
    t.match(await abandoned, { message: 'client went away' }, 'the caller is answered at once')
    let stopped = false
    const cancelled = ch.cancel('sluice-read-gone-').then(() => { stopped = true })
    t.same(await ch.query('SELECT 4 AS four', { queryId: 'sluice-read-other-0' }), [{ four: 4 }])
    t.equal(stopped, false, 'still running after a statement beside it was answered')
    await cancelled
    await ch.cancel('sluice-read-gone-')
    t.pass('nothing left to wait for: returns at once')
  })

  t.test('queryChunks streams a result larger than one block', async (t) => {
    let text = ''
    let chunks = 0
    for await (const chunk of ch.queryChunks('SELECT number FROM numbers(200000)')) {
      chunks++
      text += Buffer.from(chunk).toString('utf8')
    }
    const lines = text.split('\n').filter((l) => l !== '')
    const n = lines.length
    const sum = lines.reduce((s, l) => s + (JSON.parse(l) as { number: number }).number, 0)
    t.ok(chunks > 1, `${chunks} chunks`)
    t.equal(n, 200000)
    t.equal(sum, 199999 * 200000 / 2)
  })

  t.test('errors carry ClickHouse\'s numeric code', async (t) => {
    const unknown = await ch.query('SELECT * FROM no_such_table').then(() => null, (e: unknown) => e)
    t.ok(unknown instanceof ClickHouseError && unknown.chCode === clickhouseCodes.UNKNOWN_TABLE, 'UNKNOWN_TABLE')
    const err = await ch.insertRaw('INSERT INTO t (n, s) FORMAT JSONEachRow', Buffer.from('{"n":"x"}\n')).then(() => null, (e: unknown) => e)
    t.ok(err instanceof ClickHouseError && err.chCode > 0, `a parse error: code ${(err as ClickHouseError | null)?.chCode}`)
  })
}
