// Ingest tokens: issue (ttl rules), list without secrets, revoke (idempotent), expiry.
import t from 'tap'
import { startServer } from '../helpers/server.ts'
import type { TestServer } from '../helpers/server.ts'
import { waitFor } from '../helpers/wait-for.ts'

let clock = Date.now()
let s: TestServer
const ndjson = { 'content-type': 'application/x-ndjson' }

t.before(async () => {
  s = await startServer(t, {}, { now: () => clock })
  await s.api('POST', '/api/streams', { body: { name: 'app' } })
})

t.test('issue: 201 with the secret once, default ttl of 180 days', async (t) => {
  const r = await s.api('POST', '/api/streams/app/ingest-token', { body: { name: 'vector' } })
  t.equal(r.status, 201)
  t.match(r.body, { stream: 'app', name: 'vector' })
  t.match(r.body.token, /^sli_[0-9A-Za-z]{36}$/)
  t.match(r.body.id, /^tok_/)
  const ttlMs = Date.parse(r.body.expires_at) - Date.parse(r.body.created_at)
  t.equal(ttlMs, 15_552_000 * 1000)
  t.equal(Date.parse(r.body.created_at), clock, 'stamped by the server clock')
  const noBody = await s.api('POST', '/api/streams/app/ingest-token')
  t.equal(noBody.status, 201, 'a body is optional')
})

t.test('issue: ttl bounds are 60..315360000 seconds', async (t) => {
  for (const ttl of [59, 315_360_001, 1.5, '60', -5, 0]) {
    const r = await s.api('POST', '/api/streams/app/ingest-token', { body: { ttl } })
    t.equal(r.status, 422, `ttl ${JSON.stringify(ttl)}`)
    t.equal(r.body.error, 'validation_failed')
  }
  for (const ttl of [60, 315_360_000]) {
    const r = await s.api('POST', '/api/streams/app/ingest-token', { body: { ttl } })
    t.equal(r.status, 201, `ttl ${ttl}`)
    t.equal(Date.parse(r.body.expires_at) - Date.parse(r.body.created_at), ttl * 1000)
  }
  t.equal((await s.api('POST', '/api/streams/missing/ingest-token', { body: {} })).status, 404)
})

t.test('list: no secrets, display form, status', async (t) => {
  const issued = (await s.api('POST', '/api/streams/app/ingest-token', { body: { name: 'listed' } })).body
  const r = await s.api('GET', '/api/streams/app/ingest-tokens')
  t.equal(r.status, 200)
  const found = r.body.tokens.find((x: { id: string }) => x.id === issued.id)
  t.ok(found)
  t.equal(found.display, issued.token.slice(0, 8) + '…' + issued.token.slice(-4))
  t.equal(found.status, 'active')
  t.equal(found.revoked_at, null)
  t.notOk(JSON.stringify(r.body).includes(issued.token), 'the secret is never listed')
  t.notOk('token' in found)
  t.equal((await s.api('GET', '/api/streams/missing/ingest-tokens')).status, 404)
})

t.test('revoke: 204, idempotent, and the token then gets 403', async (t) => {
  const issued = (await s.api('POST', '/api/streams/app/ingest-token', { body: {} })).body
  const ok = await s.api('POST', '/api/ingest/app', { token: issued.token, body: '{"path":"/"}\n', headers: ndjson })
  t.equal(ok.status, 200)
  t.equal((await s.api('DELETE', `/api/streams/app/ingest-tokens/${issued.id}`)).status, 204)
  t.equal((await s.api('DELETE', `/api/streams/app/ingest-tokens/${issued.id}`)).status, 204, 'again: still 204')
  const after = await s.api('POST', '/api/ingest/app', { token: issued.token, body: '{"path":"/"}\n', headers: ndjson })
  t.equal(after.status, 403)
  t.equal(after.body.error, 'invalid_token')
  const listed = (await s.api('GET', '/api/streams/app/ingest-tokens')).body.tokens.find((x: { id: string }) => x.id === issued.id)
  t.equal(listed.status, 'revoked')
  t.type(listed.revoked_at, 'string')
  t.type(listed.last_used_at, 'string', 'the use before revocation was recorded')
})

