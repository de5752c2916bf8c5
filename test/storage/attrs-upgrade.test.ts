// A database written before migration 11 keeps working after the upgrade (issue 22): its events,
// whose attributes live only in the attrs text, are found by their attributes through every read
// (q, stats?by=, export, context), beside events ingested after the upgrade.
//
// The old database is made the way the code before migration 11 made it: migrations 1-10 (the
// same files), metadata through the accounts code (its tables did not change), and event rows
// inserted with the column list that code inserted (no service, trace_id, span_id, attr_keys,
// attr_values), attrs the JSON text it wrote. Then a server starts on it and migrates.
import t from 'tap'
import { createLogger } from '../../lib/logger.ts'
import { migrate, migrations } from '../../lib/storage/migrate.ts'
import { MetadataStore } from '../../lib/storage/metadata-store.ts'
import { Accounts } from '../../lib/accounts/accounts.ts'
import { legacyAttrsBefore } from '../../lib/storage/legacy-attrs.ts'
import { generateToken } from '../../lib/auth/token-format.ts'
import { createTestDatabase } from '../helpers/clickhouse.ts'
import { startServer } from '../helpers/server.ts'
import { postIngest } from '../helpers/ingest.ts'
import type { IngestTarget } from '../helpers/ingest.ts'

const base = Date.now() - 3_600_000

/** The columns the code before migration 11 inserted, in its order. */
const oldColumns = ['org_id', 'stream', 'received_at', 'ts', 'host', 'path', 'method', 'src', 'user_agent', 'message', 'filename', 'level',
  'status', 'rt', 'bytes', 'attrs', 'seq', 'size']

function tsv (values: Record<string, string | number | null>): string {
  return oldColumns.map((c) => {
    const v = values[c]
    if (v === null || v === undefined) return '\\N'
    return String(v).replace(/\\/g, '\\\\').replace(/\t/g, '\\t').replace(/\n/g, '\\n')
  }).join('\t')
}

