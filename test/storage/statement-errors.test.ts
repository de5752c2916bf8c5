// A statement ClickHouse refuses whatever its state is a bug of Sluice's: the API answers it 500
// internal_error, not 503 storage_unavailable with a Retry-After a client would honour forever
// (explore27a: context?same= on a Distributed table of 18.16 failed on every call as a 503).
// Failures of the server or its state stay 503. Both engines: their codes must agree.
import t from 'tap'
import { createTestDatabase } from '../helpers/clickhouse.ts'
import { toHttpError } from '../../lib/errors.ts'

async function refusal (run: () => Promise<unknown>): Promise<unknown> {
  try {
    await run()
  } catch (err) {
    return err
  }
  throw new Error('the statement ran')
}

t.test('a statement ClickHouse cannot run answers 500; a missing table 503 with Retry-After', async (t) => {
  const { clickhouse } = await createTestDatabase(t)
  await clickhouse.command('CREATE TABLE t (a UInt32, s String) ENGINE = MergeTree ORDER BY a')
  const wrong = [
    'SELECT a FROM t WHERE',                    // SYNTAX_ERROR
    'SELECT noSuchFunction(a) FROM t',          // UNKNOWN_FUNCTION
    'SELECT a + s FROM t',                      // ILLEGAL_TYPE_OF_ARGUMENT
    'SELECT a, count() FROM t',                 // NOT_AN_AGGREGATE
    'SELECT substring(s) FROM t',               // NUMBER_OF_ARGUMENTS_DOESNT_MATCH
  ]
  for (const statement of wrong) {
    const err = toHttpError(await refusal(() => clickhouse.query(statement)))
    t.equal(err.code, 'internal_error', statement)
    t.equal(err.status, 500, statement)
    t.equal(err.retryAfter, undefined, `${statement}: no Retry-After`)
  }
  const missing = toHttpError(await refusal(() => clickhouse.query('SELECT a FROM no_such_table')))
  t.equal(missing.code, 'storage_unavailable', 'an unknown table (a host behind a schema change)')
  t.ok((missing.retryAfter ?? 0) >= 1)
})
