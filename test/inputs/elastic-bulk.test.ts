// The Elasticsearch bulk API over raw HTTP against a real server and ClickHouse: item statuses for
// good, invalid, update and delete items, pairing across worker tasks, bodies refused whole, gzip,
// content types, API keys, per-item 429s (admission, storage) with Retry-After, and the stored rows.
import t from 'tap'
import { gzipSync } from 'node:zlib'
import { request } from 'undici'
import { startServer } from '../helpers/server.ts'
import type { TestServer } from '../helpers/server.ts'
import { createIngestTarget, storedEvents } from '../helpers/ingest.ts'
import { startTcpProxy } from '../helpers/tcp-proxy.ts'
import { clickhouseUrl, onChdb } from '../helpers/clickhouse.ts'
import type { IngestTarget } from '../helpers/ingest.ts'

let s: TestServer
// Small worker tasks (taskBytes, bytes) so that a body of a few KiB is cut between actions and their
// documents; a small line limit (bytes) for line_too_long, which fails lines on the main thread.
t.before(async () => { s = await startServer(t, { ingest: { taskBytes: 64, maxLineBytes: 300 } }) })

interface BulkResponse { status: number, headers: Record<string, string | string[] | undefined>, body: any }

async function bulk (tgt: IngestTarget, body: string | Buffer, headers: Record<string, string> = {}, path = '/api/elastic/_bulk'): Promise<BulkResponse> {
  const res = await request(s.url + path, {
    method: 'POST',
    headers: { authorization: `Bearer ${tgt.token}`, 'content-type': 'application/x-ndjson', ...headers },
    body,
  })
  const text = await res.body.text()
  return { status: res.statusCode, headers: res.headers, body: text ? JSON.parse(text) : null }
}

const ndjson = (lines: unknown[]): string => lines.map((l) => typeof l === 'string' ? l : JSON.stringify(l)).join('\n') + '\n'

t.test('index and create items are stored and answered 201, each as compactly as clients read it', async (t) => {
  const tgt = await createIngestTarget(s, 'bulk-ok')
  const now = Date.now()
  const r = await bulk(tgt, ndjson([
    { index: { _index: 'logs-a' } }, { '@timestamp': new Date(now - 1000).toISOString(), message: 'one', host: 'web-1', path: '/a' },
    { create: { _index: 'logs-b', _id: 'given-id' } }, { message: 'two', path: '/b', status: 404 },
    { index: {} }, { path: '/c', status: 200 },
  ]), {}, '/api/elastic/url-index/_bulk')
  t.equal(r.status, 200)
  t.equal(r.headers['x-elastic-product'], 'Elasticsearch')
  t.equal(r.body.errors, false)
  t.type(r.body.took, 'number')
  // A stored item is its action and status: what Fluent Bit, rsyslog, the Python and JS helpers,
  // Filebeat and Logstash read of a success (issue 21: the full item overflowed Fluent Bit's buffer).
  t.same(r.body.items, [{ index: { status: 201 } }, { create: { status: 201 } }, { index: { status: 201 } }])
  const answerBytes = Number(r.headers['content-length'])
  t.ok(answerBytes < 40 + 3 * 30, `about 26 bytes per stored item (${answerBytes} bytes for 3)`)
  const rows = await storedEvents(tgt)
  t.same(rows.map((e) => e.path).sort(), ['/a', '/b', '/c'])
  t.equal(rows.find((e) => e.path === '/b')!.status, 404)
  t.equal(rows.find((e) => e.path === '/a')!.host, 'web-1')
  t.notOk(rows.some((e) => e.attrs.includes('"index"') || e.attrs.includes('"create"')), 'no action line is stored')
})

