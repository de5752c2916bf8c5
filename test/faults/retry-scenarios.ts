// Exactly once through retries (docs/api.md sections 6.6 and 6.7), the fault scenarios: three
// clients at once, each on a stream of its own, each retrying its way (harness.ts LoadClient):
// keyed (Idempotency-Key), timestamped (the same bytes again, every event with its ts) and
// changing (a different body per attempt: not recognisable, duplicates counted). Each runs
// through a fault, and every event is classified per client afterwards.
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { request } from 'undici'
import { check, checkerClient, createStream, runLoad, sleep, startSluiceProcess } from './harness.ts'
import type { CheckResult, LoadClient, LoadResult, SluiceProcess } from './harness.ts'
import { ownClickHouse } from './scenarios.ts'
import { waitFor } from '../helpers/wait-for.ts'
import type { Test } from 'tap'

export const retryClients = ['keyed', 'timestamped', 'changing'] as const satisfies readonly LoadClient[]
export type RetryClient = typeof retryClients[number]

export interface RetryScenarioResult {
  scenario: string
  /** Per client: what the checker found on its stream. */
  clients: Record<RetryClient, CheckResult>
  /** From Sluice's /metrics (the last Sluice): insert attempts without an answer, and the requests they carried. */
  unansweredInserts: number
  unansweredWrites: number
  /** 503 storage_outcome_unknown answers, all clients. */
  outcomeUnknown: number
}

export interface Shape { clients: number, linesPerRequest: number }

export interface Loads {
  results: Promise<Record<RetryClient, LoadResult>>
  stop (): void
}

/**
 * One load per client kind, each on its stream, until stop(), to the Sluice `url()` names at each
 * attempt; a batch is retried up to maxAttempts times (default 1000).
 */
export function startLoads (url: () => string, tokens: Record<RetryClient, string>, shape: Shape, requestTimeoutMs: number, maxAttempts = 1_000): Loads {
  let stopped = false
  const loads = retryClients.map((client) => runLoad({
    url, stream: client, token: tokens[client], client, ...shape,
    stopped: () => stopped, maxAttempts, retryDelayMs: 200, requestTimeoutMs,
  }))
  return {
    results: Promise.all(loads).then((r) => Object.fromEntries(retryClients.map((c, i) => [c, r[i]])) as Record<RetryClient, LoadResult>),
    stop: () => { stopped = true },
  }
}

async function metric (url: string, name: string): Promise<number> {
  const res = await request(`${url}/metrics`)
  const text = await res.body.text()
  const m = new RegExp(`^${name}(?:\\{[^}]*\\})? (\\d+(?:\\.\\d+)?)$`, 'm').exec(text)
  return m ? Number(m[1]) : 0
}

/** Events stored on a stream so far (a progress probe for the load). */
async function storedCount (url: string, database: string, stream: string): Promise<number> {
  const ch = checkerClient(url, database)
  try {
    const [row] = await ch.query<{ n: number }>(`SELECT count() AS n FROM events WHERE stream = '${stream}'`)
    return Number(row.n)
  } finally {
    await ch.close()
  }
}

/** Waits until every client's stream has `more` events beyond what it held at the call. */
export async function progressed (chUrl: string, database: string, more: number, what: string): Promise<void> {
  const base = await Promise.all(retryClients.map((c) => storedCount(chUrl, database, c)))
  await waitFor(async () => {
    const now = await Promise.all(retryClients.map((c) => storedCount(chUrl, database, c)))
    return now.every((n, i) => n >= base[i] + more)
  }, { what, timeoutMs: 120_000, intervalMs: 250 })
}

/**
 * Every client's stream classified (harness.ts check) through `events` on the ClickHouse at chUrl,
 * with the unanswered-insert metrics of the Sluice at sluiceUrl.
 */
export async function summarize (scenario: string, chUrl: string, database: string, results: Record<RetryClient, LoadResult>, sluiceUrl: string): Promise<RetryScenarioResult> {
  const checker = checkerClient(chUrl, database)
  try {
    const clients = {} as Record<RetryClient, CheckResult>
    for (const c of retryClients) clients[c] = await check(checker, c, results[c])
    let outcomeUnknown = 0
    for (const c of retryClients) outcomeUnknown += clients[c].answerCounts['503 storage_outcome_unknown'] ?? 0
    return {
      scenario, clients, outcomeUnknown,
      unansweredInserts: await metric(sluiceUrl, 'sluice_insert_unanswered_total'),
      unansweredWrites: await metric(sluiceUrl, 'sluice_insert_unanswered_writes_total'),
    }
  } finally {
    await checker.close()
  }
}

/**
 * Exactly once (docs/api.md sections 6.6 and 6.7): keyed and timestamped retries leave nothing
 * missing, nothing stored twice and nothing stored that was not acknowledged; retries of changing
 * bodies leave nothing missing, and their duplicates are counted and reported.
 */
