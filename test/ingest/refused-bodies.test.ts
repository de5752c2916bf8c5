// A body refused before its end (413 over a limit, part-way or by its declared size) is read
// and dropped after the answer, so a client still sending it reads the answer instead of a
// reset, and its connection stays usable (docs/api.md section 1, "Refused bodies"). Before, a
// client that wrote an 8 MiB body before reading got EPIPE and no answer, 10 times in 10: a
// shipper then retries a body that can never be taken.
import t from 'tap'
import { connect } from 'node:net'
import { gzipSync } from 'node:zlib'
import { startServer } from '../helpers/server.ts'
import { countEvents, createIngestTarget } from '../helpers/ingest.ts'
import type { IngestTarget } from '../helpers/ingest.ts'
import { waitFor } from '../helpers/wait-for.ts'

const MiB = 1024 * 1024
const line = '{"path":"/refused","status":200}\n'
const body = Buffer.from(line.repeat(Math.ceil(8 * MiB / line.length)))

interface Outcome { status: number, error: string | null, answer: string }

/**
 * Sends a whole request, and only then reads: the way a client writing a large body without
 * watching for an early answer meets it. The answer waits in the socket meanwhile.
 */
function sendThenRead (tgt: IngestTarget, head: string, payload: Buffer, close = true): Promise<Outcome> {
  return new Promise((resolve) => {
    const socket = connect(Number(new URL(tgt.server.url).port), '127.0.0.1')
    let answer = ''
    let error: string | null = null
    socket.pause()
    socket.on('data', (d) => { answer += d })
    socket.on('error', (e: NodeJS.ErrnoException) => { error = e.code ?? e.message })
    socket.on('close', () => resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1] ?? 0), error, answer }))
    socket.write(`POST /api/ingest/${tgt.stream} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${tgt.token}\r\n` +
      `Content-Type: application/x-ndjson\r\n${close ? 'Connection: close\r\n' : ''}${head}\r\n`)
    // Connection: close: the server closes once it has answered (a FIN from here would abort the
    // request before its answer: node's server does not allow half-open connections).
    socket.write(payload, () => socket.resume())
  })
}

const chunked = (payload: Buffer): Buffer => Buffer.concat([Buffer.from(`${payload.length.toString(16)}\r\n`), payload, Buffer.from('\r\n0\r\n\r\n')])

t.test('a client that sends its whole body before reading gets its 413, not a reset', async (t) => {
  const s = await startServer(t, { ingest: { maxRawBytes: MiB, maxDecodedBytes: MiB } })
  const tgt = await createIngestTarget(s, 'refused')
  const gzipped = gzipSync(body)
  const shapes: Array<[string, string, Buffer]> = [
    ['chunked, over the wire limit part-way', 'Transfer-Encoding: chunked\r\n', chunked(body)],
    ['declared over the wire limit, not read at all', `Content-Length: ${body.length}\r\n`, body],
    ['gzip, over the decoded limit part-way', 'Content-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n', chunked(Buffer.concat([gzipped, gzipSync(body), gzipSync(body)]))],
  ]
  for (const [name, head, payload] of shapes) {
    for (let i = 0; i < 3; i++) {
      const got = await sendThenRead(tgt, head, payload)
      t.equal(got.status, 413, `${name}: 413 (${got.error ?? 'no socket error'})`)
      t.match(got.answer, /"error":"payload_too_large"/)
      t.equal(got.error, null, `${name}: no reset`)
    }
  }
  t.equal(await countEvents(tgt), 0, 'nothing stored')
  t.equal(s.app.admission.readingBytes, 0)
  t.equal(s.app.admission.uncommittedBytes, 0)
})

t.test('after a 413 part-way the connection is kept: the next request on it is served', async (t) => {
  const s = await startServer(t, { ingest: { maxRawBytes: MiB } })
  const tgt = await createIngestTarget(s, 'kept')
  // Both requests on one connection, the second right behind the first's body.
  const next = 'POST /api/ingest/kept HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ' + tgt.token + '\r\n' +
    'Content-Type: application/x-ndjson\r\nContent-Length: 17\r\nConnection: close\r\n\r\n{"path":"/next"}\n'
  const got = await sendThenRead(tgt, 'Transfer-Encoding: chunked\r\n', Buffer.concat([chunked(body), Buffer.from(next)]), false)
  const statuses = [...got.answer.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => Number(m[1]))
  t.same(statuses, [413, 200], 'the 413, then the next request\'s 200 on the same connection')
  t.equal(got.error, null)
  t.equal(await countEvents(tgt), 1, 'only the next request stored')
})

t.test('after a body drained on a kept connection, a request that closes it is closed by the server', async (t) => {
  const s = await startServer(t, { ingest: { maxRawBytes: MiB } })
  const tgt = await createIngestTarget(s, 'closing')
  const socket = connect({ port: Number(new URL(s.url).port), host: '127.0.0.1', allowHalfOpen: true })
  let answer = ''
  socket.on('data', (d) => { answer += d })
  const ended = new Promise<void>((resolve) => socket.once('end', () => resolve()))
  socket.write(`POST /api/ingest/closing HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${tgt.token}\r\n` +
    'Content-Type: application/x-ndjson\r\nTransfer-Encoding: chunked\r\n\r\n')
  socket.write(Buffer.concat([chunked(body), Buffer.from('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')]))
  // The server ends the connection after the second answer (node's own close, not a lingering
  // one that would wait for this side, which stays open).
  await ended
  t.same([...answer.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => Number(m[1])), [413, 200])
  const connections = (): Promise<number> => new Promise((resolve, reject) => s.app.http.server.getConnections((err, n) => err ? reject(err) : resolve(n)))
  await waitFor(async () => (await connections()) === 0, { what: 'the server to close its side too' })
  t.equal(await connections(), 0)
  socket.destroy()
})
