// ClickHouse SIGKILLed twice under load and restarted (by its own supervisor, on the same port):
// no acknowledged event is missing, and no event of a request told "nothing stored" is stored.
import t from 'tap'
import { findClickHouseBinary } from '../../lib/storage/managed-clickhouse.ts'
import { killedClickHouse } from './scenarios.ts'

t.test('ClickHouse SIGKILLed and restarted under load', { skip: findClickHouseBinary() ? false : 'no clickhouse-server here' }, async (t) => {
  const r = await killedClickHouse({ kills: 2, betweenMs: 1_000 })
  t.comment(JSON.stringify(r))
  t.ok(r.acknowledged > 0, `${r.acknowledged} events acknowledged`)
  t.equal(r.missing, 0, 'no acknowledged event missing')
  t.equal(r.contradicting, 0, 'no duplicate after answers that said nothing was stored')
  t.equal(r.storedAfterNothingStored, 0, 'nothing stored of requests told nothing was stored')
  t.equal(r.unexpected, 0, 'only 200, 429 and 503 answers')
  t.notOk(r.answerCounts['0 dropped'], 'every request was answered')
  t.comment(`duplicates: ${r.duplicated}`)
})
