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