t.test('revoke: a token of another stream is 404', async (t) => {
  await s.api('POST', '/api/streams', { body: { name: 'other' } })
  const issued = (await s.api('POST', '/api/streams/other/ingest-token', { body: {} })).body
  const r = await s.api('DELETE', `/api/streams/app/ingest-tokens/${issued.id}`)
  t.equal(r.status, 404)
  t.equal(r.body.error, 'not_found')
})

t.test('a stream created again under a deleted one\'s name lists none of its tokens, nor revokes them', async (t) => {
  await s.api('POST', '/api/streams', { body: { name: 'again' } })
  const old = (await s.api('POST', '/api/streams/again/ingest-token', { body: {} })).body
  clock += 1_000
  t.equal((await s.api('DELETE', '/api/streams/again')).status, 204)
  clock += 1_000
  t.equal((await s.api('POST', '/api/streams', { body: { name: 'again' } })).status, 201)
  const listed = await s.api('GET', '/api/streams/again/ingest-tokens')
  t.equal(listed.status, 200)
  t.same(listed.body.tokens, [], 'the deleted stream\'s token is not the new stream\'s')
  const revoke = await s.api('DELETE', `/api/streams/again/ingest-tokens/${old.id}`)
  t.equal(revoke.status, 404)
  t.equal(revoke.body.error, 'not_found')
  const fresh = (await s.api('POST', '/api/streams/again/ingest-token', { body: {} })).body
  const after = await s.api('GET', '/api/streams/again/ingest-tokens')
  t.same(after.body.tokens.map((x: { id: string }) => x.id), [fresh.id])
  const sent = await s.api('POST', '/api/ingest/again', { token: old.token, body: '{"msg":"x"}\n', headers: ndjson })
  t.equal(sent.status, 403, 'the old token still does not ingest into the new stream')
})

t.test('expiry: a token stops working once its ttl has passed', async (t) => {
  const issued = (await s.api('POST', '/api/streams/app/ingest-token', { body: { ttl: 60 } })).body
  t.equal((await s.api('POST', '/api/ingest/app', { token: issued.token, body: '{}\n', headers: ndjson })).status, 200)
  clock += 59_000
  t.equal((await s.api('POST', '/api/ingest/app', { token: issued.token, body: '{}\n', headers: ndjson })).status, 200, 'still valid at 59 s')
  clock += 2_000
  const r = await s.api('POST', '/api/ingest/app', { token: issued.token, body: '{}\n', headers: ndjson })
  t.equal(r.status, 403)
  t.equal(r.body.error, 'invalid_token')
  const listed = (await s.api('GET', '/api/streams/app/ingest-tokens')).body.tokens.find((x: { id: string }) => x.id === issued.id)
  clock -= 61_000
  t.ok(listed, 'still listed')
})

t.test('a revoke on one node applies on another within the refresh interval', async (t) => {
  const other = await startServer(t, { metadata: { refreshIntervalMs: 100 } }, { database: s.database })
  const issued = (await s.api('POST', '/api/streams/app/ingest-token', { body: {} })).body
  // The second node learns of the new token at its next refresh.
  const ingestOnOther = async (): Promise<number> => (await other.api('POST', '/api/ingest/app', { token: issued.token, body: '{}\n', headers: ndjson })).status
  const accepted = await waitFor(ingestOnOther, { until: (status) => status === 200, what: 'node 2 to learn the token' })
  t.equal(accepted, 200, 'node 2 accepts the token issued on node 1')
  await s.api('DELETE', `/api/streams/app/ingest-tokens/${issued.id}`)
  const refused = await waitFor(ingestOnOther, { until: (status) => status === 403, what: 'node 2 to learn the revoke' })
  t.equal(refused, 403, 'node 2 refuses it after the revoke')
})
