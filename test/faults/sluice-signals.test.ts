// Sluice SIGTERMed under load (graceful: every answered request's events are stored, nothing of
// a request told "nothing stored") and SIGKILLed (every acknowledged event stored; the others
// may or may not be).
import t from 'tap'
import { clickhouseUrl } from '../helpers/clickhouse.ts'
import { signalledSluice } from './scenarios.ts'

t.test('SIGTERM under load: graceful', async (t) => {
  const r = await signalledSluice({ signal: 'SIGTERM', clickhouseUrl: clickhouseUrl() })
  t.comment(JSON.stringify(r))
  t.equal(r.exit, '0', 'exit 0')
  t.ok(r.acknowledged > 0, `${r.acknowledged} events acknowledged`)
  t.equal(r.missing, 0, 'no acknowledged event missing')
  t.equal(r.contradicting, 0, 'no duplicate after answers that said nothing was stored')
  t.equal(r.storedAfterNothingStored, 0, 'nothing stored of requests told nothing was stored (503 shutting_down included)')
  t.equal(r.unexpected, 0, 'only 200, 429 and 503 answers')
  t.comment(`duplicates: ${r.duplicated}`)
})

t.test('SIGKILL under load: acknowledged events are stored', async (t) => {
  const r = await signalledSluice({ signal: 'SIGKILL', clickhouseUrl: clickhouseUrl() })
  t.comment(JSON.stringify(r))
  t.equal(r.exit, 'SIGKILL')
  t.ok(r.acknowledged > 0, `${r.acknowledged} events acknowledged`)
  t.equal(r.missing, 0, 'no acknowledged event missing')
  t.equal(r.contradicting, 0, 'no duplicate after answers that said nothing was stored')
  t.equal(r.unexpected, 0, 'only 200, 429 and 503 answers')
  t.comment(`duplicates: ${r.duplicated}, unacknowledged but stored: ${r.unacknowledgedStored}`)
})