t.test('the answer to a 13,000-record chunk fits Fluent Bit\'s default 512 KB read buffer (issue 21)', async (t) => {
  // A tail chunk of 2 MB holds 6,000-13,000 records; the full Elasticsearch item (about 180
  // bytes) made its answer 2.3 MB, which Fluent Bit could not read and re-sent forever.
  const tgt = await createIngestTarget(s, 'bulk-chunk')
  const lines: unknown[] = []
  for (let i = 0; i < 13_000; i++) lines.push({ create: { _index: 'fluent-bit' } }, { log: `r${i}`, level: 'info' })
  const r = await bulk(tgt, ndjson(lines))
  t.equal(r.status, 200)
  t.equal(r.body.errors, false)
  t.equal(r.body.items.length, 13_000)
  const bytes = Number(r.headers['content-length'])
  t.ok(bytes < 512_000, `${bytes} bytes of answer`)
  t.comment(`answer to 13,000 stored items: ${bytes} bytes (${(bytes / 13_000).toFixed(1)} per item)`)
})

t.test('invalid documents get a 400 item with errors true; delete and update are answered without changing anything', async (t) => {
  const tgt = await createIngestTarget(s, 'bulk-items')
  const r = await bulk(tgt, ndjson([
    { index: {} }, { path: '/good-1' }, // item 0
    { index: {} }, { status: 'not a number' }, // item 1: invalid_field
    { create: {} }, '{"path": "/broken"', // item 2: invalid_json
    { delete: { _index: 'x', _id: 'd1' } }, // item 3: no document
    { update: { _id: 'u1' } }, { doc: { path: '/updated' } }, // item 4: update not supported
    { index: {} }, '[1,2]', // item 5: not_an_object
    { index: {} }, { path: '/good-2' }, // item 6
  ]))
  t.equal(r.status, 200)
  t.equal(r.body.errors, true)
  const items = r.body.items
  t.equal(items.length, 7)
  t.equal(items[0].index.status, 201)
  t.equal(items[1].index.status, 400)
  t.equal(items[1].index.error.type, 'mapper_parsing_exception')
  t.equal(items[1].index.error.sluice_code, 'invalid_field')
  t.equal(items[1].index.error.line, 4)
  t.equal(items[2].create.status, 400)
  t.equal(items[2].create.error.sluice_code, 'invalid_json')
  t.match(items[3], { delete: { _index: 'x', _id: 'd1', status: 404, result: 'not_found' } })
  t.notOk(items[3].delete.error, 'a delete is no error')
  t.equal(items[4].update.status, 400)
  t.equal(items[4].update.error.sluice_code, 'update_not_supported')
  t.equal(items[5].index.error.sluice_code, 'not_an_object')
  t.equal(items[6].index.status, 201)
  t.same((await storedEvents(tgt)).map((e) => e.path).sort(), ['/good-1', '/good-2'])
})

t.test('actions and documents pair by line order across worker tasks', async (t) => {
  const tgt = await createIngestTarget(s, 'bulk-split')
  const lines: unknown[] = []
  for (let i = 0; i < 60; i++) {
    if (i % 7 === 3) lines.push({ delete: { _id: `d${i}` } })
    else lines.push({ index: { _id: `id-${i}`, _index: `ix-${i % 3}` } }, { path: `/p/${i}`, pad: 'x'.repeat(i % 5 * 20) })
    if (i % 11 === 0) lines.push('') // blank lines are skipped
  }
  const r = await bulk(tgt, ndjson(lines))
  t.equal(r.status, 200)
  t.equal(r.body.errors, false)
  t.equal(r.body.items.length, 60)
  for (let i = 0; i < 60; i++) {
    const item = r.body.items[i]
    if (i % 7 === 3) t.equal(item.delete._id, `d${i}`)
    else t.same(item.index, { status: 201 })
  }
  t.equal((await storedEvents(tgt)).length, 60 - 9)
})

