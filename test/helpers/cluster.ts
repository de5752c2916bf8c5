// The local cluster (scripts/cluster/local-cluster.ts) for test/cluster/: one per test file, stopped
// at the file's teardown, with JSON helpers against its nodes and direct SQL against its hosts.
import { readFileSync, rmSync, writeFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { setTimeout as sleep } from 'node:timers/promises'
import { join } from 'node:path'
import type { Test } from 'tap'
import { request } from 'undici'
import { isDefined, waitFor } from './wait-for.ts'
import { startLocalCluster } from '../../scripts/cluster/local-cluster.ts'
import type { LocalCluster, LocalClusterOptions } from '../../scripts/cluster/local-cluster.ts'

export interface ClusterResponse { status: number, headers: Record<string, string | string[] | undefined>, body: any }

/** Starts a cluster for this file (state in a temp dir, removed at teardown unless SLUICE_KEEP_CLUSTER is set). */
/**
 * One local cluster at a time across the run's parallel test files: two of them (8 ClickHouse
 * servers, 2 ZooKeepers) on 2 cores starve each other's ALTER ... ON CLUSTER past its timeouts.
 * A lock file holding the owner's pid; one whose owner died is taken over. Returns the release.
 */
async function lockLocalCluster (): Promise<() => void> {
  const file = join(tmpdir(), 'sluice-test-cluster.lock')
  for (;;) {
    try {
      writeFileSync(file, String(process.pid), { flag: 'wx' })
      return () => rmSync(file, { force: true })
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
    }
    const owner = Number(readFileSync(file, 'utf8'))
    let alive = false
    try { process.kill(owner, 0); alive = true } catch (err) { alive = (err as NodeJS.ErrnoException).code === 'EPERM' }
    if (!alive) rmSync(file, { force: true })
    else await sleep(500)
  }
}

export async function startTestCluster (t: Test, options: Partial<LocalClusterOptions> = {}): Promise<LocalCluster> {
  const unlock = await lockLocalCluster()
  const dir = await mkdtemp(join(tmpdir(), 'sluice-cluster-'))
  const cluster = await startLocalCluster({
    dir,
    // Short refresh: a stream or token made on one node is known on the other within 500 ms.
    // Writer deadlines shortened (3 s + 2 s instead of 10 s + 5 s) so fault tests wait less for their 503s.
    // ClickHouse requests get 180 s (ClickHouse's own distributed_ddl_task_timeout) instead of 30:
    // a stream deletion's ALTER ... ON CLUSTER waits for all four hosts, which took over 30 s, and
    // once past 60 s, on a loaded 2-core box running other tests beside it.
    sluiceConfig: {
      metadata: { refreshIntervalMs: 500 }, ingest: { workers: 1 }, writer: { retryTimeoutMs: 3000, attemptTimeoutMs: 2000 },
      clickhouse: { requestTimeoutMs: 180_000 },
      log: { level: process.env.SLUICE_TEST_LOG ?? 'warn' },
    },
    startTimeoutMs: 90_000, // four ClickHouse servers starting at once on a loaded 2-core CI box
    ...options,
  }).catch(async (err: unknown) => {
    // Its processes are stopped already; its logs are quoted in err.
    if (!process.env.SLUICE_KEEP_CLUSTER) await rm(dir, { recursive: true, force: true })
    unlock()
    throw err
  })
  // tap ends a file past its timeout with SIGTERM, which runs no teardown and no 'exit' hook:
  // take every process of the cluster down with it.
  const onSignal = (signal: NodeJS.Signals): void => { cluster.kill(); process.kill(process.pid, signal) }
  process.once('SIGTERM', onSignal)
  process.once('SIGINT', onSignal)
  t.teardown(async () => {
    process.off('SIGTERM', onSignal)
    process.off('SIGINT', onSignal)
    await cluster.stop()
    if (!process.env.SLUICE_KEEP_CLUSTER) await rm(dir, { recursive: true, force: true })
    unlock()
  })
  return cluster
}

/** A JSON request to a node or the load balancer, with the admin token unless `token` is given (null: none). */
export async function api (baseUrl: string, token: string | null, method: string, path: string, body?: unknown,
  headers: Record<string, string> = {}): Promise<ClusterResponse> {
  const h: Record<string, string> = { ...headers }
  if (token !== null) h.authorization = `Bearer ${token}`
  let payload: string | undefined
  if (body !== undefined) {
    payload = typeof body === 'string' ? body : JSON.stringify(body)
    h['content-type'] ??= 'application/json'
  }
  const res = await request(baseUrl + path, { method: method as 'GET', headers: h, body: payload })
  const text = await res.body.text()
  let parsed: unknown = null
  try { parsed = text ? JSON.parse(text) : null } catch { parsed = text }
  return { status: res.statusCode, headers: res.headers, body: parsed }
}

/**
 * Creates a stream and an ingest token through `node` with the admin PAT `admin`; resolves with
 * the token once `other` knows both (after its next metadata refresh).
 */
export async function streamWithToken (admin: string, node: string, other: string, stream: string): Promise<string> {
  const created = await api(node, admin, 'POST', '/api/streams', { name: stream })
  if (created.status !== 201) throw new Error(`create: ${created.status} ${JSON.stringify(created.body)}`)
  const token = await api(node, admin, 'POST', `/api/streams/${stream}/ingest-token`, {})
  if (token.status !== 201) throw new Error(`token: ${token.status} ${JSON.stringify(token.body)}`)
  await waitFor(async () => {
    const res = await api(other, admin, 'GET', `/api/streams/${stream}/ingest-tokens`)
    return res.status === 200 && res.body.tokens.some((x: { id: string }) => x.id === token.body.id) ? true : undefined
  }, { what: `${other} knows stream ${stream} and its token`, timeoutMs: 30_000, intervalMs: 200, until: isDefined, retryErrors: true })
  return token.body.token
}

/** NDJSON ingest of `lines` objects. */
export function ingest (baseUrl: string, token: string, stream: string, lines: object[]): Promise<ClusterResponse> {
  return api(baseUrl, token, 'POST', `/api/ingest/${stream}`, lines.map((l) => JSON.stringify(l)).join('\n') + '\n',
    { 'content-type': 'application/x-ndjson' })
}

/** Runs SQL on one ClickHouse host and returns the body's text, trimmed. */
export async function hostSql (url: string, query: string): Promise<string> {
  const res = await request(url, { method: 'POST', body: query })
  const text = await res.body.text()
  if (res.statusCode !== 200) throw new Error(`ClickHouse ${url} answered ${res.statusCode}: ${text.slice(0, 300)}`)
  return text.trim()
}
