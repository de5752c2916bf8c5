// Content types, encodings and framing through the real server: every accepted type and encoding,
// clear 400s otherwise, BOM/CRLF/blank lines/missing final newline, JSON array bodies.
import t from 'tap'
import { gzipSync, deflateSync, deflateRawSync, brotliCompressSync, zstdCompressSync } from 'node:zlib'
import { startServer } from '../helpers/server.ts'
import type { TestServer } from '../helpers/server.ts'
import { countEvents, createIngestTarget, postIngest, storedEvents } from '../helpers/ingest.ts'
import type { IngestTarget } from '../helpers/ingest.ts'

let s: TestServer
let tgt: IngestTarget
t.before(async () => {
  s = await startServer(t)
  tgt = await createIngestTarget(s, 'bodies')
})

const sample = '{"path":"/1"}\n{"log":"two"}\n{"path":"/3","status":404}\n'

t.test('accepted content types, parameters ignored', async (t) => {
  for (const type of ['application/x-ndjson', 'application/jsonl', 'application/x-jsonlines', 'application/json', 'application/x-ndjson; charset=utf-8', 'Application/X-NDJSON']) {
    const r = await postIngest(tgt, sample, { 'content-type': type })
    t.equal(r.status, 200, type)
    t.equal(r.body.ingested, 3)
    t.type(r.headers['x-ratelimit-limit'], 'string')
  }
})

t.test('other content types are 400 unsupported_content_type, nothing stored', async (t) => {
  const before = await countEvents(tgt)
  for (const type of ['text/plain', 'application/msgpack', 'application/x-www-form-urlencoded']) {
    const r = await postIngest(tgt, sample, { 'content-type': type })
    t.equal(r.status, 400, type)
    t.equal(r.body.error, 'unsupported_content_type')
  }
  const msgpack = await postIngest(tgt, sample, { 'content-type': 'application/msgpack' })
  t.match(msgpack.body.message, /json_lines/, 'msgpack senders are told what to set')
  t.equal(await countEvents(tgt), before)
})

t.test('every encoding round-trips', async (t) => {
  const raw = Buffer.from(sample)
  const cases: Array<[string, Buffer]> = [
    ['gzip', gzipSync(raw)], ['deflate', deflateSync(raw)], ['deflate', deflateRawSync(raw)],
    ['br', brotliCompressSync(raw)], ['zstd', zstdCompressSync(raw)], ['identity', raw], ['GZIP', gzipSync(raw)],
  ]
  for (const [encoding, body] of cases) {
    const r = await postIngest(tgt, body, { 'content-encoding': encoding })
    t.equal(r.status, 200, encoding)
    t.match(r.body, { ingested: 3, bytes: raw.length })
  }
  const twoMembers = Buffer.concat([gzipSync('{"path":"/m1"}\n'), gzipSync('{"path":"/m2"}\n')])
  t.match((await postIngest(tgt, twoMembers, { 'content-encoding': 'gzip' })).body, { ingested: 2 })
})

t.test('unknown encodings are 400; corrupt or truncated data 400 malformed_body; nothing stored', async (t) => {
  const before = await countEvents(tgt)
  for (const encoding of ['compress', 'gzip, br', 'lz4']) {
    const r = await postIngest(tgt, sample, { 'content-encoding': encoding })
    t.equal(r.status, 400, encoding)
    t.equal(r.body.error, 'unsupported_content_encoding')
  }
  const gz = gzipSync(Buffer.from(sample.repeat(100)))
  const cases: Array<[string, Buffer]> = [
    ['gzip', gz.subarray(0, gz.length - 10)], ['gzip', Buffer.from('not gzip at all')],
    ['br', Buffer.from('xxxxxxxx')], ['zstd', Buffer.from('definitely not zstd')], ['deflate', Buffer.from([0x78, 0x9c, 1, 2, 3])],
  ]
  for (const [encoding, body] of cases) {
    const r = await postIngest(tgt, body, { 'content-encoding': encoding })
    t.equal(r.status, 400, `${encoding} ${body.length}`)
    t.equal(r.body.error, 'malformed_body')
  }
  t.equal(await countEvents(tgt), before)
})

t.test('framing: BOM, CRLF, blank lines, no final newline', async (t) => {
  const own = await createIngestTarget(s, 'framing')
  const body = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"path":"/a"}\r\n\r\n   \n{"path":"/b"}\r\n{"path":"/c"}')])
  const r = await postIngest(own, body)
  t.equal(r.status, 200)
  t.match(r.body, { ingested: 3, failed: 0 })
  t.same((await storedEvents(own)).map((e) => e.path).sort(), ['/a', '/b', '/c'])
  const numbered = await postIngest(own, '\n\n{"path":"/d"}\nbad\n')
  t.same(numbered.body.failures.map((f: { line: number }) => f.line), [4], 'blank lines keep their line numbers')
})

t.test('empty bodies are 400 empty_body', async (t) => {
  for (const body of ['', '\n\n', '   \r\n', '\ufeff']) {
    const r = await postIngest(tgt, body)
    t.equal(r.status, 400, JSON.stringify(body))
    t.equal(r.body.error, 'empty_body')
  }
  const r = await postIngest(tgt, gzipSync(''), { 'content-encoding': 'gzip' })
  t.equal(r.body.error, 'empty_body')
})

t.test('a JSON array body: element k is line k', async (t) => {
  const own = await createIngestTarget(s, 'arrays')
  const body = '  [{"path":"/x","msg":"has ] and } and \\" inside"},\n {"nested":{"a":[1,{"b":2}]},"path":"/y"},\n 7, {"status":"bad"}]'
  const r = await postIngest(own, body, { 'content-type': 'application/json' })
  t.equal(r.status, 200)
  t.match(r.body, { ingested: 2, failed: 2 })
  t.same(r.body.failures.map((f: { line: number, code: string }) => [f.line, f.code]), [[3, 'not_an_object'], [4, 'invalid_field']])
  const rows = await storedEvents(own)
  t.same(rows.map((e) => e.path).sort(), ['/x', '/y'])
  t.equal(rows.find((e) => e.path === '/x')!.message, 'has ] and } and " inside', 'msg is the message (issue 15)')
})

t.test('blank-line bombs: megabytes of blank lines and one line is 1 ingested; blank lines alone are 400 empty_body', async (t) => {
  const MiB = 1024 * 1024
  const blanks = Buffer.alloc(24 * MiB, '\n')
  const before = await countEvents(tgt)
  const one = await postIngest(tgt, gzipSync(Buffer.concat([blanks, Buffer.from('{"path":"/among-blanks"}\n'), blanks])), { 'content-encoding': 'gzip' })
  t.equal(one.status, 200)
  t.equal(one.body.ingested, 1)
  t.equal(one.body.failed, 0)
  t.equal(await countEvents(tgt), before + 1)
  const none = await postIngest(tgt, gzipSync(Buffer.concat([blanks, blanks])), { 'content-encoding': 'gzip' })
  t.equal(none.status, 400)
  t.equal(none.body.error, 'empty_body')
  t.equal(await countEvents(tgt), before + 1)
})
