// Idempotency-Key over HTTP on one node (docs/api.md section 6.7): another body under a used key
// is refused (422 idempotency_key_reused), and keys outlive a restart (they are in ClickHouse).
import t from 'tap'
import { gzipSync } from 'node:zlib'
import { request } from 'undici'
import { startServer } from '../helpers/server.ts'
import { countEvents, createIngestTarget, postIngest } from '../helpers/ingest.ts'

t.test('another request under a used key is refused; the same one is replayed, also after a restart', async (t) => {
  const s = await startServer(t)
  const tgt = await createIngestTarget(s, 'idem')
  const body = '{"path":"/a"}\n{"path":"/b"}\n'
  const first = await postIngest(tgt, body, { 'idempotency-key': 'k-1' })
  t.equal(first.status, 200)
  t.equal(first.body.ingested, 2)

  const other = await postIngest(tgt, '{"path":"/c"}\n', { 'idempotency-key': 'k-1' })
  t.equal(other.status, 422)
  t.equal(other.body.error, 'idempotency_key_reused')
  const gzipped = await postIngest(tgt, gzipSync(body), { 'idempotency-key': 'k-1', 'content-encoding': 'gzip' })
  t.equal(gzipped.body.error, 'idempotency_key_reused', 'the body as sent is compared, not its decoded lines')
  // The same body on another route (the Elasticsearch bulk API takes NDJSON too): another request.
  const elsewhere = await request(`${s.url}/api/elastic/_bulk`, {
    method: 'POST', body, headers: { authorization: `Bearer ${tgt.token}`, 'content-type': 'application/x-ndjson', 'idempotency-key': 'k-1' },
  })
  t.equal(elsewhere.statusCode, 422, 'the path is part of the request')
  t.equal((await elsewhere.body.json() as { error: string }).error, 'idempotency_key_reused')
  const same = await postIngest(tgt, body, { 'idempotency-key': 'k-1' })
  t.equal(same.headers['idempotent-replayed'], 'true')
  t.same(same.body, first.body)

  // A client error is a final answer, compared like any.
  const empty = await postIngest(tgt, '\n', { 'idempotency-key': 'k-empty' })
  t.equal(empty.body.error, 'empty_body')
  t.equal((await postIngest(tgt, body, { 'idempotency-key': 'k-empty' })).body.error, 'idempotency_key_reused')
  const emptyAgain = await postIngest(tgt, '\n', { 'idempotency-key': 'k-empty' })
  t.equal(emptyAgain.headers['idempotent-replayed'], 'true')
  t.equal(emptyAgain.body.request_id, empty.body.request_id)
  t.equal(await countEvents(tgt), 2, 'only the first request stored')

  // A restart: the new process has empty memory and finds the key in ClickHouse.
  await s.app.close()
  const s2 = await startServer(t, {}, { database: s.database, dataDir: s.dataDir })
  const tgt2 = { ...tgt, server: s2 }
  const afterRestart = await postIngest(tgt2, body, { 'idempotency-key': 'k-1' })
  t.equal(afterRestart.status, 200)
  t.equal(afterRestart.headers['idempotent-replayed'], 'true')
  t.equal(afterRestart.body.request_id, first.body.request_id)
  t.equal((await postIngest(tgt2, '{"path":"/c"}\n', { 'idempotency-key': 'k-1' })).body.error, 'idempotency_key_reused')
  t.equal(await countEvents(tgt2), 2, 'stored once across the restart')
})

t.test('without a key, a byte-identical body of timestamped events is a retry: replayed, stored once (ingest.dedupeRetries)', async (t) => {
  const s = await startServer(t)
  const tgt = await createIngestTarget(s, 'shipper')
  const ts = Date.now()
  const timed = `{"ts":${ts},"path":"/a"}\n{"time":"${new Date(ts).toISOString()}","path":"/b"}\n`
  const first = await postIngest(tgt, timed)
  t.equal(first.status, 200)
  const again = await postIngest(tgt, timed)
  t.equal(again.status, 200)
  t.equal(again.headers['idempotent-replayed'], 'true')
  t.same(again.body, first.body, 'the first answer')
  t.equal(await countEvents(tgt), 2, 'stored once')

  // Not a retry: one event without a timestamp (it may legitimately repeat), or other bytes.
  const untimed = `{"ts":${ts},"path":"/c"}\n{"path":"/d"}\n`
  await postIngest(tgt, untimed)
  const untimedAgain = await postIngest(tgt, untimed)
  t.equal(untimedAgain.headers['idempotent-replayed'], undefined)
  t.equal(await countEvents(tgt), 6, 'a body with an untimestamped event is stored each time')
  const other = await postIngest(tgt, timed.replace('/a', '/z'))
  t.equal(other.headers['idempotent-replayed'], undefined)
  t.equal(await countEvents(tgt), 8)
  const s2 = await startServer(t, { ingest: { dedupeRetries: 'off' } })
  const tgt2 = await createIngestTarget(s2, 'fixed-body')
  await postIngest(tgt2, timed)
  await postIngest(tgt2, timed)
  t.equal(await countEvents(tgt2), 4, 'off: every body is stored')
})
