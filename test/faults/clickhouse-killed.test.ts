// ClickHouse SIGKILLed twice under load and restarted (by its own supervisor, on the same port):
// no acknowledged event is missing, and no event of a request told "nothing stored" is stored.
import t from 'tap'
import { findClickHouseBinary } from '../../lib/storage/managed-clickhouse.ts'
import { killedClickHouse } from './scenarios.ts'
import { assertGuarantees } from './guarantees.ts'

t.test('ClickHouse SIGKILLed and restarted under load', { skip: findClickHouseBinary() ? false : 'no clickhouse-server here' }, async (t) => {
  const r = await killedClickHouse({ kills: 2, betweenMs: 1_000 })
  assertGuarantees(t, r)
  t.comment(`duplicates: ${r.duplicated}`)
})
