// The caller's PATs: create with a subset of the caller's abilities, list, revoke.
import t from 'tap'
import { startServer } from '../helpers/server.ts'
import type { TestServer } from '../helpers/server.ts'

let s: TestServer
t.before(async () => { s = await startServer(t) })

t.test('create: 201 with the secret once, abilities and expiry', async (t) => {
  const r = await s.api('POST', '/api/tokens', { body: { name: 'ci', abilities: ['streams:read', 'data:read'], ttl: 3600 } })
  t.equal(r.status, 201)
  t.match(r.body, { name: 'ci', abilities: ['streams:read', 'data:read'] })
  t.match(r.body.token, /^slp_[0-9A-Za-z]{36}$/)
  t.equal(Date.parse(r.body.expires_at) - Date.parse(r.body.created_at), 3_600_000)
  t.equal((await s.api('GET', '/api/streams', { token: r.body.token })).status, 200)
  const noTtl = await s.api('POST', '/api/tokens', { body: { name: 'forever', abilities: ['streams:read'] } })
  t.equal(noTtl.body.expires_at, null, 'no ttl: no expiry')
})

t.test('create: abilities beyond the caller\'s are 403', async (t) => {
  const reader = (await s.api('POST', '/api/tokens', { body: { name: 'mgr', abilities: ['tokens:manage', 'streams:read'] } })).body
  const r = await s.api('POST', '/api/tokens', { token: reader.token, body: { name: 'escalate', abilities: ['streams:delete'] } })
  t.equal(r.status, 403)
  t.equal(r.body.error, 'insufficient_ability')
  const star = await s.api('POST', '/api/tokens', { token: reader.token, body: { name: 'escalate', abilities: ['*'] } })
  t.equal(star.status, 403)
  const ok = await s.api('POST', '/api/tokens', { token: reader.token, body: { name: 'narrower', abilities: ['streams:read'] } })
  t.equal(ok.status, 201)
})

t.test('create: bad bodies are 422', async (t) => {
  for (const body of [{ abilities: ['streams:read'] }, { name: 'x' }, { name: 'x', abilities: [] }, { name: 'x', abilities: ['root'] },
    { name: 'x', abilities: 'streams:read' }, { name: 'x', abilities: ['streams:read'], ttl: 10 }]) {
    const r = await s.api('POST', '/api/tokens', { body })
    t.equal(r.status, 422, JSON.stringify(body))
    t.equal(r.body.error, 'validation_failed')
  }
})

t.test('list shows the caller\'s PATs without secrets', async (t) => {
  const made = (await s.api('POST', '/api/tokens', { body: { name: 'listme', abilities: ['data:read'] } })).body
  const r = await s.api('GET', '/api/tokens')
  t.equal(r.status, 200)
  const found = r.body.tokens.find((x: { id: string }) => x.id === made.id)
  t.match(found, { name: 'listme', abilities: ['data:read'], status: 'active', revoked_at: null })
  t.notOk(JSON.stringify(r.body).includes(made.token))
  t.ok(r.body.tokens.some((x: { abilities: string[] }) => x.abilities.includes('orgs:admin')), 'the admin PAT is listed too')
})

t.test('revoke: 204, idempotent, then 403', async (t) => {
  const made = (await s.api('POST', '/api/tokens', { body: { name: 'bye', abilities: ['streams:read'] } })).body
  t.equal((await s.api('DELETE', `/api/tokens/${made.id}`)).status, 204)
  t.equal((await s.api('DELETE', `/api/tokens/${made.id}`)).status, 204)
  const r = await s.api('GET', '/api/streams', { token: made.token })
  t.equal(r.status, 403)
  t.equal(r.body.error, 'invalid_token')
})

t.test('revoke: a PAT cannot revoke one holding abilities it lacks (403), only one within its own', async (t) => {
  const strong = (await s.api('POST', '/api/tokens', { body: { name: 'strong', abilities: ['*', 'orgs:admin'] } })).body
  const star = (await s.api('POST', '/api/tokens', { body: { name: 'star', abilities: ['*'] } })).body
  const weak = (await s.api('POST', '/api/tokens', { body: { name: 'weak', abilities: ['tokens:manage'] } })).body
  const peer = (await s.api('POST', '/api/tokens', { body: { name: 'peer', abilities: ['tokens:manage'] } })).body
  for (const [caller, target] of [[weak, strong], [weak, star], [star, strong]]) {
    const r = await s.api('DELETE', `/api/tokens/${target.id}`, { token: caller.token })
    t.equal(r.status, 403, `${caller.name} revoking ${target.name}`)
    t.equal(r.body.error, 'insufficient_ability')
  }
  t.equal((await s.api('GET', '/api/streams', { token: strong.token })).status, 200, 'the stronger token still works')
  t.equal((await s.api('DELETE', `/api/tokens/${peer.id}`, { token: weak.token })).status, 204, 'an equal token may be revoked')
  t.equal((await s.api('DELETE', `/api/tokens/${weak.id}`, { token: star.token })).status, 204, '* covers tokens:manage')
  t.equal((await s.api('DELETE', `/api/tokens/${star.id}`, { token: strong.token })).status, 204)
  t.equal((await s.api('DELETE', `/api/tokens/${strong.id}`, { token: strong.token })).status, 204, 'a token may revoke itself')
  t.equal((await s.api('GET', '/api/streams', { token: strong.token })).body.error, 'invalid_token')
})
