// The quick start, end to end: `node lib/main.ts` with no CLICKHOUSE_URL starts its own
// ClickHouse, prints the admin token and what to do next; the token works for the curl flow of
// the README; SIGTERM stops Sluice and its ClickHouse and exits 0.
import t from 'tap'
import { spawn } from 'node:child_process'
import type { ChildProcessWithoutNullStreams } from 'node:child_process'
import type { Test } from 'tap'
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { existsSync } from 'node:fs'
import { generateToken } from '../lib/auth/token-format.ts'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { request } from 'undici'
import { findClickHouseBinary } from '../lib/storage/managed-clickhouse.ts'
import { serverEnv, serverNodeFlags } from '../lib/node-flags.ts'
import { clickhouseUrl, onChdb } from './helpers/clickhouse.ts'
import { createServer } from 'node:net'
import type { AddressInfo } from 'node:net'

const main = new URL('../lib/main.ts', import.meta.url).pathname
const cli = new URL('../lib/cli/cli.ts', import.meta.url).pathname

/** `node lib/main.ts` with `env`, resolved once it printed its URL and what to do next. */
async function startMain (t: Test, env: NodeJS.ProcessEnv, cwd?: string): Promise<{ child: ChildProcessWithoutNullStreams, url: string, stderr: () => string }> {
  const child = spawn(process.execPath, [...serverNodeFlags, main], { env, cwd })
  t.teardown(() => { if (child.exitCode === null) child.kill('SIGKILL') })
  let stderr = ''
  child.stdout.resume()
  const url = await new Promise<string>((resolve, reject) => {
    child.stderr.on('data', (d) => {
      stderr += d
      const m = /Sluice is running at (http:\/\/\S+)/.exec(stderr)
      if (m && stderr.includes('Stop with Ctrl-C')) resolve(m[1])
    })
    child.once('exit', (code) => reject(new Error(`exited ${code}: ${stderr}`)))
  })
  return { child, url, stderr: () => stderr }
}

/** `node lib/main.ts` (or `args`: `sluice migrate`) with `env` that is expected not to start: its exit code and what it said. */
async function failedStart (env: NodeJS.ProcessEnv, args: string[] = [main]): Promise<{ code: number | null, stderr: string }> {
  const child = spawn(process.execPath, [...serverNodeFlags, ...args], { env })
  let stderr = ''
  child.stderr.on('data', (d) => { stderr += d })
  child.stdout.resume()
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
  return { code, stderr }
}

/** A JSON call of the API at `url` with `token`. */
function apiCaller (url: string, token: string) {
  return async (method: string, path: string, body?: unknown) => {
    const res = await request(url + path, {
      method: method as 'GET', body: body === undefined ? undefined : JSON.stringify(body),
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    })
    return { status: res.statusCode, body: await res.body.json().catch(() => null) as any }
  }
}

/** SIGTERM, and the exit code. */
async function stopMain (child: ChildProcessWithoutNullStreams): Promise<number | null> {
  child.kill('SIGTERM')
  return await new Promise<number | null>((resolve) => child.once('exit', resolve))
}

t.test('starts with a managed ClickHouse, serves the README flow, stops cleanly', { skip: onChdb ? 'the managed server: npm test' : findClickHouseBinary() ? false : 'no clickhouse-server here' }, async (t) => {
  const dataDir = await mkdtemp(join(tmpdir(), 'sluice-main-'))
  t.teardown(() => rm(dataDir, { recursive: true, force: true }))
  const env: NodeJS.ProcessEnv = { ...process.env, ...serverEnv, SLUICE_DATA_DIR: dataDir, SLUICE_PORT: '0', SLUICE_LOG_LEVEL: 'warn' }
  delete env.CLICKHOUSE_URL
  const { child, url, stderr } = await startMain(t, env)
  const token = (await readFile(join(dataDir, 'admin-token'), 'utf8')).trim()
  t.ok(stderr().includes(token), 'the admin token is printed')
  t.match(stderr(), /curl -s -X POST http:\/\/127\.0\.0\.1:\d+\/api\/streams/, 'with a curl example')
  t.ok(existsSync(join(dataDir, 'clickhouse')), 'ClickHouse data lives under the data dir')
  const pidFile = await readFile(join(dataDir, 'clickhouse', 'sluice-clickhouse.pid'), 'utf8')
  const chPid = Number(pidFile.trim().split(/\s+/)[0])
  t.ok(chPid > 0, `managed ClickHouse pid ${chPid}`)

  // A second start on the same data dir, while this one runs: one line and exit 73, no stack (explore32c F16).
  const second = await failedStart({ ...env, SLUICE_PORT: '0' })
  t.equal(second.code, 73, second.stderr)
  t.match(second.stderr, /^sluice: \S+ is in use by ClickHouse pid \d+ of the running Sluice pid \d+; .*\nSluice did not start\.\n$/)
  // `sluice migrate` beside it: the same exit code, one line (explore34b G2).
  const migrate = await failedStart({ ...env, SLUICE_PORT: '0' }, [cli, 'migrate'])
  t.equal(migrate.code, 73, migrate.stderr)
  t.match(migrate.stderr, /^sluice: \S+ is in use by ClickHouse pid \d+ of the running Sluice pid \d+; .*\n$/)

  const call = apiCaller(url, token)
  t.equal((await call('POST', '/api/streams', { name: 'web' })).status, 201)
  const issued = await call('POST', '/api/streams/web/ingest-token', {})
  t.equal(issued.status, 201)
  const listed = await call('GET', '/api/streams/web/ingest-tokens')
  t.equal(listed.body.tokens[0].id, issued.body.id)
  const ingested = await request(url + '/api/ingest/web', {
    method: 'POST', body: '{"path":"/"}\n', headers: { authorization: `Bearer ${issued.body.token}`, 'content-type': 'application/x-ndjson' },
  })
  t.equal(ingested.statusCode, 200)
  await ingested.body.dump()
  t.equal((await call('DELETE', `/api/streams/web/ingest-tokens/${issued.body.id}`)).status, 204)

  t.equal(await stopMain(child), 0, 'exit 0 on SIGTERM')
  let alive = true
  try { process.kill(chPid, 0) } catch { alive = false }
  t.notOk(alive, 'the managed ClickHouse is stopped')
})

