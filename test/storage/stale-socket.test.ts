// A SELECT whose kept-alive connection the server cut as the statement went out on it (the
// client sees "socket hang up", ECONNRESET, before any answer) is asked once more on a new
// connection (lib/storage/clickhouse.ts; explore19 F1: a dashboard read answered 503 while
// ClickHouse was fine). The cut is a TCP proxy in front of the real ClickHouse that drops the next
// requests unanswered.
import t from 'tap'
import { createTestDatabase, onChdb } from '../helpers/clickhouse.ts'
import { startTcpProxy } from '../helpers/tcp-proxy.ts'
import { createClickHouse, ClickHouseError } from '../../lib/storage/clickhouse.ts'

t.test('a SELECT cut before its answer is asked once more; a second cut fails it', { skip: onChdb && 'the embedded engine has no socket' }, async (t) => {
  const { url, database } = await createTestDatabase(t)
  const proxy = await startTcpProxy(t, url)
  const clickhouse = createClickHouse({ url: proxy.url, database, user: process.env.CLICKHOUSE_USER ?? 'default', password: process.env.CLICKHOUSE_PASSWORD ?? '', requestTimeoutMs: 30_000 })
  t.teardown(() => clickhouse.close())
  t.same(await clickhouse.query('SELECT 1 AS n'), [{ n: 1 }], 'a first statement opens a kept-alive connection')

  proxy.dropRequests(1)
  t.same(await clickhouse.query('SELECT 2 AS n', { queryId: `stale-${process.pid}-1` }), [{ n: 2 }], 'answered after one cut')
  t.equal(proxy.dropped, 1)

  proxy.dropRequests(2)
  const err = await clickhouse.query('SELECT 3 AS n').then(() => null, (e: unknown) => e)
  t.ok(err instanceof ClickHouseError, 'two cuts in a row: the error, not a third attempt')
  t.equal((err as { sysCode?: string }).sysCode, 'ECONNRESET')
  t.equal(proxy.dropped, 3)

  proxy.dropRequests(1)
  const aborted = new AbortController()
  const read = clickhouse.query('SELECT 4 AS n', { signal: aborted.signal })
  aborted.abort()
  t.ok(await read.then(() => false, () => true), 'an aborted read is not asked again')
  proxy.dropRequests(0)
  t.same(await clickhouse.query('SELECT 5 AS n'), [{ n: 5 }], 'later statements go through')

  // A streamed statement (an export's window), cut before its first chunk.
  const before = proxy.dropped
  proxy.dropRequests(1)
  let text = ''
  for await (const chunk of clickhouse.queryChunks('SELECT number AS n FROM system.numbers LIMIT 3')) text += Buffer.from(chunk).toString()
  t.equal(text, '{"n":0}\n{"n":1}\n{"n":2}\n', 'a streamed statement is asked again too')
  t.equal(proxy.dropped, before + 1)
})

t.test('an INSERT cut before its answer is not sent again (its caller decides)', { skip: onChdb && 'the embedded engine has no socket' }, async (t) => {
  const { url, database, clickhouse: direct } = await createTestDatabase(t)
  await direct.command('CREATE TABLE cut (n UInt32) ENGINE = MergeTree ORDER BY n')
  const proxy = await startTcpProxy(t, url)
  const clickhouse = createClickHouse({ url: proxy.url, database, user: process.env.CLICKHOUSE_USER ?? 'default', password: process.env.CLICKHOUSE_PASSWORD ?? '', requestTimeoutMs: 30_000 })
  t.teardown(() => clickhouse.close())
  await clickhouse.query('SELECT 1')
  proxy.dropRequests(1)
  const err = await clickhouse.command('INSERT INTO cut VALUES (1)').then(() => null, (e: unknown) => e)
  t.ok(err instanceof ClickHouseError)
  t.equal(proxy.dropped, 1)
  t.same(await direct.query('SELECT count() AS n FROM cut'), [{ n: 0 }])
})
