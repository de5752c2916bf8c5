// Overload with the default server-wide limits: many clients sending large bodies back to back.
// Sluice stays under 512 MiB of RSS, answers nothing but 200 and 429 (no 5xx), and every
// acknowledged event is stored exactly once.
import t from 'tap'
import { clickhouseUrl } from '../helpers/clickhouse.ts'
import { overloadedSluice } from './scenarios.ts'
import { assertGuarantees } from './guarantees.ts'

t.test('overload: bounded memory, no 5xx, every 200 durable', async (t) => {
  const r = await overloadedSluice({ clickhouseUrl: clickhouseUrl(), durationMs: 8_000, shape: { clients: 160, linesPerRequest: 10_000 } })
  assertGuarantees(t, r)
  t.ok((r.answerCounts['429 server_busy'] ?? 0) > 0, 'the server pushed back (429 server_busy): it was overloaded')
  t.equal(r.duplicated, 0, 'no acknowledged event stored twice')
  const fiveXx = Object.entries(r.answerCounts).filter(([k]) => k.startsWith('5')).reduce((n, [, c]) => n + c, 0)
  t.equal(fiveXx, 0, 'no 5xx')
  t.ok(r.peakRssBytes > 0 && r.peakRssBytes < 512 * 1024 * 1024, `peak RSS ${Math.round(r.peakRssBytes / 1048576)} MiB under 512 MiB`)
})