t.test('a bootstrap token whose checksum does not hold: refused at start (exit 78), not installed as an admin token that never works', async (t) => {
  const good = generateToken('pat')
  const typo = good.slice(0, 10) + (good[10] === 'a' ? 'b' : 'a') + good.slice(11)
  const env: NodeJS.ProcessEnv = { ...process.env, ...serverEnv, SLUICE_PORT: '0', SLUICE_BOOTSTRAP_TOKEN: typo, SLUICE_DATA_DIR: join(tmpdir(), 'sluice-never-made') }
  const { code, stderr } = await failedStart(env)
  t.equal(code, 78)
  t.match(stderr, /bootstrapToken must be an slp_ token Sluice made.*checksum/)
  t.notMatch(stderr, typo.slice(4, 34), 'the secret is not repeated')
  t.notOk(existsSync(join(tmpdir(), 'sluice-never-made')), 'nothing started')
})

t.test('a port in use, or a host that is no address here: refused at start (exit 78) with the setting named', async (t) => {
  // On chdb a second process cannot open the test file's engine directory: a directory of its own.
  const clickhouse = onChdb ? `chdb:${await mkdtemp(join(tmpdir(), 'sluice-main-chdb-'))}` : clickhouseUrl()
  if (onChdb) t.teardown(() => rm(clickhouse.slice(5), { recursive: true, force: true }))
  const taken = createServer()
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve))
  t.teardown(() => { taken.close() })
  const port = (taken.address() as AddressInfo).port
  const dataDir = await mkdtemp(join(tmpdir(), 'sluice-main-'))
  t.teardown(() => rm(dataDir, { recursive: true, force: true }))
  const base: NodeJS.ProcessEnv = {
    ...process.env, ...serverEnv, SLUICE_DATA_DIR: dataDir, CLICKHOUSE_URL: clickhouse, CLICKHOUSE_DATABASE: `sluice_listen_${process.pid}`, SLUICE_LOG_LEVEL: 'warn',
  }
  const inUse = await failedStart({ ...base, SLUICE_HOST: '127.0.0.1', SLUICE_PORT: String(port) })
  t.equal(inUse.code, 78, inUse.stderr)
  t.match(inUse.stderr, new RegExp(`sluice: cannot listen on 127\\.0\\.0\\.1:${port} .*SLUICE_PORT.*: the port is in use\\nSluice did not start`))
  t.notMatch(inUse.stderr, /\n\s+at /, 'no stack trace')
  const notHere = await failedStart({ ...base, SLUICE_HOST: '192.0.2.1', SLUICE_PORT: '0' })
  t.equal(notHere.code, 78, notHere.stderr)
  t.match(notHere.stderr, /sluice: cannot listen on 192\.0\.2\.1:0 .*EADDRNOTAVAIL/)
})

t.test('no ClickHouse binary: a message naming both ways out', { skip: onChdb && 'the managed server: npm test' }, async (t) => {
  const dataDir = await mkdtemp(join(tmpdir(), 'sluice-main-'))
  t.teardown(() => rm(dataDir, { recursive: true, force: true }))
  const env: NodeJS.ProcessEnv = { ...process.env, ...serverEnv, SLUICE_DATA_DIR: dataDir, SLUICE_PORT: '0', CLICKHOUSE_BINARY: '/nonexistent/clickhouse-server' }
  delete env.CLICKHOUSE_URL
  const { code, stderr } = await failedStart(env)
  t.equal(code, 69)
  t.match(stderr, /apt-get install clickhouse-server/)
  t.match(stderr, /CLICKHOUSE_URL/)
})

