// Exact request-target routing (README "Request targets"): the path is matched as sent, never
// through URL parsing, so `//host/...`, backslashes, dot segments, empty segments and a trailing
// slash name no route (404), and only origin-form targets are accepted (anything else is 400).
import t from 'tap'
import { Router, parseRequestTarget } from '../../lib/http/router.ts'
import { startServer } from '../helpers/server.ts'
import { createIngestTarget, countEvents } from '../helpers/ingest.ts'
import { rawRequest } from '../helpers/raw-http.ts'

const noop = (): void => {}

t.test('parseRequestTarget: origin-form only, path kept as sent, query through URLSearchParams', async (t) => {
  const plain = parseRequestTarget('/api/streams')
  t.equal(plain?.path, '/api/streams')
  t.equal(plain?.url.search, '')
  const query = parseRequestTarget('/api/streams/web/events?q=status:5xx&limit=10&q2=a%20b?c')
  t.equal(query?.path, '/api/streams/web/events')
  t.equal(query?.url.searchParams.get('q'), 'status:5xx')
  t.equal(query?.url.searchParams.get('limit'), '10')
  t.equal(query?.url.searchParams.get('q2'), 'a b?c', 'only the first ? splits')
  t.equal(parseRequestTarget('//evil.example/api/ingest/web')?.path, '//evil.example/api/ingest/web', 'no authority is read')
  t.equal(parseRequestTarget('/api\\ingest\\web')?.path, '/api\\ingest\\web', 'a backslash stays a backslash')
  t.equal(parseRequestTarget('/api/../api/streams')?.path, '/api/../api/streams', 'dot segments are not resolved')
  for (const target of ['http://localhost/api/streams', 'https://x/', '*', 'localhost:80', '', 'api/streams', '\\api']) {
    t.equal(parseRequestTarget(target), null, `${JSON.stringify(target)} is not origin-form`)
  }
})

t.test('Router#add: a pattern ending in / matches only the path ending in / (the Elasticsearch root)', async (t) => {
  const router = new Router().add('GET', '/api/elastic/', noop).add('GET', '/api/elastic', noop).add('GET', '/api/streams', noop)
  t.match(router.find('GET', '/api/elastic/'), { kind: 'found', pattern: '/api/elastic/' })
  t.match(router.find('GET', '/api/elastic'), { kind: 'found', pattern: '/api/elastic' })
  t.match(router.find('GET', '/api/streams/'), { kind: 'not_found' }, 'other trailing slashes still name no route')
  t.match(router.find('GET', '/api/elastic//'), { kind: 'not_found' })
})

t.test('Router#find: the patterns with the most literal segments decide', async (t) => {
  const router = new Router()
    .add('GET', '/api/elastic/:index', noop)
    .add('PUT', '/api/elastic/:index', noop)
    .add('POST', '/api/elastic/_bulk', noop)
    .add('PUT', '/api/elastic/_bulk', noop)
  t.match(router.find('POST', '/api/elastic/_bulk'), { kind: 'found', pattern: '/api/elastic/_bulk' })
  t.match(router.find('PUT', '/api/elastic/_bulk'), { kind: 'found', pattern: '/api/elastic/_bulk' }, 'the literal pattern, registered after')
  t.same(router.find('GET', '/api/elastic/_bulk'), { kind: 'method_not_allowed', allowed: ['POST', 'PUT'] }, 'not the parameter\'s GET')
  t.match(router.find('GET', '/api/elastic/logs'), { kind: 'found', pattern: '/api/elastic/:index', params: { index: 'logs' } })
})

t.test('Router#find matches segments exactly', async (t) => {
  const router = new Router()
    .add('GET', '/', noop)
    .add('GET', '/api/streams', noop)
    .add('POST', '/api/streams', noop)
    .add('GET', '/api/streams/:stream/events', noop)
    .add('POST', '/api/ingest/:streamId', noop)
  t.match(router.find('GET', '/'), { kind: 'found', pattern: '/' })
  t.match(router.find('GET', '/api/streams'), { kind: 'found', pattern: '/api/streams' })
  t.match(router.find('HEAD', '/api/streams'), { kind: 'found' }, 'HEAD runs the GET route')
  t.same(router.find('DELETE', '/api/streams'), { kind: 'method_not_allowed', allowed: ['GET', 'HEAD', 'POST'] }, 'HEAD with GET, each method once')
  t.match(router.find('GET', '/api/streams/a%2Db/events'), { kind: 'found', params: { stream: 'a-b' } }, 'parameters are percent-decoded')
  t.match(router.find('POST', '/api/ingest/web'), { kind: 'found', params: { streamId: 'web' } })
  for (const path of [
    '//api/streams', '/api//streams', '/api/streams/', '//evil.example/api/ingest/web', '/api\\ingest\\web',
    '/api/ingest\\web/x', '/api/../api/streams', '/./api/streams', '/api/streams/./', '/api/%73treams',
    '/api/streams//events', '/api/streams/%E0%A4%A/events', '', 'api/streams', '//',
  ]) {
    t.match(router.find(path.startsWith('/api/ingest') || path.startsWith('//evil') ? 'POST' : 'GET', path), { kind: 'not_found' }, `${JSON.stringify(path)}: no route`)
  }
})

t.test('over HTTP: hostile targets are 404 (or 400) and store nothing; the query still reaches routes', async (t) => {
  const server = await startServer(t)
  const target = await createIngestTarget(server, 'web')
  const post = (path: string) => rawRequest(server.url, `POST ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${target.token}\r\n` +
    'Content-Type: application/x-ndjson\r\nContent-Length: 13\r\nConnection: close\r\n\r\n{"host":"a"}\n')

  for (const path of ['//evil.example/api/ingest/web', '/api\\ingest\\web', '/api/ingest\\web', '/api/../api/ingest/web',
    '/api//ingest/web', '/api/ingest/web/', '/./api/ingest/web', '//api/ingest/web']) {
    const res = await post(path)
    t.equal(res.status, 404, `${path}: 404`)
    t.equal(res.body?.error, 'not_found', `${path}: not_found`)
    t.ok(res.headers['x-request-id'], `${path}: X-Request-Id`)
  }
  for (const path of ['http://localhost/api/ingest/web', 'http://evil.example/api/ingest/web']) {
    const res = await post(path)
    t.equal(res.status, 400, `${path}: absolute-form is refused`)
    t.equal(res.body?.error, 'bad_request')
  }
  t.equal(await countEvents(target), 0, 'none of them stored anything')

  const ok = await post('/api/ingest/web')
  t.equal(ok.status, 200, 'the exact path still ingests')
  t.equal(await countEvents(target), 1)

  const badLimit = await server.api('GET', '/api/streams/web/events?limit=abc')
  t.equal(badLimit.status, 400)
  t.equal(badLimit.body.error, 'invalid_query', 'the query string reaches the route')
  const page = await server.api('GET', '/api/streams/web/events?limit=1&from=now-1h')
  t.equal(page.status, 200)
  t.equal(page.body.events.length, 1)
  // Raw: undici (like any URL-parsing client) would resolve the dots before sending.
  const dotted = await rawRequest(server.url, `GET /api/streams/../streams HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${server.adminToken}\r\nConnection: close\r\n\r\n`)
  t.equal(dotted.status, 404)
  t.equal(dotted.body.error, 'not_found')
})
