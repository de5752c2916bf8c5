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
import { gzipSync } from 'node:zlib'

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
  // One request at a time for the org: a held request makes the CLI's first try a 429. The held
  // body is silent until the CLI was refused, however long its process takes to start: no
  // minimum body rate (a loaded machine took more than its 5 s grace).
  const own = await startServer(t, { limits: { concurrentRequests: 1 }, ingest: { minBytesPerSecond: 0 }, writer: { flushIntervalMs: 10, minInsertIntervalMs: 0 } })
  await own.api('POST', '/api/streams', { body: { name: 'busy' } })
  const token = (await own.api('POST', '/api/streams/busy/ingest-token', { body: {} })).body.token
  const body = new Readable({ read () {} })
  body.push('{"path":"/held"}\n')
  const held = request(`${own.url}/api/ingest/busy`, { method: 'POST', body, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/x-ndjson' } })
  await waitFor(() => own.app.http.inFlight > 0, { what: 'the server to hold the first request' })
  const sending = new Promise<{ code: number | null, stdout: string }>((resolve) => {
    const child = spawn(process.execPath, [cli, 'send', 'busy', '-'], { env: { ...process.env, SLUICE_URL: own.url, SLUICE_INGEST_TOKEN: token } })
    let stdout = ''
    child.stdout.on('data', (d) => { stdout += d })
    child.on('close', (code) => resolve({ code, stdout }))
    child.stdin.end('{"path":"/sent"}\n')
  })
  const rejected = () => own.app.metrics.rejected.get({ reason: 'too_many_concurrent_requests' })
  await waitFor(() => rejected() > 0, { what: 'the CLI\'s request to be refused', timeoutMs: 120_000 /* a CLI process starting on a loaded machine */ })
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
  await waitFor(() => hub.clientCount > 0, { what: 'the tail to connect', timeoutMs: 120_000 })
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

t.test('options: a number that is none is refused; an unknown option is a usage error', async (t) => {
  const org = await s.api('POST', '/api/orgs', { body: { name: 'cli-args' } })
  const env = { SLUICE_TOKEN: org.body.token.token as string }
  const retention = await run(['stream', 'create', 'x2', '--retention-days', 'abc'], env)
  t.equal(retention.code, 1)
  t.match(retention.stderr, /^sluice: usage: --retention-days must be a whole number/)
  t.equal((await run(['stream', 'list'], env)).stdout.includes('x2'), false, 'no stream was made')
  t.equal((await run(['stream', 'create', 'x2', '--retention-days', '7'], env)).code, 0)
  const ttl = await run(['token', 'create', 'x2', '--ttl', '1h'], env)
  t.equal(ttl.code, 1)
  t.match(ttl.stderr, /^sluice: usage: --ttl must be a whole number/)
  for (const args of [['tail', 'x2', '--bogus'], ['stream', 'list', '--json'], ['send', 'x2', 'f', '--nope']]) {
    const r = await run(args, env)
    t.equal(r.code, 1, args.join(' '))
    t.match(r.stderr, /^sluice: usage: Unknown option '--/, `${args.join(' ')}: a usage error, not a stack trace`)
  }
  const missing = await run(['send', 'x2', '/nonexistent/file.ndjson', '--token', 'sli_x'], env)
  t.equal(missing.code, 1)
  t.match(missing.stderr, /^sluice: ENOENT: /)
  t.notMatch(missing.stderr, /\n\s+at /, 'no stack trace')
  const down = await run(['tail', 'x2'], { ...env, SLUICE_URL: 'http://127.0.0.1:9' })
  t.equal(down.code, 1)
  t.match(down.stderr, /^sluice: unreachable: cannot reach Sluice/)
  const keep = await run(['stream', 'delete', 'x2'], env)
  t.equal(keep.code, 1, 'delete wants --yes')
  const gone = await run(['stream', 'delete', 'x2', '--yes'], env)
  t.equal(gone.code, 0, gone.stderr)
  t.equal((await run(['stream', 'list'], env)).stdout.includes('x2'), false, 'deleted')
})

t.test('send reads a gzip\'d file, and ends lines at LF only', async (t) => {
  const org = await s.api('POST', '/api/orgs', { body: { name: 'cli-files' } })
  const env = { SLUICE_TOKEN: org.body.token.token as string }
  t.equal((await run(['stream', 'create', 'files'], env)).code, 0)
  const token = (await run(['token', 'create', 'files'], env)).stdout.split('\n')[0]
  const dir = await mkdtemp(join(tmpdir(), 'sluice-cli-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const gz = join(dir, 'events.ndjson.gz')
  await writeFile(gz, gzipSync(Array.from({ length: 500 }, (_, i) => JSON.stringify({ path: `/gz/${i}` })).join('\n') + '\n'))
  const zipped = await run(['send', 'files', gz, '--token', token], env)
  t.equal(zipped.code, 0, zipped.stderr)
  t.match(zipped.stdout, /ingested 500, failed 0/)
  const crlf = join(dir, 'cr.ndjson')
  // A CR inside a line is JSON whitespace there; CRLF ends a line like LF.
  await writeFile(crlf, '{"path":"/cr",\r"x":1}\r\n\r\nnot json\n{"path":"/after"}\n')
  const r = await run(['send', 'files', crlf, '--token', token], env)
  t.equal(r.code, 2)
  t.match(r.stdout, /^line 3: invalid_json: /m, 'the failed line numbered as in the file')
  t.match(r.stdout, /ingested 2, failed 1/)
})

t.test('send says why it retries while Sluice cannot be reached', async (t) => {
  const child = spawn(process.execPath, [cli, 'send', 'x', '-'], { env: { ...process.env, SLUICE_URL: 'http://127.0.0.1:9', SLUICE_INGEST_TOKEN: 'sli_x' } })
  t.teardown(() => child.kill())
  let stderr = ''
  const said = new Promise<void>((resolve) => child.stderr.on('data', (d) => { stderr += d; if (stderr.includes('retrying')) resolve() }))
  child.stdin.end('{"path":"/x"}\n')
  await said
  t.match(stderr, /^lines 1-1: cannot reach Sluice at http:\/\/127\.0\.0\.1:9: ECONNREFUSED; retrying in 1 s \(attempt 2 of 20\)/m)
})

t.test('tail ends with exit 3 when its stream is deleted', async (t) => {
  const org = await s.api('POST', '/api/orgs', { body: { name: 'cli-tail-end' } })
  const pat = org.body.token.token as string
  t.equal((await s.api('POST', '/api/streams', { token: pat, body: { name: 'short-lived' } })).status, 201)
  const before = s.app.tailHub.clientCount
  const tail = new Promise<{ code: number | null, stderr: string }>((resolve) => {
    const child = spawn(process.execPath, [cli, 'tail', 'short-lived'], { env: { ...process.env, SLUICE_URL: s.url, SLUICE_TOKEN: pat } })
    let stderr = ''
    child.stderr.on('data', (d) => { stderr += d })
    child.on('close', (code) => resolve({ code, stderr }))
  })
  await waitFor(() => s.app.tailHub.clientCount > before, { what: 'the tail to connect', timeoutMs: 120_000 })
  t.equal((await s.api('DELETE', '/api/streams/short-lived', { token: pat })).status, 204)
  const ended = await tail
  t.equal(ended.code, 3)
  t.match(ended.stderr, /sluice: stream_deleted: short-lived was deleted/)
})