t.test('a document over ingest.maxLineBytes fails its item; a long line where an action belongs refuses the body', async (t) => {
  const tgt = await createIngestTarget(s, 'bulk-long')
  const long = { path: '/long', pad: 'x'.repeat(400) }
  const r = await bulk(tgt, ndjson([
    { index: {} }, { path: '/before' },
    { index: { _id: 'long-1' } }, long, // failed on the main thread, never in a task
    { create: {} }, { path: '/after' },
    { index: {} }, long,
  ]))
  t.equal(r.status, 200)
  t.equal(r.body.errors, true)
  t.same(r.body.items.map((i: any) => Object.values(i)[0] as any).map((i: any) => [i.status, i.error?.sluice_code ?? null]), [
    [201, null], [400, 'line_too_long'], [201, null], [400, 'line_too_long'],
  ])
  t.equal(r.body.items[1].index._id, 'long-1')
  t.equal(r.body.items[1].index.error.line, 4)
  t.same((await storedEvents(tgt)).map((e) => e.path).sort(), ['/after', '/before'])

  const refused = await bulk(tgt, ndjson([{ index: {} }, { path: '/x' }, { index: { pad: 'x'.repeat(400) } }, { path: '/y' }]))
  t.equal(refused.status, 400)
  t.equal(refused.body.error, 'bad_request')
  t.match(refused.body.message, /\[3\].*line_too_long/)
  t.equal((await storedEvents(tgt)).length, 2, 'the refused body stored nothing')
})

t.test('a body Elasticsearch refuses whole is a 400 and stores nothing', async (t) => {
  const tgt = await createIngestTarget(s, 'bulk-malformed')
  const noAction = await bulk(tgt, ndjson([{ index: {} }, { path: '/a' }, { path: '/where-is-the-action' }]))
  t.equal(noAction.status, 400)
  t.equal(noAction.body.error, 'bad_request')
  t.match(noAction.body.message, /\[3\]/)
  const noDocument = await bulk(tgt, ndjson([{ index: {} }, { path: '/a' }, { create: {} }]))
  t.equal(noDocument.status, 400)
  t.equal(noDocument.body.error, 'bad_request')
  const updateDoc = await bulk(tgt, ndjson([{ index: {} }, { path: '/a' }, { update: {} }, { path: '/not-an-update-body' }]))
  t.equal(updateDoc.status, 400)
  t.equal((await storedEvents(tgt)).length, 0)
})

t.test('gzip bodies, the clients\' vendored content types, ApiKey and Basic credentials', async (t) => {
  const tgt = await createIngestTarget(s, 'bulk-gzip')
  const body = gzipSync(ndjson([{ index: {} }, { path: '/gz' }]))
  const r = await bulk(tgt, body, { 'content-encoding': 'gzip', 'content-type': 'application/vnd.elasticsearch+x-ndjson; compatible-with=8' })
  t.equal(r.status, 200)
  t.equal(r.body.items[0].index.status, 201)
  const raw = await bulk(tgt, ndjson([{ create: {} }, { path: '/apikey-raw' }]), { authorization: `ApiKey ${tgt.token}`, 'content-type': 'application/json' })
  t.equal(raw.status, 200)
  const encoded = Buffer.from(`some-id:${tgt.token}`).toString('base64')
  const pair = await bulk(tgt, ndjson([{ create: {} }, { path: '/apikey-pair' }]), { authorization: `ApiKey ${encoded}` })
  t.equal(pair.status, 200)
  const basic = await bulk(tgt, ndjson([{ create: {} }, { path: '/basic' }]), { authorization: `Basic ${Buffer.from(`elastic:${tgt.token}`).toString('base64')}` })
  t.equal(basic.status, 200)
  const wrongType = await bulk(tgt, ndjson([{ create: {} }, { path: '/x' }]), { 'content-type': 'text/plain' })
  t.equal(wrongType.status, 400)
  t.equal(wrongType.body.error, 'unsupported_content_type')
  const badKey = await bulk(tgt, ndjson([{ create: {} }, { path: '/x' }]), { authorization: 'ApiKey bm90LWEtdG9rZW4=' })
  t.equal(badKey.status, 403, 'an API key that holds no Sluice token is an invalid token')
  t.equal(badKey.body.error, 'invalid_token')
  t.equal(badKey.headers['x-elastic-product'], 'Elasticsearch', 'errors carry the product header too')
  t.same((await storedEvents(tgt)).map((e) => e.path).sort(), ['/apikey-pair', '/apikey-raw', '/basic', '/gz'])
})

t.test('every document failing is still a 200 with errors true, in Elasticsearch\'s shape', async (t) => {
  const tgt = await createIngestTarget(s, 'bulk-all-bad')
  const r = await bulk(tgt, ndjson([{ index: {} }, { status: 'x' }, { delete: { _id: '1' } }]))
  t.equal(r.status, 200)
  t.equal(r.body.errors, true)
  t.equal(r.body.items[0].index.status, 400)
  t.equal((await storedEvents(tgt)).length, 0)
})

