// Issue 13, hole 15: HEAD on the live tail answers its headers and ends (it used to hold the
// connection for good); an Expect other than 100-continue gets our 417 expectation_failed with the
// JSON error shape and X-Request-Id (node's own 417 had neither), while 100-continue still works.
import t from 'tap'
import { connect } from 'node:net'
import { startServer } from '../helpers/server.ts'
import { createIngestTarget, countEvents } from '../helpers/ingest.ts'
import { rawRequest } from '../helpers/raw-http.ts'

/** Writes `payload` and collects every byte until the server closes (or `timeoutMs`, then ''). */
function readToClose (url: string, payload: string, timeoutMs = 5000): Promise<string> {
  const { port, hostname } = new URL(url)
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname)
    let got = ''
    const timer = setTimeout(() => { socket.destroy(); resolve(got) }, timeoutMs)
    socket.on('data', (chunk) => { got += chunk.toString('latin1') })
    socket.on('close', () => { clearTimeout(timer); resolve(got) })
    socket.on('error', () => {})
    socket.write(payload)
  })
}

t.test('HEAD on the tail: the headers of a tail, then the response ends and the connection is reused', async (t) => {
  const server = await startServer(t)
  await createIngestTarget(server, 'web')
  const auth = `Authorization: Bearer ${server.adminToken}\r\n`
  // Pipelined: the /healthz answer only comes once the HEAD's response has ended.
  const got = await readToClose(server.url,
    `HEAD /api/streams/web/tail?q=status:5xx HTTP/1.1\r\nHost: x\r\n${auth}\r\n` +
    'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')
  const responses = got.split(/(?=HTTP\/1\.1 )/)
  t.equal(responses.length, 2, 'both pipelined requests were answered')
  t.match(responses[0], /^HTTP\/1\.1 200 /)
  t.match(responses[0], /content-type: text\/event-stream/i)
  t.match(responses[0], /x-request-id: /i)
  t.notMatch(responses[0], /connected/, 'no body')
  t.match(responses[1] ?? '', /^HTTP\/1\.1 200 [^]*"status":"ok"/)
  t.equal(server.app.tailHub.clientCount, 0, 'a HEAD holds no tail slot')

  const badQuery = await rawRequest(server.url, `HEAD /api/streams/web/tail?q=status:%3E%3E HTTP/1.1\r\nHost: x\r\n${auth}Connection: close\r\n\r\n`, { head: true })
  t.equal(badQuery.status, 400, 'a HEAD passes the same checks as the GET')
  const noToken = await rawRequest(server.url, 'HEAD /api/streams/web/tail HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', { head: true })
  t.equal(noToken.status, 401)
  const missing = await rawRequest(server.url, `HEAD /api/streams/nope/tail HTTP/1.1\r\nHost: x\r\n${auth}Connection: close\r\n\r\n`, { head: true })
  t.equal(missing.status, 404)
})

t.test('Expect: anything but 100-continue is 417 expectation_failed in our shape; 100-continue still ingests', async (t) => {
  const server = await startServer(t)
  const target = await createIngestTarget(server, 'web')
  const head = `POST /api/ingest/web HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${target.token}\r\n` +
    'Content-Type: application/x-ndjson\r\nContent-Length: 13\r\n'
  for (const expect of ['foo', '200-ok', 'continue', 'x'.repeat(100)]) {
    const res = await rawRequest(server.url, head + `Expect: ${expect}\r\nX-Request-Id: expect-${expect.length}\r\n\r\n`)
    t.equal(res.status, 417, `Expect: ${JSON.stringify(expect.slice(0, 20))}: 417`)
    t.equal(res.body?.error, 'expectation_failed')
    t.equal(res.body?.request_id, `expect-${expect.length}`, 'the request id is in the body')
    t.equal(res.headers['x-request-id'], `expect-${expect.length}`, 'and in X-Request-Id')
    t.match(res.headers['content-type'], /^application\/json/)
    t.equal(res.headers.connection, 'close')
  }
  const onMetrics = await rawRequest(server.url, 'GET /metrics HTTP/1.1\r\nHost: x\r\nExpect: nope\r\nConnection: close\r\n\r\n')
  t.equal(onMetrics.status, 417, 'on any route')
  t.equal(onMetrics.body?.error, 'expectation_failed')
  t.equal(await countEvents(target), 0, 'nothing stored')

  const res = await rawRequest(server.url, head + 'Expect: 100-continue\r\nConnection: close\r\n\r\n', {
    onInterim: (status, write) => { if (status === 100) write('{"host":"a"}\n') },
  })
  t.strictSame(res.interim, [100], 'the client was told to continue')
  t.equal(res.status, 200)
  t.equal(res.body?.ingested, 1)
  t.equal(await countEvents(target), 1)
})

t.test('Expect: 100-continue: a request refused by its checks gets its answer without 100 Continue, and the connection closes', async (t) => {
  const server = await startServer(t, { ingest: { maxRawBytes: 1024 } })
  const target = await createIngestTarget(server, 'web')
  const ingest = (token: string, length: number): string => `POST /api/ingest/web HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\n` +
    `Content-Type: application/x-ndjson\r\nContent-Length: ${length}\r\nExpect: 100-continue\r\n\r\n`
  const refusals: Array<[string, string, number, string]> = [
    ['a bad token', ingest('sli_' + 'x'.repeat(40), 13), 403, 'invalid_token'],
    ['a body over the wire limit', ingest(target.token, 4096), 413, 'payload_too_large'],
    ['a bad content type', ingest(target.token, 13).replace('application/x-ndjson', 'text/csv'), 400, 'unsupported_content_type'],
  ]
  for (const [name, head, status, code] of refusals) {
    // The body is never sent: a server that said 100 would wait for it.
    const res = await rawRequest(server.url, head, { onInterim: (_status, write) => write('{"host":"a"}\n') })
    t.strictSame(res.interim, [], `${name}: no 100 Continue`)
    t.equal(res.status, status, name)
    t.equal(res.body?.error, code)
    t.equal(res.headers.connection, 'close', `${name}: the connection closes (the body may follow or not)`)
  }
  // A management body: 100 Continue once the route reads it.
  const created = await rawRequest(server.url, `POST /api/streams HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${server.adminToken}\r\n` +
    'Content-Type: application/json\r\nContent-Length: 15\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n', {
    onInterim: (status, write) => { if (status === 100) write('{"name":"api2"}') },
  })
  t.strictSame(created.interim, [100])
  t.equal(created.status, 201)
  t.equal(await countEvents(target), 0, 'nothing stored')
})