t.test('the embedded engine\'s directory a file: a message naming it, exit 73, no stack trace', {
  skip: onChdb ? false : 'the embedded engine: npm run test:chdb',
}, async (t) => {
  const dataDir = await mkdtemp(join(tmpdir(), 'sluice-main-chdb-'))
  t.teardown(() => rm(dataDir, { recursive: true, force: true }))
  await writeFile(join(dataDir, 'not-a-dir'), 'x')
  const env: NodeJS.ProcessEnv = { ...process.env, ...serverEnv, SLUICE_DATA_DIR: dataDir, SLUICE_PORT: '0', CLICKHOUSE_URL: `chdb:${join(dataDir, 'not-a-dir')}` }
  const { code, stderr } = await failedStart(env)
  t.equal(code, 73)
  t.match(stderr, /^sluice: the embedded ClickHouse cannot open its directory .*not-a-dir: EEXIST/m)
  t.match(stderr, /Sluice did not start\./)
  t.notMatch(stderr, /\n\s+at /, 'no stack trace')
  // `sluice migrate` on it: the same exit code, one line (explore34b G2).
  const migrate = await failedStart(env, [cli, 'migrate'])
  t.equal(migrate.code, 73, migrate.stderr)
  t.match(migrate.stderr, /^sluice: the embedded ClickHouse cannot open its directory .*not-a-dir: EEXIST[^\n]*\n$/)
})

t.test('the embedded engine pointed at a managed server\'s directory: exit 73, naming where its database is (explore34b G6)', {
  skip: onChdb ? false : 'the embedded engine: npm run test:chdb',
}, async (t) => {
  const dataDir = await mkdtemp(join(tmpdir(), 'sluice-main-chdb-'))
  t.teardown(() => rm(dataDir, { recursive: true, force: true }))
  // What the managed server leaves in <dataDir>/clickhouse: its config.xml, its database in data/.
  const managed = join(dataDir, 'clickhouse')
  await mkdir(join(managed, 'data', 'metadata'), { recursive: true })
  await writeFile(join(managed, 'config.xml'), '<yandex/>')
  const env: NodeJS.ProcessEnv = { ...process.env, ...serverEnv, SLUICE_DATA_DIR: dataDir, SLUICE_PORT: '0', CLICKHOUSE_URL: `chdb:${managed}` }
  const { code, stderr } = await failedStart(env)
  t.equal(code, 73, stderr)
  t.match(stderr, /managed ClickHouse server's files .*CLICKHOUSE_URL=chdb:\S+\/clickhouse\/data opens it in place/)
  t.notOk(existsSync(join(managed, 'metadata')), 'no empty database started beside it')
})

t.test('a setting that is wrong: exit 78 from `sluice migrate` as from the server, one line (explore34b G2)', async (t) => {
  const env: NodeJS.ProcessEnv = { ...process.env, ...serverEnv, SLUICE_PORT: 'eighty' }
  for (const args of [[main], [cli, 'migrate']]) {
    const { code, stderr } = await failedStart(env, args)
    t.equal(code, 78, stderr)
    t.match(stderr, /^sluice: invalid configuration:\n.*SLUICE_PORT/)
    t.notMatch(stderr, /\n\s+at /, 'no stack trace')
  }
})

t.test('starts on the embedded engine (CLICKHOUSE_URL=chdb:<relative dir>), serves the README flow, stops cleanly', {
  skip: onChdb ? false : 'the embedded engine: npm run test:chdb',
}, async (t) => {
  const dataDir = await mkdtemp(join(tmpdir(), 'sluice-main-chdb-'))
  t.teardown(() => rm(dataDir, { recursive: true, force: true }))
  const env: NodeJS.ProcessEnv = { ...process.env, ...serverEnv, SLUICE_DATA_DIR: dataDir, SLUICE_PORT: '0', SLUICE_LOG_LEVEL: 'warn', CLICKHOUSE_URL: 'chdb:ch-data' }
  const started = performance.now()
  const { child, url } = await startMain(t, env, dataDir)
  t.comment(`ready in ${Math.round(performance.now() - started)} ms`)
  t.ok(existsSync(join(dataDir, 'ch-data')), 'the data directory is the working directory\'s')
  const call = apiCaller(url, (await readFile(join(dataDir, 'admin-token'), 'utf8')).trim())
  t.equal((await call('POST', '/api/streams', { name: 'web' })).status, 201)
  const issued = await call('POST', '/api/streams/web/ingest-token', {})
  const ingested = await request(url + '/api/ingest/web', {
    method: 'POST', body: '{"path":"/","status":200}\n{"path":"/b","log":"hello world"}\n', headers: { authorization: `Bearer ${issued.body.token}`, 'content-type': 'application/x-ndjson' },
  })
  t.equal(ingested.statusCode, 200)
  await ingested.body.dump()
  const events = await call('GET', '/api/streams/web/events?q=hello')
  t.equal(events.status, 200)
  t.same(events.body.events.map((e: { path: string }) => e.path), ['/b'], 'a 200 means the rows are queryable')
  t.equal(await stopMain(child), 0, 'exit 0 on SIGTERM')
})
