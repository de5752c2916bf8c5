// Orgs: creation by orgs:admin, and isolation: another org's streams and tokens are 404.
import t from 'tap'
import { startServer } from '../helpers/server.ts'
import type { TestServer } from '../helpers/server.ts'

let s: TestServer
t.before(async () => { s = await startServer(t) })

t.test('POST /api/orgs creates an org, its owner and a * PAT', async (t) => {
  const r = await s.api('POST', '/api/orgs', { body: { name: 'acme' } })
  t.equal(r.status, 201)
  t.match(r.body.org, { name: 'acme' })
  t.match(r.body.user, { name: 'admin', org_id: r.body.org.id })
  t.match(r.body.token, { abilities: ['*'] })
  t.match(r.body.token.token, /^slp_/)
  t.equal((await s.api('GET', '/api/streams', { token: r.body.token.token })).body.streams.length, 0, 'a new org starts empty')
  const dup = await s.api('POST', '/api/orgs', { body: { name: 'acme' } })
  t.equal(dup.status, 409)
  t.equal(dup.body.error, 'conflict')
  const bad = await s.api('POST', '/api/orgs', { body: { name: 'Acme Inc' } })
  t.equal(bad.status, 422)
  t.equal(bad.body.error, 'validation_failed')
})

t.test('a second org cannot see or touch the first org\'s streams and tokens', async (t) => {
  await s.api('POST', '/api/streams', { body: { name: 'secret' } })
  const tok = (await s.api('POST', '/api/streams/secret/ingest-token', { body: {} })).body
  const pat = (await s.api('POST', '/api/tokens', { body: { name: 'mine', abilities: ['streams:read'] } })).body
  const other = (await s.api('POST', '/api/orgs', { body: { name: 'rival' } })).body.token.token

  const notFound: Array<[string, string, unknown?]> = [
    ['GET', '/api/streams/secret'],
    ['PATCH', '/api/streams/secret', { description: 'pwned' }],
    ['DELETE', '/api/streams/secret'],
    ['POST', '/api/streams/secret/ingest-token', {}],
    ['GET', '/api/streams/secret/ingest-tokens'],
    ['DELETE', `/api/streams/secret/ingest-tokens/${tok.id}`],
    ['DELETE', `/api/tokens/${pat.id}`],
  ]
  for (const [method, path, body] of notFound) {
    const r = await s.api(method, path, { token: other, body })
    t.equal(r.status, 404, `${method} ${path}`)
    t.equal(r.body.error, 'not_found')
  }
  t.notOk((await s.api('GET', '/api/streams', { token: other })).body.streams.some((x: { name: string }) => x.name === 'secret'))
  t.notOk((await s.api('GET', '/api/tokens', { token: other })).body.tokens.some((x: { id: string }) => x.id === pat.id))

  // The rival org may use the same stream name for its own stream; the two stay apart.
  t.equal((await s.api('POST', '/api/streams', { token: other, body: { name: 'secret' } })).status, 201)
  const rivalTok = (await s.api('POST', '/api/streams/secret/ingest-token', { token: other, body: {} })).body
  t.equal((await s.api('POST', '/api/ingest/secret', { token: rivalTok.token, body: '{"path":"/x"}\n', headers: { 'content-type': 'application/x-ndjson' } })).status, 200)
  t.equal((await s.api('GET', '/api/streams/secret')).body.stats.events, 0, 'the first org\'s stream did not get the rival\'s event')
  t.equal((await s.api('GET', '/api/streams/secret', { token: other })).body.stats.events, 1)

  // Everything of the first org is intact.
  t.equal((await s.api('GET', '/api/streams/secret')).body.description, '')
  t.equal((await s.api('GET', '/api/streams/secret', { token: pat.token })).status, 200)
  t.equal((await s.api('POST', '/api/ingest/secret', { token: tok.token, body: '{}\n', headers: { 'content-type': 'application/x-ndjson' } })).status, 200)
})

t.test('an org owner\'s * PAT cannot create orgs', async (t) => {
  const owner = (await s.api('POST', '/api/orgs', { body: { name: 'third' } })).body.token.token
  const r = await s.api('POST', '/api/orgs', { token: owner, body: { name: 'fourth' } })
  t.equal(r.status, 403)
  t.equal(r.body.error, 'insufficient_ability')
})
