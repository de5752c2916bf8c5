// Config: defaults, layering (file, env, overrides), and validation naming value and source.
import t from 'tap'
import { writeFile, mkdtemp, rm, readFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { spawnSync } from 'node:child_process'
import { join } from 'node:path'
import { ConfigError, loadConfig } from '../lib/config.ts'
import { generateToken } from '../lib/auth/token-format.ts'
import { defaultValues, renderSettingsTable, settings } from '../lib/config-schema.ts'

function problemsOf (fn: () => unknown): string[] {
  try {
    fn()
  } catch (err) {
    if (err instanceof ConfigError) return err.problems
    throw err
  }
  throw new Error('expected a ConfigError')
}

/** Dotted paths of an object's leaves; limits.orgs (a free-form map) is one leaf. */
function leafPaths (obj: Record<string, unknown>, prefix = ''): string[] {
  return Object.entries(obj).flatMap(([key, value]) => {
    const path = prefix + key
    return typeof value === 'object' && value !== null && path !== 'limits.orgs'
      ? leafPaths(value as Record<string, unknown>, path + '.')
      : [path]
  })
}

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

t.test('the service refuses to start on a misspelt key in its config file', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'sluice-cfg-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const file = join(dir, 'sluice.json')
  await writeFile(file, JSON.stringify({ tail: { maxPerOrgs: 3 } }))
  const r = spawnSync(process.execPath, ['lib/main.ts'], { env: { ...process.env, SLUICE_CONFIG: file }, encoding: 'utf8' })
  t.equal(r.status, 78)
  t.ok(r.stderr.includes(`unknown setting "tail.maxPerOrgs" in ${file} (did you mean "tail.maxPerOrg"?)`))
})

t.test('an unknown key in a config file is refused with its name and source', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'sluice-cfg-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const file = join(dir, 'typo.json')
  await writeFile(file, JSON.stringify({ limits: { maxUncomittedBytes: 1024 }, servr: { port: 1 }, ingest: { workers: 'many' } }))
  const problems = problemsOf(() => loadConfig({ env: { SLUICE_CONFIG: file } }))
  t.ok(problems.includes(`unknown setting "limits.maxUncomittedBytes" in ${file} (did you mean "limits.maxUncommittedBytes"?)`), 'misspelt nested key, with the one it meant')
  t.ok(problems.some((p) => p.startsWith(`unknown setting "servr" in ${file}`)), 'misspelt group')
  t.ok(problems.some((p) => /^ingest\.workers must be a positive integer/.test(p)), 'collected with the other problems')
  t.equal(problems.length, 3)
  // Without the check the default would silently stay in force.
  t.equal(loadConfig({ env: {} }).limits.maxUncommittedBytes, 64 * 1024 * 1024)
})

t.test('an unknown key in overrides is refused too', async (t) => {
  t.same(problemsOf(() => loadConfig({ env: {}, overrides: { writer: { flushIntervalMS: 5 } } })),
    ['unknown setting "writer.flushIntervalMS" in overrides (did you mean "writer.flushIntervalMs"?)'])
  t.same(problemsOf(() => loadConfig({ env: {}, overrides: { telemetry: true } })), ['unknown setting "telemetry" in overrides'])
  t.same(problemsOf(() => loadConfig({ env: {}, overrides: { server: 8080 } })), ['server must be an object of settings (got 8080 from overrides)'])
  t.same(problemsOf(() => loadConfig({ env: {}, overrides: { server: { port: { value: 1 } } } })), ['server.port must be a port number 0-65535 (got {"value":1} from overrides)'])
  const orgProblems = problemsOf(() => loadConfig({ env: {}, overrides: { limits: { orgs: { acme: { requestPerMinute: 5, concurrentRequests: 0 } } } } }))
  t.match(orgProblems[0], /^unknown setting "limits\.orgs\.acme\.requestPerMinute" in overrides: .*did you mean "requestsPerMinute"/)
  t.match(orgProblems[1], /^limits\.orgs\.acme\.concurrentRequests must be a positive integer \(got 0 from overrides\)/)
  t.equal(orgProblems.length, 2)
  const ok = loadConfig({ env: {}, overrides: { limits: { orgs: { acme: { concurrentRequests: 2 } } } } })
  t.same(ok.limits.orgs, { acme: { concurrentRequests: 2 } }, 'any org name is allowed')
})

t.test('secrets are not repeated in problems', async (t) => {
  const problems = problemsOf(() => loadConfig({ env: { SLUICE_BOOTSTRAP_TOKEN: 'slp_secretvalue' }, overrides: { clickhouse: { password: 12345 } } }))
  t.equal(problems.length, 2)
  t.notOk(problems.join('\n').includes('secretvalue'))
  t.notOk(problems.join('\n').includes('12345'))
})