export function assertExactlyOnce (t: Test, r: RetryScenarioResult): void {
  t.comment(JSON.stringify(r))
  for (const client of ['keyed', 'timestamped'] as const) {
    const c = r.clients[client]
    t.ok(c.acknowledged > 0, `${client}: ${c.acknowledged} events acknowledged`)
    t.equal(c.missing, 0, `${client}: no acknowledged event missing`)
    t.equal(c.duplicated, 0, `${client}: no event stored twice`)
    t.equal(c.unacknowledgedStored, 0, `${client}: nothing stored that was not acknowledged`)
    t.equal(c.unexpected, 0, `${client}: only 200, 429 and 503 answers`)
  }
  const changing = r.clients.changing
  t.ok(changing.acknowledged > 0)
  t.equal(changing.missing, 0, 'changing bodies: no acknowledged event missing')
  t.equal(changing.contradicting, 0, 'changing bodies: no duplicate after answers that said nothing was stored')
  t.comment(`changing bodies (not recognisable as retries): ${changing.duplicated} of ${changing.acknowledged} events stored twice`)
}

/**
 * ClickHouse SIGSTOPped for `stopMs` (past the writer's retry timeout) under steady traffic from
 * the three clients, with the default writer settings and clients that give up on a request
 * after `requestTimeoutMs` (default 20 s: the minimum the README names).
 */
export async function stallWithRetries (o: { stopMs: number, shape: Shape, requestTimeoutMs?: number }): Promise<RetryScenarioResult> {
  const { ch, cleanup } = await ownClickHouse(false)
  let sluice: SluiceProcess | undefined
  try {
    sluice = await startSluiceProcess({ clickhouseUrl: ch.url })
    const s = sluice
    const tokens = {} as Record<RetryClient, string>
    for (const c of retryClients) tokens[c] = await createStream(s.url, s.adminToken, c)
    const loads = startLoads(() => s.url, tokens, o.shape, o.requestTimeoutMs ?? 20_000)
    try {
      await progressed(ch.url, s.database, o.shape.linesPerRequest, 'steady traffic before the stop')
      process.kill(ch.pid!, 'SIGSTOP')
      await sleep(o.stopMs) // the fault itself lasts this long
      process.kill(ch.pid!, 'SIGCONT')
      await progressed(ch.url, s.database, 2 * o.shape.linesPerRequest, 'traffic stored again after the resume')
    } finally {
      try { process.kill(ch.pid!, 'SIGCONT') } catch {}
      loads.stop()
    }
    const results = await loads.results
    return await summarize(`ClickHouse SIGSTOP ${o.stopMs} ms, default writer settings, ${o.requestTimeoutMs ?? 20_000} ms client timeout`, ch.url, s.database, results, s.url)
  } finally {
    await sluice?.stop()
    await cleanup()
  }
}

/**
 * Sluice SIGKILLed while an insert of its is in ClickHouse (seen in system.processes), then
 * started again on the same ClickHouse and database; the clients retry through the restart.
 */
export async function sigkillWithRetries (o: { shape: Shape }): Promise<RetryScenarioResult> {
  const { ch, cleanup } = await ownClickHouse(false)
  const dataDir = await mkdtemp(join(tmpdir(), 'sluice-faults-once-'))
  const database = `sluice_faults_${Math.random().toString(16).slice(2, 10)}`
  let sluice: SluiceProcess | undefined
  try {
    sluice = await startSluiceProcess({ clickhouseUrl: ch.url, dataDir, database })
    const first = sluice
    const tokens = {} as Record<RetryClient, string>
    for (const c of retryClients) tokens[c] = await createStream(first.url, first.adminToken, c)
    const loads = startLoads(() => sluice!.url, tokens, o.shape, 120_000)
    try {
      await progressed(ch.url, database, o.shape.linesPerRequest, 'steady traffic before the kill')
      const probe = checkerClient(ch.url, database)
      try {
        await waitFor(async () => {
          const [row] = await probe.query<{ n: number }>("SELECT count() AS n FROM system.processes WHERE query_id LIKE 'sluice-insert-%'")
          return Number(row.n) > 0
        }, { what: 'an insert of Sluice in ClickHouse', timeoutMs: 60_000, intervalMs: 1 })
      } finally {
        await probe.close()
      }
      first.child.kill('SIGKILL')
      await first.exited
      sluice = await startSluiceProcess({ clickhouseUrl: ch.url, dataDir, database })
      await progressed(ch.url, database, 2 * o.shape.linesPerRequest, 'traffic stored by the restarted Sluice')
    } finally {
      loads.stop()
    }
    const results = await loads.results
    return await summarize('Sluice SIGKILLed mid-insert, restarted', ch.url, database, results, sluice.url)
  } finally {
    await sluice?.stop()
    await rm(dataDir, { recursive: true, force: true })
    await cleanup()
  }
}
