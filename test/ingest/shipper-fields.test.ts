// Shippers' field names end to end (issue 15): pino, Elastic Common Schema, OpenTelemetry-shaped
// and nginx JSON lines through a real server into ClickHouse, read back by the events API; and
// the level column in q, for /events and the live tail.
import t from 'tap'
import { startServer } from '../helpers/server.ts'
import type { TestServer } from '../helpers/server.ts'
import { createIngestTarget, postIngest } from '../helpers/ingest.ts'
import type { IngestTarget } from '../helpers/ingest.ts'
import { openSse } from '../helpers/sse.ts'

let s: TestServer
let tgt: IngestTarget
const now = Date.now()
const base = now - 60_000
t.before(async () => {
  s = await startServer(t, { writer: { flushIntervalMs: 20, minInsertIntervalMs: 0 } })
  tgt = await createIngestTarget(s, 'shippers')
})

const lines = [
  // pino
  { level: 30, time: base + 1, pid: 7, hostname: 'pino-host', msg: 'request done', req: { id: 1 } },
  { level: 50, time: base + 2, hostname: 'pino-host', msg: 'request failed', err: { type: 'Error' } },
  // Elastic Common Schema (nested), as Filebeat or pino-elasticsearch's ecs format write it
  {
    '@timestamp': new Date(base + 3).toISOString(), message: 'GET /ecs', host: { name: 'ecs-host' }, log: { level: 'warn', file: { path: '/var/log/ecs.log' } },
    http: { request: { method: 'GET' }, response: { status_code: 404, body: { bytes: 12 } } }, url: { path: '/ecs' }, source: { address: '10.0.0.3' },
    user_agent: { original: 'Filebeat' },
  },
  // OpenTelemetry-shaped (a log record as JSON, attributes flattened)
  { timestamp: String((base + 4) * 1e6), severity_text: 'ERROR', severityNumber: 17, body: 'otel says boom', 'http.request.method': 'POST', 'url.path': '/otel', 'service.name': 'api' },
  // nginx JSON log_format: every value a string
  { time: new Date(base + 5).toISOString(), remote_addr: '10.0.0.5', request_method: 'GET', uri: '/nginx', status: '200', body_bytes_sent: '512', request_time: '0.012', http_user_agent: 'curl/8' },
  // Python logging (JSON formatter) and syslog-style
  { levelname: 'WARNING', message: 'python warns', timestamp: (base + 6) / 1000 },
  { severity: 'crit', hostname: 'syslog-host', message: 'disk on fire', date: base + 7 },
]

t.test('each shape lands in the right columns', async (t) => {
  const r = await postIngest(tgt, lines.map((l) => JSON.stringify(l)).join('\n'))
  t.match(r.body, { ingested: lines.length, failed: 0 })
  const page = await s.api('GET', `/api/streams/shippers/events?from=${base - 1000}&to=${now + 60_000}`)
  t.equal(page.status, 200)
  const byTs = new Map<number, Record<string, unknown>>(page.body.events.map((e: Record<string, unknown>) => [e.ts as number, e]))
  t.match(byTs.get(base + 1), { host: 'pino-host', message: 'request done', level: 'info', attrs: { pid: 7, req: { id: 1 } } })
  t.match(byTs.get(base + 2), { level: 'error', message: 'request failed' })
  t.match(byTs.get(base + 3), { host: 'ecs-host', message: 'GET /ecs', level: 'warn', filename: '/var/log/ecs.log', method: 'GET', status: 404, bytes: 12, path: '/ecs', src: '10.0.0.3', user_agent: 'Filebeat' })
  t.match(byTs.get(base + 4), { level: 'error', message: 'otel says boom', method: 'POST', path: '/otel', service: 'api', attrs: { severityNumber: 17 } })
  t.match(byTs.get(base + 5), { src: '10.0.0.5', method: 'GET', path: '/nginx', status: 200, bytes: 512, rt: 0.012, user_agent: 'curl/8', attrs: {} })
  t.match(byTs.get(base + 6), { level: 'warn', message: 'python warns' })
  t.match(byTs.get(base + 7), { level: 'fatal', host: 'syslog-host', message: 'disk on fire' })
  t.equal(page.body.events.length, lines.length, 'every line stored once, with its own ts')
})

t.test('q filters on level in /events', async (t) => {
  const q = async (filter: string): Promise<number[]> => {
    const r = await s.api('GET', `/api/streams/shippers/events?from=${base - 1000}&to=${now + 60_000}&q=${encodeURIComponent(filter)}`)
    t.equal(r.status, 200, filter)
    return r.body.events.map((e: { ts: number }) => e.ts - base).sort((a: number, b: number) => a - b)
  }
  t.same(await q('level:error'), [2, 4])
  t.same(await q('level:>=warn'), [2, 3, 4, 6, 7], 'warn or worse')
  t.same(await q('-level:*'), [5], 'the nginx line has no level')
  t.same(await q('level:<warn'), [1])
  const bad = await s.api('GET', `/api/streams/shippers/events?q=${encodeURIComponent('level:loud')}`)
  t.equal(bad.status, 400)
  t.equal(bad.body.error, 'invalid_query')
})

t.test('q filters on level in the tail; the frames carry level', async (t) => {
  const warn = await openSse(s.url, '/api/streams/shippers/tail?q=' + encodeURIComponent('level:>=warn'), s.adminToken)
  t.teardown(() => warn.close())
  await warn.next((f) => f.event === 'comment')
  const r = await postIngest(tgt, [
    JSON.stringify({ level: 'info', msg: 'quiet' }),
    JSON.stringify({ level: 40, msg: 'loud' }),
    JSON.stringify({ msg: 'no level' }),
  ].join('\n'))
  t.equal(r.body.ingested, 3)
  const frame = JSON.parse((await warn.next((f) => f.event === 'event')).data)
  t.match(frame, { level: 'warn', message: 'loud' })
  await warn.next((f) => f.event === 'stats' && JSON.parse(f.data).count > 0, 3000)
  t.equal(warn.frames.filter((f) => f.event === 'event').length, 0, 'nothing after the warn event reached the filtered tail')
})
