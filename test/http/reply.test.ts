// Log levels of error answers: expected 503s (shutting_down, not_ready) are no failures worth an
// error line each; storage and internal failures are.
import t from 'tap'
import { request } from 'undici'
import { createHttpServer } from '../../lib/http/server.ts'
import { Router } from '../../lib/http/router.ts'
import { createLogger } from '../../lib/logger.ts'
import { loadConfig } from '../../lib/config.ts'
import { SluiceError } from '../../lib/errors.ts'

t.test('503 shutting_down and not_ready log at debug; reads past their limits at warn; storage_unavailable and 500s at error', async (t) => {
  const lines: Array<{ level: string, msg: string, code?: string }> = []
  const log = createLogger({ level: 'debug', write: (line) => { lines.push(JSON.parse(line)) } })
  const router = new Router()
  for (const code of ['not_ready', 'shutting_down', 'storage_unavailable'] as const) {
    router.add('GET', `/${code}`, () => { throw new SluiceError(code, undefined, { retryAfter: 1 }) })
  }
  router.add('GET', '/bug', () => { throw new TypeError('a bug') })
  for (const code of ['query_timeout', 'query_too_expensive'] as const) router.add('GET', `/${code}`, () => { throw new SluiceError(code) })
  const http = createHttpServer({ config: loadConfig({ env: {} }).server, router, log })
  const { port } = await http.listen(0)
  t.teardown(() => http.close())
  for (const path of ['not_ready', 'shutting_down', 'storage_unavailable', 'bug']) {
    const res = await request(`http://127.0.0.1:${port}/${path}`)
    await res.body.dump()
    t.equal(res.statusCode, path === 'bug' ? 500 : 503)
  }
  for (const [path, status] of [['query_timeout', 504], ['query_too_expensive', 422]] as const) {
    const res = await request(`http://127.0.0.1:${port}/${path}`)
    await res.body.dump()
    t.equal(res.statusCode, status)
  }
  const levelOf = (code: string): string[] => lines.filter((l) => l.code === code).map((l) => l.level)
  t.same(levelOf('not_ready'), ['debug'])
  t.same(levelOf('shutting_down'), ['debug'])
  t.same(levelOf('storage_unavailable'), ['error'])
  t.same(levelOf('internal_error'), ['error'])
  // The limits working: one warn line each, no stack (explore34d J6).
  t.same(levelOf('query_timeout'), ['warn'])
  t.same(levelOf('query_too_expensive'), ['warn'])
  t.notOk(lines.some((l) => (l.code === 'query_timeout' || l.code === 'query_too_expensive') && JSON.stringify(l).includes('stack')), 'no stack')
})
