// Every row of docs/api.md section 4, through the real server.
import t from 'tap'
import type { Test } from 'tap'
import { startServer } from '../helpers/server.ts'
import type { TestServer } from '../helpers/server.ts'
import { generateToken } from '../../lib/auth/token-format.ts'

let clock = Date.now()
let s: TestServer
let ingest: { id: string, token: string }

t.before(async () => {
  s = await startServer(t, {}, { now: () => clock })
  await s.api('POST', '/api/streams', { body: { name: 'web' } })
  ingest = (await s.api('POST', '/api/streams/web/ingest-token', { body: {} })).body
})

async function expectError (t: Test, res: Promise<{ status: number, body: any, headers: any }>, status: number, code: string) {
  const r = await res
  t.equal(r.status, status, `status ${status}`)
  t.equal(r.body?.error, code, `code ${code}`)
  t.type(r.body?.request_id, 'string')
  t.equal(r.headers['x-request-id'], r.body?.request_id)
  return r
}

t.test('401 unauthorized: missing, wrong scheme, empty or non-token68 token', async (t) => {
  for (const header of [undefined, 'Basic abc', 'Bearer', 'Bearer ', 'Bearer a b', 'Bearer tok{en}', 'Token ' + s.adminToken]) {
    const headers: Record<string, string> = header === undefined ? {} : { authorization: header }
    const r = await expectError(t, s.api('GET', '/api/streams', { token: null, headers }), 401, 'unauthorized')
    t.equal(r.headers['www-authenticate'], 'Bearer')
  }
})

t.test('scheme is case-insensitive', async (t) => {
  const r = await s.api('GET', '/api/streams', { token: null, headers: { authorization: 'bEaReR ' + s.adminToken } })
  t.equal(r.status, 200)
})

t.test('Basic with the token as the password counts as Bearer (any user name)', async (t) => {
  const basic = (user: string, password: string) => ({ authorization: 'Basic ' + Buffer.from(`${user}:${password}`).toString('base64') })
  t.equal((await s.api('GET', '/api/streams', { token: null, headers: basic('anyone', s.adminToken) })).status, 200)
  t.equal((await s.api('GET', '/api/streams', { token: null, headers: basic('', s.adminToken) })).status, 200, 'empty user name')
  const r = await s.api('POST', '/api/ingest/web', {
    token: null, body: '{"path":"/"}\n', headers: { ...basic('fluentbit', ingest.token), 'content-type': 'application/x-ndjson' },
  })
  t.equal(r.status, 200, 'an ingest token as the password sends events')
  await expectError(t, s.api('GET', '/api/streams', { token: null, headers: basic('u', generateToken('pat')) }), 403, 'invalid_token')
  await expectError(t, s.api('GET', '/api/streams', { token: null, headers: basic('no-colon-here', '') }), 401, 'unauthorized')
  await expectError(t, s.api('GET', '/api/streams', { token: null, headers: { authorization: 'Basic ' + Buffer.from('only-a-user').toString('base64') } }), 401, 'unauthorized')
})

t.test('403 invalid_token: unknown, bad checksum, expired, revoked', async (t) => {
  await expectError(t, s.api('GET', '/api/streams', { token: generateToken('pat') }), 403, 'invalid_token')
  const bad = s.adminToken.slice(0, -1) + (s.adminToken.endsWith('A') ? 'B' : 'A')
  await expectError(t, s.api('GET', '/api/streams', { token: bad }), 403, 'invalid_token')
  await expectError(t, s.api('GET', '/api/streams', { token: 'not-a-sluice-token' }), 403, 'invalid_token')

  const short = (await s.api('POST', '/api/tokens', { body: { name: 'short', abilities: ['streams:read'], ttl: 60 } })).body
  t.equal((await s.api('GET', '/api/streams', { token: short.token })).status, 200)
  clock += 61_000
  await expectError(t, s.api('GET', '/api/streams', { token: short.token }), 403, 'invalid_token')
  clock -= 61_000

  const shortIngest = (await s.api('POST', '/api/streams/web/ingest-token', { body: { ttl: 60 } })).body
  const ok = await s.api('POST', '/api/ingest/web', { token: shortIngest.token, body: '{"path":"/"}\n', headers: { 'content-type': 'application/x-ndjson' } })
  t.not(ok.status, 403, 'a fresh ingest token is accepted')
  clock += 61_000
  await expectError(t, s.api('POST', '/api/ingest/web', { token: shortIngest.token, body: '{}\n', headers: { 'content-type': 'application/x-ndjson' } }), 403, 'invalid_token')
  clock -= 61_000

  const doomed = (await s.api('POST', '/api/tokens', { body: { name: 'doomed', abilities: ['streams:read'] } })).body
  t.equal((await s.api('DELETE', `/api/tokens/${doomed.id}`)).status, 204)
  await expectError(t, s.api('GET', '/api/streams', { token: doomed.token }), 403, 'invalid_token')
})

