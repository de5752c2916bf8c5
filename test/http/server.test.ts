// HTTP behaviour every route shares: request ids, error shape, unknown routes, methods, shutdown.
import t from 'tap'
import { request } from 'undici'
import { Readable } from 'node:stream'
import { connect } from 'node:net'
import { startServer } from '../helpers/server.ts'
import { createTestDatabase } from '../helpers/clickhouse.ts'
import type { TestServer } from '../helpers/server.ts'
import { waitFor } from '../helpers/wait-for.ts'

let s: TestServer
t.before(async () => { s = await startServer(t) })

t.test('every response carries X-Request-Id; a sane incoming one is kept', async (t) => {
  const a = await s.api('GET', '/healthz', { token: null })
  t.match(a.headers['x-request-id'], /^[0-9a-f-]{36}$/)
  const b = await s.api('GET', '/healthz', { token: null, headers: { 'x-request-id': 'abc-123' } })
  t.equal(b.headers['x-request-id'], 'abc-123')
  const c = await s.api('GET', '/healthz', { token: null, headers: { 'x-request-id': 'bad id with spaces' } })
  t.not(c.headers['x-request-id'], 'bad id with spaces')
})

t.test('unknown routes are 404 not_found; wrong methods 405 with Allow', async (t) => {
  const r = await s.api('GET', '/api/nothing')
  t.equal(r.status, 404)
  t.equal(r.body.error, 'not_found')
  t.equal(r.headers['content-type'], 'application/json; charset=utf-8')
  t.same(Object.keys(r.body).sort(), ['error', 'message', 'request_id'])
  const m = await s.api('PUT', '/api/streams')
  t.equal(m.status, 405)
  t.equal(m.body.error, 'method_not_allowed')
  t.match(m.headers.allow, /GET/)
})

t.test('JSON bodies must be JSON', async (t) => {
  const r = await s.api('POST', '/api/streams', { body: 'name=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } })
  t.equal(r.status, 400)
  t.equal(r.body.error, 'unsupported_content_type')
  const big = await s.api('POST', '/api/streams', { body: JSON.stringify({ name: 'x', description: 'y'.repeat(70_000) }) })
  t.equal(big.status, 413)
  t.equal(big.body.error, 'payload_too_large')
})

t.test('/readyz is ready once migrated; /metrics speaks Prometheus', async (t) => {
  const r = await s.api('GET', '/readyz', { token: null })
  t.equal(r.status, 200)
  t.same(r.body, { status: 'ready' })
  const m = await request(s.url + '/metrics')
  t.equal(m.statusCode, 200)
  t.match(m.headers['content-type'], /^text\/plain/)
  const text = await m.body.text()
  t.match(text, /# TYPE sluice_http_requests_total counter/)
  t.match(text, /sluice_http_requests_total\{method="GET",route="\/readyz",status="200"\} 1/)
  const rss = Number(/^process_resident_memory_bytes (\d+)$/m.exec(text)?.[1])
  t.ok(rss > 10 * 2 ** 20 && rss < 64 * 2 ** 30, `RSS in bytes (${rss})`)
  const heap = Number(/^nodejs_heap_size_used_bytes (\d+)$/m.exec(text)?.[1])
  t.ok(heap > 0 && heap < rss, 'the main heap is part of RSS')
  t.match(text, /^nodejs_external_memory_bytes \d+$/m)
  // The reads' gauges (explore34d J5): a read holding a slot is counted while it holds it.
  t.match(text, /^sluice_reads_running 0$/m)
  t.match(text, /^sluice_reads_waiting 0$/m)
  const release = s.app.reads.acquire(s.app.store.orgByName('default')!.id)
  t.match(await (await request(s.url + '/metrics')).body.text(), /^sluice_reads_running 1$/m)
  release()
  t.match(await (await request(s.url + '/metrics')).body.text(), /^sluice_reads_running 0$/m)
})

t.test('shutdown: requests in flight finish, new ones get 503 shutting_down with Connection: close', async (t) => {
  const db = await createTestDatabase(t)
  // The request in flight must finish, however slow a loaded machine makes its insert: the
  // shutdown deadline (which would cut it) is not what this test is about, nor is the minimum body rate.
  const own = await startServer(t, { server: { shutdownTimeoutMs: 120_000 }, ingest: { minBytesPerSecond: 0 } }, { database: db.database })
  await own.api('POST', '/api/streams', { body: { name: 'web' } })
  const tok = (await own.api('POST', '/api/streams/web/ingest-token', { body: {} })).body.token
  // A request whose body is still arriving when shutdown starts.
  const body = new Readable({ read () {} })
  const push = (c: string | null): void => { body.push(c) }
  push('{"path":"/a"}\n')
  const inFlight = request(own.url + '/api/ingest/web', {
    method: 'POST', body, headers: { authorization: `Bearer ${tok}`, 'content-type': 'application/x-ndjson' },
  })
  // Wait until the server has the request.
  await waitFor(() => own.app.http.inFlight > 0, { what: 'the server to hold the request' })
  t.equal(own.app.http.inFlight, 1)
  const closing = own.app.close()
  // A new request on a fresh connection is refused (the listener is closed) or answered 503.
  const late = await request(own.url + '/healthz').then((r) => r.statusCode, (e: NodeJS.ErrnoException) => e.code)
  t.ok(late === 503 || late === 'ECONNREFUSED', `late request: ${late}`)
  push('{"path":"/b"}\n')
  push(null)
  const res = await inFlight
  t.equal(res.statusCode, 200, 'the request in flight is answered')
  t.match(await res.body.json(), { ingested: 2 })
  await closing
  const rows = await db.clickhouse.query<{ n: number }>("SELECT count() AS n FROM events WHERE stream = 'web'")
  t.equal(rows[0].n, 2, 'and its events are stored')
})

t.test('slow and malformed clients get JSON errors: 408 request_timeout, 400 bad_request, 431 headers_too_large', async (t) => {
  const own = await startServer(t, { server: { headersTimeoutMs: 300, requestTimeoutMs: 300 } })
  const talk = (payload: string) => new Promise<string>((resolve) => {
    const socket = connect(Number(new URL(own.url).port), '127.0.0.1')
    let got = ''
    socket.on('data', (d) => { got += d })
    socket.on('close', () => resolve(got))
    socket.write(payload)
  })
  const slow = await talk('GET /healthz HTTP/1.1\r\nHost: x\r\n') // headers never finish
  t.match(slow, /^HTTP\/1\.1 408 /)
  t.match(slow, /"error":"request_timeout"/)
  const bad = await talk('NONSENSE\r\n\r\n')
  t.match(bad, /^HTTP\/1\.1 400 /)
  t.match(bad, /"error":"bad_request"/)
  // A URL past Node's 16 KiB of request line and headers (a q far over its 1,000 characters).
  const long = await talk(`GET /api/streams/web/events?q=${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`)
  t.match(long, /^HTTP\/1\.1 431 /)
  t.match(long, /"error":"headers_too_large"/)
})
