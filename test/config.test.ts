// Config: defaults, layering (file, env, overrides), and validation naming value and source.
import t from 'tap'
import { writeFile, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { spawnSync } from 'node:child_process'
import { join } from 'node:path'
import { ConfigError, loadConfig } from '../lib/config.ts'

t.test('defaults come from config/default.json', async (t) => {
  const c = loadConfig({ env: {}, cwd: '/srv' })
  t.equal(c.server.port, 8080)
  t.equal(c.server.host, '127.0.0.1')
  t.equal(c.clickhouse.url, null)
  t.equal(c.clickhouse.database, 'sluice')
  t.equal(c.dataDir, '/srv/data')
  t.equal(c.ingest.maxRawBytes, 16 * 1024 * 1024)
  t.equal(c.ingest.maxDecodedBytes, 64 * 1024 * 1024)
  t.equal(c.ingest.maxLineBytes, 256 * 1024)
  t.equal(c.limits.requestsPerMinute, 3000)
  t.equal(c.limits.concurrentRequests, 32)
  t.equal(c.limits.maxUncommittedBytes, 64 * 1024 * 1024)
  t.equal(c.metadata.refreshIntervalMs, 5000)
  t.equal(c.tokens.defaultIngestTtlS, 180 * 86400)
  t.ok(Object.isFrozen(c) && Object.isFrozen(c.server), 'frozen')
})

t.test('file, then environment, then overrides', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'sluice-cfg-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const file = join(dir, 'sluice.json')
  await writeFile(file, JSON.stringify({ server: { port: 9000, host: '0.0.0.0' }, limits: { orgs: { big: { requestsPerMinute: 100000 } } } }))
  const c = loadConfig({ env: { SLUICE_CONFIG: file, SLUICE_PORT: '9100', CLICKHOUSE_URL: 'http://ch:8123', CLICKHOUSE_DATABASE: 'logs' } })
  t.equal(c.server.port, 9100, 'env beats file')
  t.equal(c.server.host, '0.0.0.0', 'file beats defaults')
  t.equal(c.clickhouse.url, 'http://ch:8123')
  t.equal(c.clickhouse.database, 'logs')
  t.same(c.limits.orgs, { big: { requestsPerMinute: 100000 } })
  const o = loadConfig({ env: { SLUICE_PORT: '9100' }, overrides: { server: { port: 0 } } })
  t.equal(o.server.port, 0)
})

t.test('every problem is named with its source, all at once', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'sluice-cfg-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const file = join(dir, 'bad.json')
  await writeFile(file, JSON.stringify({ ingest: { maxDecodedBytes: 'lots' }, limits: { orgs: { x: { burst: 1 } } } }))
  let err: ConfigError | undefined
  try {
    loadConfig({ env: { SLUICE_CONFIG: file, SLUICE_PORT: 'eighty', SLUICE_MAX_RAW_BYTES: '-1', CLICKHOUSE_URL: 'ftp://x', SLUICE_LOG_LEVEL: 'loud', SLUICE_BOOTSTRAP_TOKEN: 'abc' } })
  } catch (e) {
    err = e as ConfigError
  }
  t.ok(err instanceof ConfigError)
  const problems = err!.problems.join('\n')
  t.match(problems, /server\.port .*"eighty".*SLUICE_PORT/)
  t.match(problems, /ingest\.maxRawBytes .*"-1".*SLUICE_MAX_RAW_BYTES/)
  t.match(problems, new RegExp(`ingest\\.maxDecodedBytes .*"lots".*${file.replace(/[/.]/g, '\\$&')}`))
  t.match(problems, /clickhouse\.url .*ftp:\/\/x.*CLICKHOUSE_URL/)
  t.match(problems, /log\.level .*"loud".*SLUICE_LOG_LEVEL/)
  t.match(problems, /bootstrapToken .*SLUICE_BOOTSTRAP_TOKEN/)
  t.match(problems, /limits\.orgs\.x\.burst/)
  t.equal(err!.problems.length, 7)
})

t.test('an unreadable or invalid config file is a problem too', async (t) => {
  t.throws(() => loadConfig({ env: { SLUICE_CONFIG: '/nonexistent/sluice.json' } }), { name: 'ConfigError', message: /cannot read config file/ })
  const dir = await mkdtemp(join(tmpdir(), 'sluice-cfg-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  await writeFile(join(dir, 'x.json'), '{ not json')
  t.throws(() => loadConfig({ env: { SLUICE_CONFIG: join(dir, 'x.json') } }), { name: 'ConfigError', message: /not valid JSON/ })
})

t.test('the service refuses to start on a bad value', async (t) => {
  const r = spawnSync(process.execPath, ['lib/main.ts'], { env: { ...process.env, SLUICE_PORT: 'x' }, encoding: 'utf8' })
  t.equal(r.status, 78)
  t.match(r.stderr, /server\.port must be a port number.*SLUICE_PORT/)
  t.match(r.stderr, /did not start/)
})
