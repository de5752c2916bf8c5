// Sluice's own (managed) ClickHouse SIGKILLed twice under load; Sluice restarts it: no
// acknowledged event is missing, and no event of a request told "nothing stored" is stored.
import t from 'tap'
import { findClickHouseBinary } from '../../lib/storage/managed-clickhouse.ts'
import { killedManagedClickHouse } from './scenarios.ts'

t.test('managed ClickHouse SIGKILLed under load, restarted by Sluice', { skip: findClickHouseBinary() ? false : 'no clickhouse-server here' }, async (t) => {
  const r = await killedManagedClickHouse({ kills: 2, betweenMs: 1_000 })
  t.comment(JSON.stringify(r))
  t.ok(r.acknowledged > 0, `${r.acknowledged} events acknowledged`)
  t.equal(r.missing, 0, 'no acknowledged event missing')
  t.equal(r.contradicting, 0, 'no duplicate after answers that said nothing was stored')
  t.equal(r.storedAfterNothingStored, 0, 'nothing stored of requests told nothing was stored')
  t.equal(r.unexpected, 0, 'only 200, 429 and 503 answers')
  t.notOk(r.answerCounts['0 dropped'], 'every request was answered')
  t.comment(`duplicates: ${r.duplicated}`)
})
