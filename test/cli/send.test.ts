// `sluice send` against a real server: requests in flight (--parallel), failures reported with the
// FILE's line numbers in file order whatever order the answers come in, exit codes, Retry-After.
import t from 'tap'
import type { Test } from 'tap'
import { spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { writeFile, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startServer } from '../helpers/server.ts'
import { waitFor } from '../helpers/wait-for.ts'
import type { TestServer } from '../helpers/server.ts'
import { createIngestTarget, countEvents } from '../helpers/ingest.ts'
import { retryAfterSeconds } from '../../lib/cli/send-command.ts'
import { startTcpProxy } from '../helpers/tcp-proxy.ts'
import { clickhouseUrl, onChdb } from '../helpers/clickhouse.ts'

const cli = new URL('../../lib/cli/cli.ts', import.meta.url).pathname

interface Run { code: number | null, stdout: string, stderr: string }

function spawnCli (s: TestServer, args: string[], token: string): { child: ChildProcess, done: Promise<Run> } {
  const child = spawn(process.execPath, [cli, 'send', ...args], { env: { ...process.env, SLUICE_URL: s.url, SLUICE_INGEST_TOKEN: token } })
  let stdout = ''
  let stderr = ''
  child.stdout!.on('data', (d) => { stdout += d })
  child.stderr!.on('data', (d) => { stderr += d })
  const done = new Promise<Run>((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })))
  return { child, done }
}

async function tempFile (t: Test, lines: string[]): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'sluice-send-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const file = join(dir, 'events.ndjson')
  await writeFile(file, lines.join('\n') + '\n')
  return file
}

const good = (i: number): string => JSON.stringify({ path: `/send/${i}`, status: 200 })

t.test('failures carry the FILE\'s line numbers, in file order, over many requests in flight', async (t) => {
  const s = await startServer(t, { writer: { flushIntervalMs: 10, minInsertIntervalMs: 0 } })
  const tgt = await createIngestTarget(s, 'lines')
  // 400 lines of ~35 bytes in requests of ~300 bytes: about 48 requests, 4 in flight. Bad lines
  // in many requests, blank lines (counted in line numbers, never sent alone) among them.
  const bad = new Set([1, 9, 10, 57, 58, 199, 250, 333, 399, 400])
  const blank = new Set([5, 120, 121, 122, 300])
  const lines = Array.from({ length: 400 }, (_, k) => {
    const n = k + 1
    if (bad.has(n)) return n % 2 === 0 ? 'not json' : '{"status":"teapot"}'
    return blank.has(n) ? '' : good(n)
  })
  const file = await tempFile(t, lines)
  const { done } = spawnCli(s, ['lines', file, '--parallel', '4', '--chunk-bytes', '300'], tgt.token)
  const run = await done
  t.equal(run.code, 2, `failed lines make exit code 2 (${run.stderr})`)
  const reported = [...run.stdout.matchAll(/^line (\d+): (\w+): /gm)].map((m) => Number(m[1]))
  t.same(reported, [...bad].sort((a, b) => a - b), 'every bad line, by its line in the file, in file order')
  t.match(run.stdout, /^line 10: invalid_json: /m)
  t.match(run.stdout, /^line 9: \w+: /m)
  const summary = /ingested (\d+), failed (\d+), in (\d+) requests/.exec(run.stdout)
  t.ok(summary, run.stdout)
  t.equal(Number(summary![1]), 400 - bad.size - blank.size)
  t.equal(Number(summary![2]), bad.size)
  t.ok(Number(summary![3]) >= 40, `many requests (${summary![3]})`)
  t.equal(await countEvents(tgt), 400 - bad.size - blank.size, 'every good line stored once')
})

/**
 * Runs the CLI against a writer that holds every write (the intervals are a minute): requests stay
 * in flight until the test flushes the writer, which it does each time the CLI cannot send more.
 * Returns the most requests the server had in flight at once.
 */
