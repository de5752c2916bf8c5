// The real Elasticsearch clients from npm against a real Sluice: @elastic/elasticsearch (info, the
// product check on its first answer, client.bulk, helpers.bulk with refreshOnCompletion) and
// pino-elasticsearch; each record read back from ClickHouse, stored once.
import t from 'tap'
import { once } from 'node:events'
import { Client } from '@elastic/elasticsearch'
import pino from 'pino'
import pinoElasticModule from 'pino-elasticsearch'
import { startServer } from '../helpers/server.ts'
import type { TestServer } from '../helpers/server.ts'
import { createIngestTarget, storedEvents } from '../helpers/ingest.ts'
import type { StoredEvent } from '../helpers/ingest.ts'

// A CommonJS package (module.exports is the function) typed with `export default`: at run time the
// default import is the function itself.
const pinoElastic = pinoElasticModule as unknown as typeof pinoElasticModule.default

let s: TestServer
t.before(async () => { s = await startServer(t) })

/** The event's message: the message column once the field mapping fills it, else the key in attrs. */
function messageOf (e: StoredEvent, key: string): unknown {
  return e.message ?? JSON.parse(e.attrs)[key]
}

t.test('@elastic/elasticsearch: info passes the product check, client.bulk and helpers.bulk store every document once', async (t) => {
  const tgt = await createIngestTarget(s, 'es-client')
  const client = new Client({ node: `${s.url}/api/elastic`, auth: { bearer: tgt.token }, maxRetries: 0 })
  t.teardown(() => client.close())

  const info = await client.info()
  t.match(info.version.number, /^8\./)
  t.equal(info.tagline, 'You Know, for Search')

  const bulk = await client.bulk({
    operations: [
      { index: { _index: 'app-logs' } }, { '@timestamp': new Date().toISOString(), message: 'bulk one', path: '/one' },
      { create: { _index: 'app-logs', _id: 'fixed' } }, { message: 'bulk two', path: '/two', status: 201 },
      { index: { _index: 'app-logs' } }, { path: '/bad', status: 'nope' },
    ],
  })
  t.equal(bulk.errors, true)
  t.same(bulk.items.map((i) => Object.values(i)[0]!.status), [201, 201, 400])
  t.same(bulk.items[1], { create: { status: 201 } }, 'a stored item is its status only (docs/api.md 6.10): the client reads nothing else of it')
  t.equal(bulk.items[2].index!.error!.type, 'mapper_parsing_exception')

  const docs = Array.from({ length: 250 }, (_, i) => ({ path: `/helper/${i}`, message: `helper ${i}`, n: i }))
  const dropped: unknown[] = []
  const stats = await client.helpers.bulk({
    datasource: docs,
    onDocument: () => ({ create: { _index: 'app-logs' } }),
    onDrop: (d) => { dropped.push(d) },
    flushBytes: 4096, // several bulk requests
    refreshOnCompletion: 'app-logs',
  })
  t.equal(stats.successful, 250)
  t.equal(stats.failed, 0)
  t.same(dropped, [])

  const rows = await storedEvents(tgt)
  t.equal(rows.length, 252)
  const paths = rows.map((e) => e.path)
  t.equal(new Set(paths).size, 252, 'each document once')
  for (let i = 0; i < 250; i++) t.ok(paths.includes(`/helper/${i}`))
  t.equal(messageOf(rows.find((e) => e.path === '/two')!, 'message'), 'bulk two')
  t.equal(rows.find((e) => e.path === '/two')!.status, 201)
})

t.test('@elastic/elasticsearch with an API key holding the ingest token', async (t) => {
  const tgt = await createIngestTarget(s, 'es-apikey')
  const client = new Client({ node: `${s.url}/api/elastic`, auth: { apiKey: { id: 'sluice', api_key: tgt.token } }, maxRetries: 0 })
  t.teardown(() => client.close())
  const r = await client.bulk({ operations: [{ index: { _index: 'x' } }, { path: '/via-api-key' }] })
  t.equal(r.errors, false)
  t.same((await storedEvents(tgt)).map((e) => e.path), ['/via-api-key'])
})

t.test('pino-elasticsearch: every log record stored once', async (t) => {
  const tgt = await createIngestTarget(s, 'es-pino')
  const stream = pinoElastic({ index: 'pino', node: `${s.url}/api/elastic`, auth: { bearer: tgt.token }, esVersion: 8, flushBytes: 512, flushInterval: 100 })
  const failures: unknown[] = []
  stream.on('insertError', (e: unknown) => { failures.push(e) })
  stream.on('error', (e: unknown) => { failures.push(e) })
  const inserted = once(stream, 'insert')
  const log = pino({ level: 'info' }, stream)
  for (let i = 0; i < 40; i++) log.info({ path: `/pino/${i}` }, `pino record ${i}`)
  stream.end()
  const [insertStats] = await inserted
  t.equal(insertStats.successful, 40)
  t.same(failures, [])
  const rows = await storedEvents(tgt)
  t.equal(rows.length, 40)
  for (let i = 0; i < 40; i++) {
    const row = rows.find((e) => e.path === `/pino/${i}`)
    t.ok(row, `record ${i}`)
    t.equal(messageOf(row!, 'msg'), `pino record ${i}`)
  }
})