t.test('a PAT is refused, and an empty body is a 400', async (t) => {
  const tgt = await createIngestTarget(s, 'bulk-auth')
  const pat = await request(s.url + '/api/elastic/_bulk', { method: 'POST', headers: { authorization: `Bearer ${s.adminToken}`, 'content-type': 'application/x-ndjson' }, body: ndjson([{ index: {} }, {}]) })
  t.equal(pat.statusCode, 403)
  t.equal((await pat.body.json() as any).error, 'wrong_token_kind')
  const empty = await bulk(tgt, '\n\n')
  t.equal(empty.status, 400)
  t.equal(empty.body.error, 'empty_body')
})

t.test('a body of more items than its answer may list is a 413 and stores nothing', async (t) => {
  // 64 KiB decoded bytes at most: 512 items (128 bytes of answer each).
  const small = await startServer(t, { ingest: { maxDecodedBytes: 65536, maxRawBytes: 65536, maxLineBytes: 4096 } })
  const created = await small.api('POST', '/api/streams', { body: { name: 'bulk-many' } })
  t.equal(created.status, 201)
  const token = (await small.api('POST', '/api/streams/bulk-many/ingest-token', { body: {} })).body.token
  const tgt = { server: small, stream: 'bulk-many', token }
  const send = async (body: string) => {
    const res = await request(small.url + '/api/elastic/_bulk', { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/x-ndjson' }, body })
    return { status: res.statusCode, body: await res.body.json() as any }
  }
  const tooMany = await send(ndjson(Array.from({ length: 600 }, () => ({ delete: {} }))))
  t.equal(tooMany.status, 413)
  t.equal(tooMany.body.error, 'payload_too_large')
  const tooManyDocs = await send(ndjson(Array.from({ length: 300 }, (_, i) => [{ index: {} }, { n: i }]).flat()))
  t.equal(tooManyDocs.status, 413)
  t.equal((await storedEvents(tgt)).length, 0)
  const fits = await send(ndjson(Array.from({ length: 250 }, (_, i) => [{ index: {} }, { n: i }]).flat()))
  t.equal(fits.status, 200)
  t.equal(fits.body.items.length, 250)
  t.equal((await storedEvents(tgt)).length, 250)
})

t.test('a request refused by admission is answered item by item with 429s, Retry-After, and stores nothing', async (t) => {
  const limited = await startServer(t, { limits: { requestsPerMinute: 2 } })
  const created = await limited.api('POST', '/api/streams', { body: { name: 'bulk-429' } })
  t.equal(created.status, 201)
  const token = (await limited.api('POST', '/api/streams/bulk-429/ingest-token', { body: {} })).body.token
  const send = (body: string | Buffer, headers: Record<string, string> = {}) => request(limited.url + '/api/elastic/_bulk', {
    method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/x-ndjson', ...headers }, body,
  })
  const first = await send(ndjson([{ index: {} }, { path: '/first' }]))
  t.equal(first.statusCode, 200)
  await first.body.text()
  const second = await send(ndjson([{ index: {} }, { path: '/second' }]))
  t.equal(second.statusCode, 200)
  await second.body.text()

  // Over the rate: a gzip body of every kind of action, blank lines included, one document long.
  const refused = await send(gzipSync(ndjson([
    { create: { _index: 'ix', _id: 'a-1' } }, { path: '/third', pad: 'x'.repeat(70_000) },
    '',
    { index: { _id: 7 } }, '', { path: '/fourth' },
    { delete: { _id: 'd-1' } },
    { update: { _id: 'u-1' } }, { doc: { path: '/u' } },
  ])), { 'content-encoding': 'gzip' })
  t.equal(refused.statusCode, 200, 'a 200 with per-item 429s, as Elasticsearch rejects documents')
  t.ok(Number(refused.headers['retry-after']) >= 1, 'Retry-After')
  t.equal(refused.headers['x-ratelimit-remaining'], '0')
  const answer = await refused.body.json() as any
  t.equal(answer.errors, true)
  t.same(answer.items.map((i: any) => Object.keys(i)[0]), ['create', 'index', 'delete', 'update'])
  const inner = answer.items.map((i: any) => Object.values(i)[0])
  t.same(inner.map((i: any) => [i._index, i._id, i.status, i.error.type, i.error.sluice_code]), [
    ['ix', 'a-1', 429, 'es_rejected_execution_exception', 'rate_limited'],
    ['bulk-429', '7', 429, 'es_rejected_execution_exception', 'rate_limited'],
    ['bulk-429', 'd-1', 429, 'es_rejected_execution_exception', 'rate_limited'],
    ['bulk-429', 'u-1', 429, 'es_rejected_execution_exception', 'rate_limited'],
  ])
  t.same(inner.map((i: any) => i.error.line), [2, 6, 7, 9], 'each item names its document\'s line')
  t.ok(inner.every((i: any) => i.error.reason.length > 0), 'a reason, which rsyslog\'s retry ruleset requires')

  // A refused body that is no bulk body gets the answer it would get when admitted.
  const malformed = await send(ndjson([{ path: '/not-an-action' }]))
  t.equal(malformed.statusCode, 400)
  t.equal((await malformed.body.json() as any).error, 'bad_request')
  const orphan = await send(ndjson([{ index: {} }]))
  t.equal(orphan.statusCode, 400)
  await orphan.body.text()
  // A content type the route does not read: the whole-request 429 stands (the retry gets its 400).
  const plain = await send(ndjson([{ index: {} }, { path: '/x' }]), { 'content-type': 'text/plain' })
  t.equal(plain.statusCode, 429)
  t.ok(Number(plain.headers['retry-after']) >= 1)
  t.equal((await plain.body.json() as any).error, 'rate_limited')

  const tgt = { server: limited, stream: 'bulk-429', token }
  t.same((await storedEvents(tgt)).map((e) => e.path).sort(), ['/first', '/second'])
  t.equal(limited.app.metrics.rejected.get({ reason: 'rate_limited' }), 4, 'each refusal counted')
})

t.test('storage unavailable: the items that would have been stored are 429s, failed ones keep their 400, nothing is stored', { skip: onChdb && 'takes storage down through a TCP proxy: the embedded engine (chdb) runs in this process and has no connection to cut' }, async (t) => {
  const storage = await startTcpProxy(t, clickhouseUrl())
  const stalled = await startServer(t, { clickhouse: { url: storage.url }, writer: { retryTimeoutMs: 1_000, attemptTimeoutMs: 500 } })
  const tgt = await createIngestTarget(stalled, 'bulk-503')
  const body = ndjson([{ index: {} }, { path: '/kept' }, { create: {} }, { status: 'x' }, { index: { _id: 'z' } }, { path: '/kept-2' }])
  storage.down()
  const res = await request(stalled.url + '/api/elastic/_bulk', { method: 'POST', headers: { authorization: `Bearer ${tgt.token}`, 'content-type': 'application/x-ndjson' }, body })
  t.equal(res.statusCode, 200)
  t.ok(Number(res.headers['retry-after']) >= 1, 'Retry-After')
  const answer = await res.body.json() as any
  t.equal(answer.errors, true)
  t.same(answer.items.map((i: any) => { const v: any = Object.values(i)[0]; return [v.status, v.error.sluice_code] }),
    [[429, 'storage_unavailable'], [400, 'invalid_field'], [429, 'storage_unavailable']])
  t.equal(answer.items[2].index._id, 'z')
  storage.up()
  t.same(await storedEvents(tgt), [], 'nothing stored')
  const retried = await request(stalled.url + '/api/elastic/_bulk', { method: 'POST', headers: { authorization: `Bearer ${tgt.token}`, 'content-type': 'application/x-ndjson' }, body })
  const again = { body: await retried.body.json() as any }
  t.same(again.body.items.map((i: any) => (Object.values(i)[0] as any).status), [201, 400, 201])
  t.same((await storedEvents(tgt)).map((e) => e.path).sort(), ['/kept', '/kept-2'])
})
