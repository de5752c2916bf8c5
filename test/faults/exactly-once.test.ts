// Exactly once through retries (docs/api.md sections 6.6 and 6.7; retry-scenarios.ts): three
// clients through a 20 s ClickHouse stop with steady traffic (past the retry timeout; the
// shipper-shaped stall of issue 24) and through SIGKILL of Sluice mid-insert. Keyed retries and
// unkeyed retries of identical timestamped bodies: 0 missing, 0 stored twice. Unkeyed retries of
// different bodies: 0 missing, duplicates counted and reported. Through the stall, no request
// is answered storage_outcome_unknown unless its rows were in an insert that got no answer.
import t from 'tap'
import { findClickHouseBinary } from '../../lib/storage/managed-clickhouse.ts'
import { assertExactlyOnce, sigkillWithRetries, stallWithRetries } from './retry-scenarios.ts'

const skip = findClickHouseBinary() ? false : 'no clickhouse-server here'

t.test('a 20 s ClickHouse stop under steady traffic: exactly once for keyed and timestamped retries; unknown outcomes only for unanswered inserts', { skip }, async (t) => {
  const r = await stallWithRetries({ stopMs: 20_000, shape: { clients: 4, linesPerRequest: 500 } })
  assertExactlyOnce(t, r)
  t.ok(r.outcomeUnknown <= r.unansweredWrites,
    `${r.outcomeUnknown} storage_outcome_unknown answers, at most the ${r.unansweredWrites} requests carried by the ${r.unansweredInserts} unanswered insert attempts`)
  t.ok(r.unansweredInserts <= 2, `${r.unansweredInserts} insert attempts went unanswered: no new insert was sent into the stopped ClickHouse`)
  // Nothing stored for them: 503 storage_unavailable when their time was up in the writer's
  // queue, 429 server_busy once the writer was behind (needsDrain).
  const refused = Object.values(r.clients).reduce((n, c) => n + (c.answerCounts['503 storage_unavailable'] ?? 0) + (c.answerCounts['429 server_busy'] ?? 0), 0)
  t.ok(refused > 0, `${refused} requests caught by the stop were answered 503 storage_unavailable or 429 server_busy`)
})

t.test('Sluice SIGKILLed mid-insert and restarted: exactly once for keyed and timestamped retries', { skip }, async (t) => {
  const r = await sigkillWithRetries({ shape: { clients: 4, linesPerRequest: 500 } })
  assertExactlyOnce(t, r)
})
