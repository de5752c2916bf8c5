// Streams API: create, list, get with stats, patch, delete, and their failure cases.
import t from 'tap'
import { startServer } from '../helpers/server.ts'
import type { TestServer } from '../helpers/server.ts'
import { waitFor } from '../helpers/wait-for.ts'

let s: TestServer
t.before(async () => { s = await startServer(t) })

t.test('create returns 201 with the stream and its defaults', async (t) => {
  const r = await s.api('POST', '/api/streams', { body: { name: 'web-1', description: 'front' } })
  t.equal(r.status, 201)
  t.equal(r.headers.location, '/api/streams/web-1')
  t.match(r.body, { id: 'web-1', name: 'web-1', description: 'front', retention_days: 30, stats: { events: 0, bytes: 0, last_event_at: null } })
  t.match(r.body.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
})

t.test('create: duplicate name is 409 conflict', async (t) => {
  const r = await s.api('POST', '/api/streams', { body: { name: 'web-1' } })
  t.equal(r.status, 409)
  t.equal(r.body.error, 'conflict')
})

t.test('create: bad names and fields are 422 validation_failed', async (t) => {
  const bad = [
    { name: 'Web' }, { name: '-web' }, { name: '' }, { name: 'a'.repeat(64) }, { name: 'we b' }, { name: 'wéb' }, {},
    { name: 42 }, { name: 'ok', retention_days: 0 }, { name: 'ok', retention_days: 1.5 }, { name: 'ok', retention_days: '30' },
    { name: 'ok', description: 7 }, { name: 'ok', colour: 'red' },
  ]
  for (const body of bad) {
    const r = await s.api('POST', '/api/streams', { body })
    t.equal(r.status, 422, JSON.stringify(body))
    t.equal(r.body.error, 'validation_failed')
  }
  t.equal((await s.api('POST', '/api/streams', { body: { name: 'a'.repeat(63) } })).status, 201, '63 characters is the longest name')
  t.equal((await s.api('POST', '/api/streams', { body: { name: '0_a-b', retention_days: 3650 } })).status, 201)
})

t.test('create: malformed JSON is 400 bad_request', async (t) => {
  const r = await s.api('POST', '/api/streams', { body: '{"name":' })
  t.equal(r.status, 400)
  t.equal(r.body.error, 'bad_request')
  const arr = await s.api('POST', '/api/streams', { body: '[]' })
  t.equal(arr.status, 400)
  t.equal(arr.body.error, 'bad_request')
})

t.test('list returns the org\'s streams', async (t) => {
  const r = await s.api('GET', '/api/streams')
  t.equal(r.status, 200)
  const names = r.body.streams.map((x: { name: string }) => x.name)
  t.ok(names.includes('web-1'))
  t.ok(names.includes('0_a-b'))
})

t.test('get includes stats; unknown stream is 404', async (t) => {
  const r = await s.api('GET', '/api/streams/web-1')
  t.equal(r.status, 200)
  t.same(r.body.stats, { events: 0, bytes: 0, last_event_at: null })
  const missing = await s.api('GET', '/api/streams/nope')
  t.equal(missing.status, 404)
  t.equal(missing.body.error, 'not_found')
})

t.test('patch changes description and retention; rejects bad values', async (t) => {
  const r = await s.api('PATCH', '/api/streams/web-1', { body: { description: 'edge', retention_days: 7 } })
  t.equal(r.status, 200)
  t.match(r.body, { name: 'web-1', description: 'edge', retention_days: 7 })
  t.equal((await s.api('GET', '/api/streams/web-1')).body.retention_days, 7)
  for (const body of [{ retention_days: -1 }, { name: 'rename' }, { description: ['x'] }]) {
    const bad = await s.api('PATCH', '/api/streams/web-1', { body })
    t.equal(bad.status, 422, JSON.stringify(body))
    t.equal(bad.body.error, 'validation_failed')
  }
  t.equal((await s.api('PATCH', '/api/streams/nope', { body: {} })).status, 404)
})

t.test('delete removes the stream, its tokens and its data', async (t) => {
  await s.api('POST', '/api/streams', { body: { name: 'doomed' } })
  const tok = (await s.api('POST', '/api/streams/doomed/ingest-token', { body: {} })).body
  const sent = await s.api('POST', '/api/ingest/doomed', { token: tok.token, body: '{"path":"/a"}\n', headers: { 'content-type': 'application/x-ndjson' } })
  t.equal(sent.status, 200)
  t.equal((await s.api('GET', '/api/streams/doomed')).body.stats.events, 1)

  t.equal((await s.api('DELETE', '/api/streams/doomed')).status, 204)
  t.equal((await s.api('GET', '/api/streams/doomed')).status, 404)
  t.notOk((await s.api('GET', '/api/streams')).body.streams.some((x: { name: string }) => x.name === 'doomed'))
  const after = await s.api('POST', '/api/ingest/doomed', { token: tok.token, body: '{}\n', headers: { 'content-type': 'application/x-ndjson' } })
  t.equal(after.status, 403, 'its ingest token stops working')
  t.equal(after.body.error, 'invalid_token')
  t.equal((await s.api('DELETE', '/api/streams/doomed')).status, 404, 'a second delete finds nothing')

  // The same name can be created again, empty.
  t.equal((await s.api('POST', '/api/streams', { body: { name: 'doomed' } })).status, 201)
  // The old events go with a background mutation; poll for it rather than sleeping.
  const events = await waitFor(async () => (await s.api('GET', '/api/streams/doomed')).body.stats.events as number,
    { until: (n) => n === 0, what: 'the old events to be deleted', timeoutMs: 20_000, intervalMs: 100 })
  t.equal(events, 0, 'the old stream\'s events are gone')
})
