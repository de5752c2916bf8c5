// Slow and departed clients (issue 13 holes 1, 2, 6): a body under the minimum data rate gets 408
// and its connection is destroyed; a request cut by node's request timeout is destroyed too and
// stores nothing even if the rest of its body comes; a client that leaves before its insert
// starts has its rows dropped. Everything such a request held comes back.
import t from 'tap'
import { connect } from 'node:net'
import type { Socket } from 'node:net'
import { request } from 'undici'
import { startServer } from '../helpers/server.ts'
import type { TestServer } from '../helpers/server.ts'
import { countEvents, createIngestTarget, postIngest } from '../helpers/ingest.ts'
import type { IngestTarget } from '../helpers/ingest.ts'
import { waitFor } from '../helpers/wait-for.ts'

function connections (s: TestServer): Promise<number> {
  return new Promise((resolve, reject) => s.app.http.server.getConnections((err, n) => err ? reject(err) : resolve(n)))
}

/** A raw client that keeps its side open after the server's FIN (allowHalfOpen), as an attacker would. */
function openUpload (tgt: IngestTarget, contentLength: number, headers = '') {
  const socket: Socket = connect({ port: Number(new URL(tgt.server.url).port), host: '127.0.0.1', allowHalfOpen: true })
  let got = ''
  let ended = false
  socket.on('data', (d) => { got += d })
  socket.on('end', () => { ended = true })
  socket.on('error', () => {})
  socket.write(`POST /api/ingest/${tgt.stream} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${tgt.token}\r\n` +
    `Content-Type: application/x-ndjson\r\nContent-Length: ${contentLength}\r\n${headers}\r\n`)
  return { socket, answer: () => got, ended: () => ended }
}

const line = '{"path":"/slow"}\n'

t.test('a body slower than the minimum rate gets 408 and is destroyed; nothing is stored', async (t) => {
  const s = await startServer(t, { ingest: { minBytesPerSecond: 1000, minRateGraceMs: 300 } })
  const tgt = await createIngestTarget(s, 'slowbody')
  const body = line.repeat(10)
  const up = openUpload(tgt, body.length)
  up.socket.write(body.slice(0, 20))
  await waitFor(() => up.answer().length > 0, { what: 'the answer' })
  t.match(up.answer(), /^HTTP\/1\.1 408 /)
  t.match(up.answer(), /"error":"request_timeout"/)
  t.match(up.answer(), /connection: close/i)
  await waitFor(async () => (await connections(s)) === 0, { what: 'the server to drop the connection' })
  up.socket.write(body.slice(20)) // the rest comes after the 408: it goes nowhere
  t.equal(s.app.admission.readingRequests, 0)
  t.equal(s.app.admission.uncommittedBytes, 0)
  // The org's concurrency slot is back: a normal request is served.
  const ok = await request(`${s.url}/api/ingest/${tgt.stream}`, {
    method: 'POST', body: '{"path":"/fine"}\n', headers: { authorization: `Bearer ${tgt.token}`, 'content-type': 'application/x-ndjson' },
  })
  t.equal(ok.statusCode, 200)
  await ok.body.dump()
  t.equal(await countEvents(tgt), 1, 'only the normal request is stored')
  up.socket.destroy()
})

t.test('a keyed body cut with 408 is not its key\'s answer: the retry under the key runs and stores the body once (explore26 F1)', async (t) => {
  const s = await startServer(t, { ingest: { minBytesPerSecond: 1000, minRateGraceMs: 300 } })
  const tgt = await createIngestTarget(s, 'slowkeyed')
  const body = line.repeat(10)
  const up = openUpload(tgt, body.length, 'Idempotency-Key: slow-1\r\n')
  up.socket.write(body.slice(0, 20))
  await waitFor(() => up.answer().length > 0, { what: 'the answer' })
  t.match(up.answer(), /^HTTP\/1\.1 408 /)
  up.socket.destroy()
  const retry = await postIngest(tgt, body, { 'idempotency-key': 'slow-1' })
  t.equal(retry.status, 200, 'the retry runs')
  t.equal(retry.headers['idempotent-replayed'], undefined, 'not a replay of the 408')
  t.equal(retry.body.ingested, 10)
  const again = await postIngest(tgt, body, { 'idempotency-key': 'slow-1' })
  t.equal(again.headers['idempotent-replayed'], 'true', 'the 200 is the key\'s answer from then on')
  t.equal(await countEvents(tgt), 10, 'stored once')
})