t.test('403 wrong_token_kind: PAT on ingest, ingest token elsewhere', async (t) => {
  await expectError(t, s.api('POST', '/api/ingest/web', { body: '{}\n', headers: { 'content-type': 'application/x-ndjson' } }), 403, 'wrong_token_kind')
  await expectError(t, s.api('GET', '/api/streams', { token: ingest.token }), 403, 'wrong_token_kind')
  await expectError(t, s.api('POST', '/api/streams', { token: ingest.token, body: { name: 'x' } }), 403, 'wrong_token_kind')
})

t.test('403 insufficient_ability for each route', async (t) => {
  const none = (await s.api('POST', '/api/tokens', { body: { name: 'reader', abilities: ['data:read'] } })).body
  const routes: Array<[string, string, unknown?]> = [
    ['POST', '/api/streams', { name: 'nope' }],
    ['GET', '/api/streams'],
    ['GET', '/api/streams/web'],
    ['PATCH', '/api/streams/web', { description: 'x' }],
    ['DELETE', '/api/streams/web'],
    ['POST', '/api/streams/web/ingest-token', {}],
    ['GET', '/api/streams/web/ingest-tokens'],
    ['DELETE', `/api/streams/web/ingest-tokens/${ingest.id}`],
    ['POST', '/api/tokens', { name: 'x', abilities: ['data:read'] }],
    ['GET', '/api/tokens'],
    ['POST', '/api/orgs', { name: 'other' }],
  ]
  for (const [method, path, body] of routes) {
    await expectError(t, s.api(method, path, { token: none.token, body }), 403, 'insufficient_ability')
  }
  t.equal((await s.api('GET', '/api/streams/web')).status, 200, 'nothing was changed')
})

t.test('* does not grant orgs:admin', async (t) => {
  const star = (await s.api('POST', '/api/tokens', { body: { name: 'star', abilities: ['*'] } })).body
  t.equal((await s.api('GET', '/api/streams', { token: star.token })).status, 200)
  await expectError(t, s.api('POST', '/api/orgs', { token: star.token, body: { name: 'nope' } }), 403, 'insufficient_ability')
})

t.test('403 forbidden_stream: ingest token for another stream', async (t) => {
  await s.api('POST', '/api/streams', { body: { name: 'api' } })
  await expectError(t, s.api('POST', '/api/ingest/api', { token: ingest.token, body: '{}\n', headers: { 'content-type': 'application/x-ndjson' } }), 403, 'forbidden_stream')
})

t.test('404 not_found: unknown stream or token id', async (t) => {
  await expectError(t, s.api('GET', '/api/streams/missing'), 404, 'not_found')
  await expectError(t, s.api('DELETE', '/api/streams/web/ingest-tokens/tok_missing'), 404, 'not_found')
  await expectError(t, s.api('DELETE', '/api/tokens/pat_missing'), 404, 'not_found')
})

t.test('unauthenticated routes', async (t) => {
  t.equal((await s.api('GET', '/healthz', { token: null })).status, 200)
  t.equal((await s.api('GET', '/readyz', { token: null })).status, 200)
})