async function maxInFlight (t: Test, parallel: string[], expected: number): Promise<{ max: number, run: Run, stored: number }> {
  const s = await startServer(t, { writer: { flushIntervalMs: 60_000, minInsertIntervalMs: 60_000, idleInsertIntervalMs: 60_000 } })
  const tgt = await createIngestTarget(s, 'inflight')
  const file = await tempFile(t, Array.from({ length: 120 }, (_, k) => good(k + 1)))
  const { done } = spawnCli(s, ['inflight', file, ...parallel, '--chunk-bytes', '200'], tgt.token)
  let finished = false
  let run!: Run
  void done.then((r) => { run = r; finished = true })
  let max = 0
  let stillSince = performance.now()
  let last = -1
  while (!finished) {
    const n = s.app.http.inFlight
    max = Math.max(max, n)
    if (n !== last) { last = n; stillSince = performance.now() }
    // All the CLI may have are waiting (or, at the end of the file, fewer and no change for a while).
    if (n >= expected || (n > 0 && performance.now() - stillSince > 500 && s.app.writer.pendingRows > 0)) {
      await s.app.writer.flush()
      last = -1
    }
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
  return { max, run, stored: await countEvents(tgt) }
}

t.test('--parallel 3: three requests in flight at once, never more', async (t) => {
  const { max, run, stored } = await maxInFlight(t, ['--parallel', '3'], 3)
  t.equal(run.code, 0, run.stderr)
  t.equal(max, 3)
  t.equal(stored, 120)
})

t.test('the default is 4 requests in flight', async (t) => {
  const { max, run, stored } = await maxInFlight(t, [], 4)
  t.equal(run.code, 0, run.stderr)
  t.equal(max, 4)
  t.equal(stored, 120)
})

t.test('a refused request stops the send with exit code 1, naming its lines', async (t) => {
  const s = await startServer(t)
  const tgt = await createIngestTarget(s, 'mine')
  await createIngestTarget(s, 'other')
  const file = await tempFile(t, Array.from({ length: 10 }, (_, k) => good(k + 1)))
  const run = await spawnCli(s, ['other', file], tgt.token).done
  t.equal(run.code, 1)
  t.match(run.stderr, /^sluice: forbidden_stream: lines 1-10: /m)
  const usage = await spawnCli(s, ['mine', file, '--parallel', '0'], tgt.token).done
  t.equal(usage.code, 1)
  t.match(usage.stderr, /^sluice: usage: --parallel must be an integer 1-16/m)
})

t.test('a storage outage: 503 with Retry-After, sent again, stored once', { skip: onChdb && 'takes storage down through a TCP proxy: the embedded engine (chdb) runs in this process and has no connection to cut' }, async (t) => {
  const storage = await startTcpProxy(t, clickhouseUrl())
  // The outage refuses connections, so each attempt fails at once and the 503 comes after
  // retryTimeoutMs. attemptTimeoutMs stays the default: an insert cut by a short attempt timeout on
  // a loaded machine is an unknown outcome (503 storage_outcome_unknown), which a retry may store
  // twice (docs/api.md section 6.6), and this test is about the outage.
  const s = await startServer(t, { clickhouse: { url: storage.url }, writer: { retryTimeoutMs: 300 } })
  const tgt = await createIngestTarget(s, 'outage')
  const file = await tempFile(t, Array.from({ length: 50 }, (_, k) => good(k + 1)))
  storage.down()
  const { done } = spawnCli(s, ['outage', file, '--chunk-bytes', '400'], tgt.token)
  const answered503 = () => s.app.metrics.requests.get({ route: '/api/ingest/:streamId', method: 'POST', status: 503 })
  await waitFor(() => answered503() >= 1, { what: 'the CLI to be answered 503', timeoutMs: 120_000, intervalMs: 20 })
  t.ok(answered503() >= 1, 'the CLI was answered 503')
  storage.up()
  const run = await done
  t.equal(run.code, 0, run.stderr)
  const retries = Number(/\((\d+) retries\)/.exec(run.stdout)?.[1])
  t.ok(retries >= 1, `retried (${run.stdout.trim()})`)
  t.equal(await countEvents(tgt), 50, 'every line stored once')
})

t.test('Retry-After: seconds or an HTTP date, bounded', async (t) => {
  t.equal(retryAfterSeconds('3'), 3)
  t.equal(retryAfterSeconds(undefined), 1)
  t.equal(retryAfterSeconds('soon'), 1)
  t.equal(retryAfterSeconds(new Date(1_000_000 + 7_000).toUTCString(), 1_000_000), 7)
  t.equal(retryAfterSeconds('86400'), 300, 'at most 5 minutes')
})
