// Sluice SIGTERMed under load (graceful: every answered request's events are stored, nothing of
// a request told "nothing stored") and SIGKILLed (every acknowledged event stored; the others
// may or may not be).
import t from 'tap'
import { clickhouseUrl } from '../helpers/clickhouse.ts'
import { signalledSluice } from './scenarios.ts'
import { assertGuarantees } from './guarantees.ts'

t.test('SIGTERM under load: graceful', async (t) => {
  const r = await signalledSluice({ signal: 'SIGTERM', clickhouseUrl: clickhouseUrl() })
  t.equal(r.exit, '0', 'exit 0')
  // "Nothing stored" answers include 503 shutting_down; requests sent after the exit are refused.
  assertGuarantees(t, r, { everyAnswered: false })
  t.comment(`duplicates: ${r.duplicated}`)
})

t.test('SIGKILL under load: acknowledged events are stored', async (t) => {
  const r = await signalledSluice({ signal: 'SIGKILL', clickhouseUrl: clickhouseUrl() })
  t.equal(r.exit, 'SIGKILL')
  assertGuarantees(t, r, { everyAnswered: false, nothingAfterRefusals: false })
  t.comment(`duplicates: ${r.duplicated}, unacknowledged but stored: ${r.unacknowledgedStored}`)
})
