// Sluice's own (managed) ClickHouse SIGKILLed twice under load; Sluice restarts it: no
// acknowledged event is missing, and no event of a request told "nothing stored" is stored.
import t from 'tap'
import { findClickHouseBinary } from '../../lib/storage/managed-clickhouse.ts'
import { killedManagedClickHouse } from './scenarios.ts'
import { assertGuarantees } from './guarantees.ts'

t.test('managed ClickHouse SIGKILLed under load, restarted by Sluice', { skip: findClickHouseBinary() ? false : 'no clickhouse-server here' }, async (t) => {
  const r = await killedManagedClickHouse({ kills: 2, betweenMs: 1_000 })
  assertGuarantees(t, r)
  t.comment(`duplicates: ${r.duplicated}`)
})
