// startServer(t, overrides): a real Sluice on port 0 against a real ClickHouse database made for
// this test file (dropped afterwards), with the bootstrap admin token at hand, and small HTTP
// helpers built on undici.
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Test } from 'tap'
import { request } from 'undici'
import { loadConfig } from '../../lib/config.ts'
import type { Config } from '../../lib/config.ts'
import { createLogger } from '../../lib/logger.ts'
import { createApp } from '../../lib/app.ts'
import type { App } from '../../lib/app.ts'
import { clickhouseUrl, createTestDatabase, onChdb } from './clickhouse.ts'

export interface TestServer {
  app: App
  config: Config
  url: string
  /** The bootstrap admin PAT (`*` and `orgs:admin`). */
  adminToken: string
  database: string
  dataDir: string
  /** JSON request; returns status, headers and the parsed body (null when empty). */
  api (method: string, path: string, options?: { token?: string | null, body?: unknown, headers?: Record<string, string> }): Promise<ApiResponse>
}

export interface ApiResponse {
  status: number
  headers: Record<string, string | string[] | undefined>
  body: any
}

type Overrides = Record<string, unknown>

export interface StartOptions {
  /** Reuse a database (a second node, a restart); default: a fresh one. */
  database?: string
  dataDir?: string
  /** Clock for token expiry. */
  now?: () => number
}

export async function startServer (t: Test, overrides: Overrides = {}, options: StartOptions = {}): Promise<TestServer> {
  const db = options.database ? null : await createTestDatabase(t)
  const database = options.database ?? db!.database
  const dataDir = options.dataDir ?? await mkdtemp(join(tmpdir(), 'sluice-test-'))
  if (!options.dataDir) t.teardown(() => rm(dataDir, { recursive: true, force: true }))
  const config = loadConfig({
    env: {},
    overrides: deepMerge({
      // chdb: every test process runs an engine of its own, and under a full parallel run an
      // insert in flight at shutdown once took over 5 s (test/http/server.test.ts, shutdown).
      server: { port: 0, shutdownTimeoutMs: onChdb ? 15_000 : 5000 },
      clickhouse: { url: clickhouseUrl(), database },
      dataDir,
      log: { level: process.env.SLUICE_TEST_LOG ?? 'silent' },
    }, overrides),
  })
  const app = await createApp(config, createLogger({ level: config.log.level, fd: 2 }), { now: options.now })
  t.teardown(() => app.close())
  const address = await app.listen()
  const url = `http://127.0.0.1:${address.port}`
  // A start on an existing database writes no token file: the bootstrap token is the admin's then.
  const adminToken = await readFile(join(dataDir, 'admin-token'), 'utf8').then((x) => x.trim(), () => config.bootstrapToken ?? '')

  return {
    app, config, url, adminToken, database, dataDir,
    async api (method, path, opts = {}) {
      const token = opts.token === undefined ? adminToken : opts.token
      const headers: Record<string, string> = { ...opts.headers }
      if (token !== null) headers.authorization = `Bearer ${token}`
      let body: string | undefined
      if (opts.body !== undefined) {
        body = typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body)
        headers['content-type'] ??= 'application/json'
      }
      const res = await request(url + path, { method: method as 'GET', headers, body })
      const text = await res.body.text()
      return { status: res.statusCode, headers: res.headers, body: text ? JSON.parse(text) : null }
    },
  }
}

function deepMerge (base: Overrides, over: Overrides): Overrides {
  const out: Overrides = { ...base }
  for (const [k, v] of Object.entries(over)) {
    const cur = out[k]
    out[k] = v && typeof v === 'object' && !Array.isArray(v) && cur && typeof cur === 'object' ? deepMerge(cur as Overrides, v as Overrides) : v
  }
  return out
}
