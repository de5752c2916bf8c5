// Slowloris (issue 13 holes 1 and 2): one org's connections trickle their headers or bodies a
// byte at a time while another org's normal traffic runs. Small limits through config make the
// fight quick: 4 reading slots, a 2 KiB/s minimum rate after 500 ms, 1 s for headers. Normal
// traffic must keep succeeding (no 429 for want of a slot: the slow org gets at most its share
// while the other waits), the slow requests get 408 and are destroyed, and afterwards every
// slot, byte and socket is back to its baseline. Latency is compared in bench/slowloris.bench.ts,
// not asserted here.
import t from 'tap'
import { request } from 'undici'
import { startServer } from '../helpers/server.ts'
import type { TestServer } from '../helpers/server.ts'
import { countEvents, createIngestTarget } from '../helpers/ingest.ts'
import { runNormalTraffic, startSlowloris } from '../helpers/slowloris.ts'
import { waitFor } from '../helpers/wait-for.ts'

function connections (s: TestServer): Promise<number> {
  return new Promise((resolve, reject) => s.app.http.server.getConnections((err, n) => err ? reject(err) : resolve(n)))
}

t.test('slow headers and bodies from one org do not starve another org', async (t) => {
  const s = await startServer(t, {
    server: { headersTimeoutMs: 1000, requestTimeoutMs: 20_000 },
    ingest: { minBytesPerSecond: 2048, minRateGraceMs: 500 },
    limits: { maxReadingRequests: 4, maxReadingWaitMs: 5000, concurrentRequests: 64 },
  })
  const normal = await createIngestTarget(s, 'normal')
  const slowOrg = await s.api('POST', '/api/orgs', { body: { name: 'slowpoke' } })
  t.equal(slowOrg.status, 201)
  const slowPat = slowOrg.body.token.token as string
  t.equal((await s.api('POST', '/api/streams', { token: slowPat, body: { name: 'trickle' } })).status, 201)
  const slowToken = (await s.api('POST', '/api/streams/trickle/ingest-token', { token: slowPat, body: {} })).body.token as string
  const baseline = await connections(s)

  const attack = startSlowloris({
    target: { url: s.url, stream: 'trickle', token: slowToken },
    bodyClients: 12, headerClients: 12, byteIntervalMs: 100,
  })
  // Let the attack take every reading slot before normal traffic starts.
  await waitFor(() => s.app.admission.readingRequests === 4, { what: 'the attack to hold the reading slots' })
  // Progress, not a rate: the normal clients run until 16 of their requests are stored, however
  // slow the machine (the attack goes on meanwhile: the server's closes are replaced). Starved,
  // a request waits out maxReadingWaitMs (5 s) and is refused with server_busy; a minute without
  // 16 answers is starvation too (4 answers in 4 s was once all a loaded CI run gave).
  const wanted = 16
  const traffic = await runNormalTraffic({ url: s.url, stream: 'normal', token: normal.token },
    { concurrency: 4, durationMs: 60_000, untilOk: wanted, body: '{"path":"/normal","status":200}\n'.repeat(20) })
  // However fast the traffic was, the attack lasts until the server has let go of its first round.
  await waitFor(() => attack.stats.closedByServer >= 24, { what: 'the server to close the slow connections', timeoutMs: 60_000 })
  const stats = await attack.stop()

  const ok = traffic.statuses.get(200) ?? 0
  t.ok(ok >= wanted, `normal requests kept succeeding (${ok} answered 200)`)
  t.same([...traffic.errors], [], 'and none was refused, server_busy included')
  t.ok((stats.answers.get(408) ?? 0) > 0, `slow requests got 408 (${stats.answers.get(408) ?? 0})`)
  t.notOk(stats.answers.has(200), 'no slow body was stored')
  t.ok(stats.closedByServer >= 24, `the server closed the slow connections itself (${stats.closedByServer})`)

  await waitFor(async () => (await connections(s)) <= baseline, { what: 'the sockets to be back to the baseline' })
  await waitFor(() => s.app.http.inFlight === 0, { what: 'no request in flight' })
  t.equal(s.app.admission.readingRequests, 0, 'reading slots back')
  t.equal(s.app.admission.waitingRequests, 0)
  t.equal(s.app.admission.readingBytes, 0)
  t.equal(s.app.admission.uncommittedBytes, 0, 'uncommitted bytes back')
  const metrics = await (await request(`${s.url}/metrics`)).body.text()
  t.match(metrics, /^sluice_ingest_reading_requests 0$/m)
  t.match(metrics, /^sluice_uncommitted_bytes 0$/m)
  t.match(metrics, /^sluice_ingest_reading_bytes 0$/m)
  t.equal(await countEvents(normal), ok * 20, 'every 200 is stored')
  t.comment(`normal: ${ok} x 200; attack: ${stats.opened} connections, ${stats.answers.get(408) ?? 0} x 408, ${stats.closedByServer} closed by the server`)
})