t.test('events stored before migration 11 are found by their attributes after it', async (t) => {
  const log = createLogger({ level: 'silent', fd: 2 })
  const db = await createTestDatabase(t)
  const secret = generateToken('pat')
  await migrate(db.clickhouse, log, migrations.filter((m) => m.id <= 10))
  const store = new MetadataStore({ clickhouse: db.clickhouse, log, refreshIntervalMs: 60_000 })
  await store.start()
  const accounts = new Accounts(store, { defaultIngestTtlS: 86_400, defaultPatTtlS: 0 })
  const { org } = await accounts.createOrgWithOwner('default', Date.now(), ['orgs:admin'], secret)
  await accounts.createStream(org.id, 'app', '', 30, Date.now())
  await accounts.createStream(org.id, 'other', '', 30, Date.now())
  await store.stop()
  const receivedAt = Date.now() - 60_000
  const oldRows = Array.from({ length: 20 }, (_, i) => tsv({
    org_id: org.id, stream: 'app', received_at: receivedAt, ts: base + i * 1000, host: i % 2 === 0 ? 'web-1' : 'web-2',
    message: `old event ${i}`, level: 'info', seq: 1000 + i, size: 100,
    attrs: JSON.stringify({ user_id: i % 4, 'service.name': 'legacy', order: { total: i + 0.5, note: 'a "quoted" one' }, trace_id: `t-${i}` }),
  }))
  // The other spellings of service, trace_id and span_id that ingest reads (lib/events/fields.ts aliases).
  const otherRows = [
    { service: { name: 'nested' }, traceId: 'tr-a', spanId: 's-a' },
    { service: 'plain', 'trace.id': 'tr-b', span_id: 's-b' },
    { service_name: 'loki', service: 7, trace: { id: 'tr-c' } },
    { traceId: '9E37A1B2C3D4E5F60718293A4B5C6D7E', spanId: 'ABCDEF0123456789' },
  ].map((attrs, i) => tsv({ org_id: org.id, stream: 'other', received_at: receivedAt, ts: base + i * 1000, host: 'h', message: `other ${i}`, seq: 2000 + i, size: 10, attrs: JSON.stringify(attrs) }))
  await db.clickhouse.insertRaw(`INSERT INTO events (${oldColumns.join(', ')}) FORMAT TabSeparated`, Buffer.from([...oldRows, ...otherRows].join('\n') + '\n'))

  const s = await startServer(t, { bootstrapToken: secret }, { database: db.database })
  t.ok(await legacyAttrsBefore(s.app.clickhouse) > 0, 'the upgrade sees rows from before it')
  // The stream exists already (made before the upgrade): only an ingest token is new.
  const tok = await s.api('POST', '/api/streams/app/ingest-token', { body: {} })
  const tgt: IngestTarget = { server: s, stream: 'app', token: tok.body.token }
  const r = await postIngest(tgt, JSON.stringify({ ts: base + 30_000, host: 'web-1', msg: 'new event', user_id: 1, order: { total: 99.5 } }))
  t.equal(r.status, 200)

  const range = `from=${base - 1000}&to=${base + 60_000}`
  const events = async (q: string): Promise<string[]> => {
    const page = await s.api('GET', `/api/streams/app/events?${range}&q=${encodeURIComponent(q)}`)
    t.equal(page.status, 200, q)
    return (page.body.events as Array<{ message: string }>).map((e) => e.message).sort()
  }
  t.same(await events('user_id:1'), ['new event', 'old event 1', 'old event 13', 'old event 17', 'old event 5', 'old event 9'], 'old and new rows by an attribute')
  t.same(await events('order.note:"a \\"quoted\\" one" order.total:>18'), ['old event 18', 'old event 19'], 'a nested attribute, a string unescaped, a number compared')
  t.same(await events('attrs.service.name:legacy user_id:3'), ['old event 11', 'old event 15', 'old event 19', 'old event 3', 'old event 7'], 'a dotted key spelt with its dots')
  t.same(await events('order.total:*'), (await events('')).filter((m) => m !== undefined), 'every event has order.total')
  t.same(await events('order:*'), await events(''), 'an object is present in old rows too (explore20 F4)')
  t.same(await events('-order:*'), [], 'and its negation')
  t.same(await events('service:*'), (await events('')).filter((m) => m.startsWith('old')), 'service present in old rows by their service.name')
  const stats = await s.api('GET', `/api/streams/app/stats?${range}&by=user_id`)
  t.same(stats.body.groups, [{ value: '1', count: 6 }, { value: '0', count: 5 }, { value: '2', count: 5 }, { value: '3', count: 5 }], 'grouped across old and new rows')
  const exported = await fetch(`${s.url}/api/streams/app/export?${range}&q=${encodeURIComponent('user_id:2')}`, { headers: { authorization: `Bearer ${s.adminToken}` } })
  t.equal((await exported.text()).trim().split('\n').length, 5, 'export finds old rows by an attribute')

  // service, trace_id and span_id became columns in migration 11: old rows hold them in attrs.
  const oldOnes = (await events('')).filter((m) => m.startsWith('old'))
  t.same(await events('service:legacy'), oldOnes, 'service from an old row\'s service.name')
  t.same(await events('-service:legacy'), ['new event'], 'and its negation')
  t.same(await events('service:leg* trace_id:t-3'), ['old event 3'], 'trace_id from an old row')
  t.same(await events('trace_id:~"^t-1[0-9]$" -host:web-1'), ['old event 11', 'old event 13', 'old event 15', 'old event 17', 'old event 19'])
  const byService = await s.api('GET', `/api/streams/app/stats?${range}&by=service`)
  t.same(byService.body.groups, [{ value: 'legacy', count: 20 }], 'stats?by=service counts old rows')
  const fields = await s.api('GET', `/api/streams/app/fields?${range}`)
  t.match((fields.body.fields as Array<{ name: string }>).find((f) => f.name === 'service'), { kind: 'column', count: 20, top: [{ value: 'legacy', count: 20 }] }, '/fields')
  // Their attributes too, read from their attrs text (explore20 F2), with the new event's.
  const attributes = (fields.body.fields as Array<{ name: string, kind: string, type: string, count: number, top: unknown[] }>).filter((f) => f.kind === 'attribute')
  t.match(attributes.find((f) => f.name === 'user_id'), { type: 'number', count: 21, top: [{ value: '1', count: 6 }, { value: '0', count: 5 }, { value: '2', count: 5 }] }, '/fields lists old rows\' attributes')
  t.match(attributes.find((f) => f.name === 'order.total'), { type: 'number', count: 21 })
  t.match(attributes.find((f) => f.name === 'order.note'), { type: 'string', count: 20, top: [{ value: 'a "quoted" one', count: 20 }] })
  t.same(attributes.filter((f) => ['service.name', 'attrs.service.name', 'trace_id', 'attrs.trace_id'].includes(f.name)), [],
    'not the keys read as the service and trace_id columns')
  const anchor = (await s.api('GET', `/api/streams/app/events?${range}&q=${encodeURIComponent('trace_id:t-4')}`)).body.events[0]
  const context = await s.api('GET', `/api/streams/app/events/${encodeURIComponent(anchor.id)}/context?before=2&after=2`)
  t.same([...context.body.before, ...context.body.after].map((e: { message: string }) => e.message), ['old event 0', 'old event 2', 'old event 6', 'old event 8'],
    'context by the same host and service: old rows of service legacy, not the new event without one')
  const other = async (q: string): Promise<string[]> => {
    const page = await s.api('GET', `/api/streams/other/events?${range}&q=${encodeURIComponent(q)}`)
    t.equal(page.status, 200, q)
    return (page.body.events as Array<{ message: string }>).map((e) => e.message).sort()
  }
  t.same(await other('service:nested trace_id:tr-a span_id:s-a'), ['other 0'], 'nested service.name, traceId, spanId')
  t.same(await other('service:plain trace_id:tr-b span_id:s-b'), ['other 1'], 'service, trace.id spelt with its dot, span_id')
  t.same(await other('service:loki trace_id:tr-c'), ['other 2'], 'service_name when service is no string; nested trace.id')
  t.same(await other('span_id:*'), ['other 0', 'other 1', 'other 3'])
  // A hex id stored in capitals before the upgrade reads in lowercase, as ingest stores one now.
  t.same(await other('trace_id:9e37a1b2c3d4e5f60718293a4b5c6d7e span_id:ABCDEF0123456789'), ['other 3'], 'a hex id in any case (explore20)')
  const byTrace = await s.api('GET', `/api/streams/other/stats?${range}&by=trace_id`)
  t.match(byTrace.body.groups, [{ value: '9e37a1b2c3d4e5f60718293a4b5c6d7e', count: 1 }], 'grouped by its lowercase text')
})
