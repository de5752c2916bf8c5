// ClickHouse SIGSTOPped under load for longer than the writer's whole budget (retryTimeoutMs +
// attemptTimeoutMs), then SIGCONTed: every request is answered while it is still stopped (200,
// 503 storage_unavailable or 503 storage_outcome_unknown, or 429 server_busy once the writer is
// behind its deadlines; none hangs through the stop), /readyz
// answers not_ready during it, no acknowledged event is missing, and no event of a request told
// "nothing stored" is stored. Answer times are reported, not asserted.
import t from 'tap'
import { findClickHouseBinary } from '../../lib/storage/managed-clickhouse.ts'
import { hungClickHouse } from './scenarios.ts'
import { assertGuarantees } from './guarantees.ts'

t.test('ClickHouse SIGSTOPped past the retry budget', { skip: findClickHouseBinary() ? false : 'no clickhouse-server here' }, async (t) => {
  const r = await hungClickHouse({ stopMs: 5_000, retryTimeoutMs: 1_500, attemptTimeoutMs: 1_000 })
  assertGuarantees(t, r)
  const failures = Object.keys(r.answerCounts).filter((k) => k !== '200')
  t.ok(failures.every((k) => k === '503 storage_unavailable' || k === '503 storage_outcome_unknown' || k === '429 server_busy'), `failure answers: ${failures.join(', ')}`)
  // Bounded: with the stop (5 s) longer than the budget (2.5 s), requests caught by it were
  // answered during it; unbounded waits would have ended in 200s after the SIGCONT instead.
  t.ok(failures.length > 0, 'requests caught by the stop were answered 503 while ClickHouse was stopped')
  t.ok(r.readyz!.length > 0, 'readyz was probed during the stop')
  t.ok(r.readyz!.every((p) => p.status === 503), `readyz during the stop: ${JSON.stringify(r.readyz)}`)
  t.comment(`duplicates: ${r.duplicated}; max answer ${r.maxAnswerMs} ms, max failure answer ${r.maxFailureAnswerMs} ms`)
})