t.test('CLICKHOUSE_URL=chdb:<directory> names the embedded engine, its directory resolved; never in cluster mode', async (t) => {
  t.equal(loadConfig({ env: { CLICKHOUSE_URL: 'chdb:data/ch' }, cwd: '/srv' }).clickhouse.url, 'chdb:/srv/data/ch', 'relative to the working directory')
  t.equal(loadConfig({ env: { CLICKHOUSE_URL: 'chdb:/var/lib/ch' }, cwd: '/srv' }).clickhouse.url, 'chdb:/var/lib/ch')
  t.match(problemsOf(() => loadConfig({ env: { CLICKHOUSE_URL: 'chdb:' } })), [/clickhouse\.url must name a data directory after chdb:/])
  // Taken as written, these would start an empty database somewhere else (explore34b G6).
  t.match(problemsOf(() => loadConfig({ env: { CLICKHOUSE_URL: 'chdb:/var/lib/ch ' } })), [/clickhouse\.url has a blank at the start or end/])
  t.match(problemsOf(() => loadConfig({ env: { CLICKHOUSE_URL: 'chdb: ' } })), [/clickhouse\.url has a blank/])
  t.match(problemsOf(() => loadConfig({ env: { CLICKHOUSE_URL: 'chdb:~/ch' } })), [/clickhouse\.url starts the directory after chdb: with ~/])
  t.match(problemsOf(() => loadConfig({ env: { CLICKHOUSE_URL: 'ftp://x' } })), [/clickhouse\.url must be an http\(s\) URL/])
  t.match(problemsOf(() => loadConfig({ env: { CLICKHOUSE_URL: 'chdb:./ch', CLICKHOUSE_CLUSTER: 'logs' } })), [/cluster mode needs ClickHouse servers/])
})

t.test('the README configuration table is the schema', async (t) => {
  const readme = await readFile(new URL('../README.md', import.meta.url), 'utf8')
  const start = readme.indexOf('| Setting (JSON path) |')
  t.ok(start >= 0, 'README has the table')
  const end = readme.indexOf('\n\n', start)
  const expected = renderSettingsTable()
  // Row by row first, so that a failure names the setting.
  const readmeRows = readme.slice(start, end).split('\n')
  const schemaRows = expected.split('\n')
  for (let i = 0; i < Math.max(readmeRows.length, schemaRows.length); i++) {
    t.equal(readmeRows[i], schemaRows[i], `README row ${i + 1} (${settings[i - 2]?.path ?? 'header'})`)
  }
  t.equal(readme.slice(start, end), expected, 'paste renderSettingsTable() from lib/config-schema.ts into README.md')
})

t.test('config/default.json holds the schema defaults and nothing else', async (t) => {
  const file = JSON.parse(await readFile(new URL('../config/default.json', import.meta.url), 'utf8'))
  t.same(file, defaultValues())
  t.strictSame(leafPaths(file).sort(), settings.map((s) => s.path).sort())
})

t.test('the schema and the loaded config name the same settings, with values of their type', async (t) => {
  const c = loadConfig({ env: {}, cwd: '/srv' }) as unknown as Record<string, unknown>
  t.strictSame(leafPaths(c).sort(), settings.map((s) => s.path).sort())
  for (const s of settings) {
    const value = s.path.split('.').reduce<unknown>((o, k) => (o as Record<string, unknown>)[k], c)
    const numeric = s.type === 'port' || s.type === 'positiveInt' || s.type === 'nonNegativeInt'
    if (numeric) {
      t.equal(typeof value, 'number', s.path)
      t.ok(s.unit !== undefined || s.type === 'port', `${s.path} has a unit`)
    }
    if (s.env) t.match(s.env, /^(SLUICE|CLICKHOUSE)_[A-Z_]+$/, `${s.path} env name`)
    if (s.path.endsWith('Ms')) t.equal(s.unit, 'ms', `${s.path} is in ms`)
    if (s.path.endsWith('Bytes')) t.equal(s.unit, 'bytes', `${s.path} is in bytes`)
  }
  t.equal(new Set(settings.map((s) => s.env).filter(Boolean)).size, settings.filter((s) => s.env).length, 'no env variable set twice')
})

t.test('every setting can be set from its environment variable', async (t) => {
  const values: Record<string, string> = {
    port: '1234', positiveInt: '7', nonNegativeInt: '0', string: 'x', nullableString: '/bin/x',
    httpUrl: 'http://ch:8123', clickhouseUrl: 'http://ch:8123', identifier: 'logs', nullableIdentifier: 'logs', httpUrlList: 'http://ch:8123,http://ch2:8123', slpToken: generateToken('pat'), enum: 'debug',
  }
  // An enum takes one of its own values (the last: not the default).
  const valueOf = (s: typeof settings[number]): string => s.type === 'enum' ? String(s.values?.at(-1)) : values[s.type]
  const env: Record<string, string> = {}
  for (const s of settings) if (s.env) env[s.env] = valueOf(s)
  env.SLUICE_MAX_LINE_BYTES = '1' // maxDecodedBytes (7) must be at least maxLineBytes
  const c = loadConfig({ env, cwd: '/srv' }) as unknown as Record<string, unknown>
  for (const s of settings) {
    if (!s.env) continue
    const value = s.path.split('.').reduce<unknown>((o, k) => (o as Record<string, unknown>)[k], c)
    const expected = s.path === 'dataDir' ? '/srv/x' : s.env === 'SLUICE_MAX_LINE_BYTES' ? 1 : /Int|port/.test(s.type) ? Number(values[s.type]) : valueOf(s)
    t.equal(value, expected, `${s.env} sets ${s.path}`)
  }
})

t.test('limits.maxUncommittedBytes below ingest.maxRawBytes is refused: such a body would be 429 forever', async (t) => {
  const problems = problemsOf(() => loadConfig({ env: { SLUICE_MAX_UNCOMMITTED_BYTES: '1048576' } }))
  t.match(problems, [/^limits\.maxUncommittedBytes must be at least ingest\.maxRawBytes/])
  const both = loadConfig({ env: { SLUICE_MAX_UNCOMMITTED_BYTES: '1048576', SLUICE_MAX_RAW_BYTES: '1048576' } })
  t.equal(both.limits.maxUncommittedBytes, 1048576, 'equal is fine')
})
