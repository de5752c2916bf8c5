// The `sluice` CLI against a real server: streams, ingest tokens, send (with retry on 429), tail.
import t from 'tap'
import { spawn } from 'node:child_process'
import { writeFile, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startServer } from '../helpers/server.ts'
import type { TestServer } from '../helpers/server.ts'
import { countEvents } from '../helpers/ingest.ts'
import { Readable } from 'node:stream'
import { request } from 'undici'
import { waitFor } from '../helpers/wait-for.ts'

const cli = new URL('../../lib/cli/cli.ts', import.meta.url).pathname
let s: TestServer

function run (args: string[], env: Record<string, string> = {}, input?: string): Promise<{ code: number | null, stdout: string, stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [cli, ...args], {
      env: { ...process.env, SLUICE_URL: s.url, SLUICE_TOKEN: s.adminToken, ...env },
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d) => { stdout += d })
    child.stderr.on('data', (d) => { stderr += d })
    if (input !== undefined) child.stdin.end(input)
    child.on('close', (code) => resolve({ code, stdout, stderr }))
  })
}

t.before(async () => { s = await startServer(t, { limits: { requestsPerMinute: 30 }, writer: { flushIntervalMs: 10, minInsertIntervalMs: 0 } }) })

t.test('stream create and list', async (t) => {
  const created = await run(['stream', 'create', 'cli-web', '--retention-days', '7', '--description', 'from the CLI'])
  t.equal(created.code, 0, created.stderr)
  t.match(created.stdout, /created stream cli-web \(retention 7 days\)/)
  const listed = await run(['stream', 'list'])
  t.match(listed.stdout, /^cli-web\t7d\t/m)
  const dup = await run(['stream', 'create', 'cli-web'])
  t.equal(dup.code, 1)
  t.match(dup.stderr, /^sluice: conflict: /)
})

t.test('token create, list, revoke', async (t) => {
  const created = await run(['token', 'create', 'cli-web', '--ttl', '3600', '--name', 'shipper'])
  t.equal(created.code, 0, created.stderr)
  const token = created.stdout.split('\n')[0]
  t.match(token, /^sli_[0-9A-Za-z]{36}$/)
  const id = /id (tok_\w+)/.exec(created.stdout)![1]
  const listed = await run(['token', 'list', 'cli-web'])
  t.match(listed.stdout, new RegExp(`^${id}\\t${token.slice(0, 8)}…${token.slice(-4)}\\tactive\\tshipper`, 'm'))
  t.notOk(listed.stdout.includes(token), 'no secret in the list')
  const revoked = await run(['token', 'revoke', 'cli-web', id])
  t.equal(revoked.code, 0)
  t.match((await run(['token', 'list', 'cli-web'])).stdout, new RegExp(`^${id}\\t.*\\trevoked`, 'm'))
})

t.test('send: a file in gzip requests, failures reported', async (t) => {
  const token = (await run(['token', 'create', 'cli-web'])).stdout.split('\n')[0]
  const dir = await mkdtemp(join(tmpdir(), 'sluice-cli-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const file = join(dir, 'events.ndjson')
  await writeFile(file, Array.from({ length: 300 }, (_, i) => (i === 10 ? 'not json' : JSON.stringify({ path: `/f/${i}` }))).join('\n') + '\n')
  const first = await run(['send', 'cli-web', file, '--token', token])
  t.equal(first.code, 2, 'a failed line makes exit code 2')
  t.match(first.stdout, /^line 11: invalid_json: /m)
  t.match(first.stdout, /ingested 299, failed 1, in 1 requests/)
  const second = await run(['send', 'cli-web', '-'], { SLUICE_INGEST_TOKEN: token }, '{"path":"/stdin"}\n')
  t.equal(second.code, 0, second.stderr)
  t.equal(await countEvents({ server: s, stream: 'cli-web', token }), 300)
})

t.test('send retries a 429 after its Retry-After', async (t) => {
  // One request at a time for the org: a held request makes the CLI's first try a 429.
  const own = await startServer(t, { limits: { concurrentRequests: 1 }, writer: { flushIntervalMs: 10, minInsertIntervalMs: 0 } })
  await own.api('POST', '/api/streams', { body: { name: 'busy' } })
  const token = (await own.api('POST', '/api/streams/busy/ingest-token', { body: {} })).body.token
  const body = new Readable({ read () {} })
  body.push('{"path":"/held"}\n')
  const held = request(`${own.url}/api/ingest/busy`, { method: 'POST', body, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/x-ndjson' } })
  await waitFor(() => own.app.http.inFlight > 0, { what: 'the server to hold the first request', timeoutMs: 5000 })
  const sending = new Promise<{ code: number | null, stdout: string }>((resolve) => {
    const child = spawn(process.execPath, [cli, 'send', 'busy', '-'], { env: { ...process.env, SLUICE_URL: own.url, SLUICE_INGEST_TOKEN: token } })
    let stdout = ''
    child.stdout.on('data', (d) => { stdout += d })
    child.on('close', (code) => resolve({ code, stdout }))
    child.stdin.end('{"path":"/sent"}\n')
  })
  const rejected = () => own.app.metrics.rejected.get({ reason: 'too_many_concurrent_requests' })
  await waitFor(() => rejected() > 0, { what: 'the CLI\'s request to be refused' })
  t.equal(rejected(), 1, 'the CLI was answered 429')
  body.push(null)
  t.equal((await held).statusCode, 200)
  const sent = await sending
  t.equal(sent.code, 0)
  t.match(sent.stdout, /ingested 1, failed 0, in 1 requests \(1 retries\)/)
})

t.test('tail prints live events', async (t) => {
  // An org of its own: its 30 requests a minute are not spent by the tests above.
  const org = await s.api('POST', '/api/orgs', { body: { name: 'cli-tail' } })
  t.equal(org.status, 201)
  const pat = org.body.token.token as string
  t.equal((await s.api('POST', '/api/streams', { token: pat, body: { name: 'cli-live' } })).status, 201)
  const child = spawn(process.execPath, [cli, 'tail', 'cli-live', '--q', 'path:/live'], { env: { ...process.env, SLUICE_URL: s.url, SLUICE_TOKEN: pat } })
  t.teardown(() => child.kill())
  let out = ''
  const got = new Promise<void>((resolve) => child.stdout.on('data', (d) => { out += d; if (out.includes('/live')) resolve() }))
  const hub = s.app.tailHub
  await waitFor(() => hub.clientCount > 0, { what: 'the tail to connect', timeoutMs: 5000 })
  t.equal(hub.clientCount, 1)
  const tok = (await s.api('POST', '/api/streams/cli-live/ingest-token', { token: pat, body: {} })).body.token
  const r = await s.api('POST', '/api/ingest/cli-live', { token: tok, body: '{"path":"/live","status":200}\n{"path":"/hidden"}\n', headers: { 'content-type': 'application/x-ndjson' } })
  t.equal(r.status, 200)
  await got
  t.match(out, /Z - - 200 \/live -/)
  t.notOk(out.includes('/hidden'))
})

t.test('usage errors and help', async (t) => {
  const help = await run(['--help'])
  t.equal(help.code, 0)
  t.match(help.stdout, /sluice stream create NAME/)
  const bad = await run(['frobnicate'])
  t.equal(bad.code, 1)
  t.match(bad.stderr, /unknown command frobnicate/)
  const noToken = await run(['stream', 'list'], { SLUICE_TOKEN: '', SLUICE_DATA_DIR: '/nonexistent' })
  t.equal(noToken.code, 1)
})
