// Overload with the default server-wide limits: 128 clients sending the largest body the default
// limits admit (ingest.maxRawBytes of NDJSON), back to back. Sluice stays under 512 MiB of RSS,
// answers nothing but 200 and 429 (no 5xx; a refused body still being sent is cut: EPIPE), and
// every acknowledged event is stored exactly once.
// What holds the memory, by body size: bench/README.md, "Overload memory".
import t from 'tap'
import { settings } from '../../lib/config-schema.ts'
import { clickhouseUrl } from '../helpers/clickhouse.ts'
import { overloadedSluice } from './scenarios.ts'
import { assertGuarantees } from './guarantees.ts'

const maxRawBytes = settings.find((s) => s.path === 'ingest.maxRawBytes')!.default as number
// The load's lines are {"path":"/s/<n>","status":200} and a newline: 28 bytes and n's digits,
// at most 10 here (n stays under 10^10), so this many lines always fit in maxRawBytes.
const largestBodyLines = Math.floor(maxRawBytes / 38)

// 8 s of load, then the requests in flight finish (16 MiB each, 2 shared cores): 50-75 s here.
t.setTimeout(240_000)

t.test('overload with the largest bodies: bounded memory, no 5xx, every 200 durable', async (t) => {
  // The 128 clients generate 2 GiB of bodies in this process, on the 2 cores Sluice and ClickHouse
  // use, so an upload can average under ingest.minBytesPerSecond, take longer than
  // server.requestTimeoutMs with its waits for a reading slot, or (once in a CI run beside another
  // test file) send its headers over more than server.headersTimeoutMs: 408s, rightly. Slow
  // clients are test/ingest/slow-clients.test.ts's and test/faults/slowloris.test.ts's subject;
  // here all three are off.
  // A request's rows are never split, so each 16 MiB body is one insert of 441,505 rows. On these
  // 2 cores beside the load's generation (and, in CI, another test file) one such insert once
  // took past writer.attemptTimeoutMs (5 s), and the outcome check past the write's deadline:
  // 503 storage_outcome_unknown, rightly (test/faults/exactly-once.test.ts tests those). The
  // attempt's deadline is raised here: this test is about memory and pushback.
  const r = await overloadedSluice({
    clickhouseUrl: clickhouseUrl(), durationMs: 8_000, shape: { clients: 128, linesPerRequest: largestBodyLines },
    settings: {
      ingest: { minBytesPerSecond: 0 },
      server: { requestTimeoutMs: 600_000, headersTimeoutMs: 600_000 },
      writer: { attemptTimeoutMs: 60_000 },
    },
  })
  // A refused body (429 at admission, or after limits.maxReadingWaitMs without a reading slot) is
  // not read to its end: the server answers and closes while the client is still sending 16 MiB,
  // and undici reports the write's EPIPE instead of the answer, or ECONNRESET when the close
  // arrives as a reset while it still writes (seen once in 36 drops of a CI run).
  assertGuarantees(t, r, { everyAnswered: false })
  t.same(Object.keys(r.dropCauses).filter((cause) => cause !== 'EPIPE' && cause !== 'ECONNRESET'), [], 'every request unanswered was cut while sending a refused body (EPIPE, ECONNRESET)')
  t.comment(`dropped requests' causes: ${JSON.stringify(r.dropCauses)}`)
  t.ok((r.answerCounts['429 server_busy'] ?? 0) > 0, 'the server pushed back (429 server_busy): it was overloaded')
  t.equal(r.duplicated, 0, 'no acknowledged event stored twice')
  const fiveXx = Object.entries(r.answerCounts).filter(([k]) => k.startsWith('5')).reduce((n, [, c]) => n + c, 0)
  t.equal(fiveXx, 0, 'no 5xx')
  t.ok(r.peakRssBytes > 0 && r.peakRssBytes < 512 * 1024 * 1024, `peak RSS ${Math.round(r.peakRssBytes / 1048576)} MiB under 512 MiB, ${largestBodyLines} lines (${maxRawBytes} bytes at most) a body`)
})