t.test("node's request timeout mid-body: 408, the half-open peer's connection destroyed, nothing stored", async (t) => {
  const s = await startServer(t, { server: { requestTimeoutMs: 600, headersTimeoutMs: 500 }, ingest: { minBytesPerSecond: 0 } })
  const tgt = await createIngestTarget(s, 'reqtimeout')
  const body = line.repeat(3)
  const up = openUpload(tgt, body.length)
  up.socket.write(body.slice(0, 30))
  await waitFor(() => s.app.admission.readingRequests === 1, { what: 'the body to be read' })
  await waitFor(() => up.answer().length > 0, { what: 'the answer' })
  t.match(up.answer(), /^HTTP\/1\.1 408 /)
  t.match(up.answer(), /"error":"request_timeout"/)
  await waitFor(async () => (await connections(s)) === 0, { what: 'the server to destroy the connection though the peer keeps its side open' })
  t.ok(up.ended(), 'the peer saw the end')
  up.socket.write(body.slice(30))
  await waitFor(() => s.app.admission.readingRequests === 0 && s.app.http.inFlight === 0, { what: 'the request to be gone' })
  t.equal(s.app.admission.uncommittedBytes, 0)
  await s.app.writer.flush()
  t.equal(await countEvents(tgt), 0, 'the cut request stored nothing')
  up.socket.destroy()
})

t.test('headers that never finish: 408, and the half-open connection is destroyed', async (t) => {
  const s = await startServer(t, { server: { headersTimeoutMs: 300, requestTimeoutMs: 300 } })
  const socket = connect({ port: Number(new URL(s.url).port), host: '127.0.0.1', allowHalfOpen: true })
  let got = ''
  socket.on('data', (d) => { got += d })
  socket.on('error', () => {})
  socket.write('POST /api/ingest/x HTTP/1.1\r\nHost: x\r\n')
  await waitFor(() => got.length > 0, { what: 'the answer' })
  t.match(got, /^HTTP\/1\.1 408 /)
  await waitFor(async () => (await connections(s)) === 0, { what: 'the fd to be released' })
  socket.destroy()
})

t.test('a client that leaves before its insert starts: its rows are dropped', async (t) => {
  // Long intervals keep the rows waiting in the writer, the body read and parsed: a first
  // request's insert starts idleInsertIntervalMs, which an idle writer's next write waits out.
  const s = await startServer(t, { writer: { flushIntervalMs: 60_000, minInsertIntervalMs: 60_000, idleInsertIntervalMs: 60_000 } })
  const tgt = await createIngestTarget(s, 'leaver')
  t.equal((await postIngest(tgt, line)).status, 200, 'a first request goes out at once')
  const left = new AbortController()
  const answer = request(`${s.url}/api/ingest/${tgt.stream}`, {
    method: 'POST', body: line.repeat(5), signal: left.signal,
    headers: { authorization: `Bearer ${tgt.token}`, 'content-type': 'application/x-ndjson' },
  }).then(() => 'answered', () => 'gave up')
  await waitFor(() => s.app.writer.pendingRows === 5, { what: 'the rows to wait in the writer' })
  left.abort()
  t.equal(await answer, 'gave up')
  await waitFor(() => s.app.writer.pendingRows === 0, { what: 'the rows to be dropped' })
  await s.app.writer.flush()
  t.equal(await countEvents(tgt), 1, 'nothing stored for a client that was never answered (the first request\'s row only)')
  t.equal(s.app.admission.uncommittedBytes, 0)
})
