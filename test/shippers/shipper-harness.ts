// What the shipper tests share: code blocks taken from the docs/shippers/ files themselves (so the
// documented configs are the tested ones), a Sluice whose ClickHouse sits behind a TCP proxy (a
// storage outage on demand), a held request that makes the org's next one a 429, and polling.
import { readFileSync } from 'node:fs'
import { Readable } from 'node:stream'
import { request } from 'undici'
import type { Test } from 'tap'
import { startServer } from '../helpers/server.ts'
import type { TestServer } from '../helpers/server.ts'
import { startTcpProxy } from '../helpers/tcp-proxy.ts'
import type { TcpProxy } from '../helpers/tcp-proxy.ts'
import { clickhouseUrl } from '../helpers/clickhouse.ts'
import { waitFor } from '../helpers/wait-for.ts'
import { createIngestTarget } from '../helpers/ingest.ts'
import type { IngestTarget } from '../helpers/ingest.ts'

/** The `index`-th fenced block of `lang` (```python, ```conf ...) in docs/shippers/`file`. */
export function docBlock (file: string, lang: string, index = 0): string {
  const text = readFileSync(new URL(`../../docs/shippers/${file}`, import.meta.url), 'utf8')
  const blocks = [...text.matchAll(new RegExp('^```' + lang + '\\n([\\s\\S]*?)^```$', 'gm'))].map((m) => m[1])
  if (blocks[index] === undefined) throw new Error(`docs/shippers/${file} has no ${lang} block ${index}`)
  return blocks[index]
}

export interface ShipperRig {
  server: TestServer
  target: IngestTarget
  /** Between Sluice and ClickHouse: down() is a storage outage (connections refused). */
  storage: TcpProxy
  /** In front of Sluice: down() and downBetweenAnswers() are Sluice down (connections refused). Shippers send to its url. */
  front: TcpProxy
  /** Holds one ingest request open: with concurrentRequests 1 the org's next request is a 429. */
  holdOneRequest (): Promise<() => Promise<void>>
  /** 429s answered for too many concurrent requests so far. */
  concurrency429s (): number
  /** Answers with a 5xx status so far on `route` (a router pattern; the ingest route by default). */
  ingest5xx (route?: string): number
}

/**
 * Sluice with one concurrent ingest request per org (so a held request makes the next a 429) and
 * a short storage retry (an outage is answered 503 within about a second instead of 15). The
 * outages refuse connections, so each attempt fails at once, and the attempt timeout is long
 * (30 s): a short one (500 ms) made an insert slowed by a loaded machine an unknown outcome (503
 * storage_outcome_unknown), whose resend the shippers' docs say may store a batch twice, and
 * syslog-ng's test once saw it (as test/cli/send.test.ts reasons); the default 5 s did the same
 * once to rsyslog's test, run beside other test files on a machine at load 8.
 */
/** writer: the writer's budget (default a short hold, 1 s + 30 s; the defaults are 10 s + 5 s). */
export async function startShipperRig (t: Test, stream: string,
  writer: { retryTimeoutMs: number, attemptTimeoutMs: number } = { retryTimeoutMs: 1_000, attemptTimeoutMs: 30_000 }): Promise<ShipperRig> {
  const storage = await startTcpProxy(t, clickhouseUrl())
  const server = await startServer(t, {
    clickhouse: { url: storage.url },
    limits: { concurrentRequests: 1 },
    // The held request's body stays silent until the shipper was refused, however long the
    // shipper's process takes to start (more than the minimum body rate's 5 s grace under load).
    ingest: { minBytesPerSecond: 0 },
    writer,
  })
  const target = await createIngestTarget(server, stream)
  const front = await startTcpProxy(t, server.url)
  const counters = server.app.metrics
  return {
    server, target, storage, front,
    async holdOneRequest () {
      const body = new Readable({ read () {} })
      body.push('{"log":"held"}\n')
      const answer = request(`${server.url}/api/ingest/${stream}`, {
        method: 'POST', body, headers: { authorization: `Bearer ${target.token}`, 'content-type': 'application/x-ndjson' },
      })
      await waitFor(() => server.app.http.inFlight > 0, { what: 'the held request to be in flight', timeoutMs: 30_000, intervalMs: 20 })
      return async () => {
        body.push(null)
        const res = await answer
        await res.body.text()
      }
    },
    concurrency429s: () => counters.rejected.get({ reason: 'too_many_concurrent_requests' }),
    ingest5xx: (route = '/api/ingest/:streamId') => {
      let n = 0
      for (const status of [500, 503]) n += counters.requests.get({ route, method: 'POST', status })
      return n
    },
  }
}

/**
 * Storage failures a request met: failed inserts, and idempotency lookups or records that
 * failed (a body recognisable as a retry, or a keyed one, is refused before any insert when
 * ClickHouse does not answer its key lookup: docs/api.md section 6.7).
 */
export function storageFailures (metrics: { insertFailures: { get (): number }, storageRefusals: { get (): number } }): number {
  return metrics.insertFailures.get() + metrics.storageRefusals.get()
}
