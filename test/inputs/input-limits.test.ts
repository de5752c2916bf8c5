// The protocol inputs run through the ingest pipeline's admission: past the org's request rate,
// OTLP and Loki requests get 429 with Retry-After (which their clients retry) and store nothing.
import t from 'tap'
import { request } from 'undici'
import { startServer } from '../helpers/server.ts'
import { createIngestTarget, storedEvents } from '../helpers/ingest.ts'

t.test('429 with Retry-After past the org\'s request rate, on /v1/logs and the Loki push', async (t) => {
  const s = await startServer(t, { limits: { requestsPerMinute: 2 } })
  const tgt = await createIngestTarget(s, 'limited')
  const otlp = (message: string) => request(`${s.url}/v1/logs`, {
    method: 'POST',
    headers: { authorization: `Bearer ${tgt.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ resourceLogs: [{ scopeLogs: [{ logRecords: [{ body: { stringValue: message } }] }] }] }),
  })
  const loki = (line: string) => request(`${s.url}/loki/api/v1/push`, {
    method: 'POST',
    headers: { authorization: `Bearer ${tgt.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ streams: [{ stream: {}, values: [[`${Date.now()}000000`, line]] }] }),
  })
  const first = await otlp('one')
  await first.body.dump()
  t.equal(first.statusCode, 200)
  const second = await loki('two')
  await second.body.dump()
  t.equal(second.statusCode, 204)
  for (const res of [await otlp('three'), await loki('four')]) {
    const body = await res.body.json() as { error: string }
    t.equal(res.statusCode, 429)
    t.equal(body.error, 'rate_limited')
    t.ok(Number(res.headers['retry-after']) >= 1, 'Retry-After in seconds')
  }
  t.same((await storedEvents(tgt)).map((e) => e.message).sort(), ['one', 'two'])
})

t.test('a record past ingest.maxLineBytes fails alone with line_too_long, on /v1/logs and the Loki push (explore27d H2)', async (t) => {
  const s = await startServer(t)
  const tgt = await createIngestTarget(s, 'sized')
  const big = 'x'.repeat(300 * 1024) // past the 256 KiB default, as an NDJSON line would be
  const otlp = await request(`${s.url}/v1/logs`, {
    method: 'POST',
    headers: { authorization: `Bearer ${tgt.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      resourceLogs: [{
        scopeLogs: [{
          logRecords: [
            { body: { stringValue: 'otlp small' } },
            { body: { stringValue: 'otlp big' }, attributes: [{ key: 'blob', value: { stringValue: big } }] },
          ],
        }],
      }],
    }),
  })
  const answer = await otlp.body.json() as { partialSuccess: { rejectedLogRecords: string | number, errorMessage: string } }
  t.equal(otlp.statusCode, 200)
  t.equal(Number(answer.partialSuccess.rejectedLogRecords), 1)
  t.match(answer.partialSuccess.errorMessage, /line_too_long/)
  const loki = await request(`${s.url}/loki/api/v1/push`, {
    method: 'POST',
    headers: { authorization: `Bearer ${tgt.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ streams: [{ stream: {}, values: [[`${Date.now()}000000`, 'loki small'], [`${Date.now()}000000`, big]] }] }),
  })
  const lokiAnswer = await loki.body.json() as { error: string, ingested: number, failures: Array<{ code: string }> }
  t.equal(loki.statusCode, 400, 'entries_rejected: the others stored (docs/api.md 9.2)')
  t.equal(lokiAnswer.error, 'entries_rejected')
  t.equal(lokiAnswer.ingested, 1)
  t.same(lokiAnswer.failures.map((f) => f.code), ['line_too_long'])
  t.same((await storedEvents(tgt)).map((e) => e.message).sort(), ['loki small', 'otlp small'], 'only the records within the limit')
})
