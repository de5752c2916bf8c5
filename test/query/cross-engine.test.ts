// The same events on ClickHouse 18.16 and on 26.x (the embedded engine) read the same: one body
// ingested into Sluice on each, then events (every page), stats?by=, /fields, /export and the
// context around events compared for a list of q, answer for answer. What may differ is left
// out of the comparison: ids (seq starts at a random base per request) and received_at, and the
// rt percentiles (each version's t-digest estimates them its own way).
// Runs in `npm test` (the 18.16 test server), when the embedded engine is installed (CI installs it).
import t from 'tap'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { chdbEngineDir, chdbInstallCommand } from '../../lib/storage/chdb-engine.ts'
import { onChdb } from '../helpers/clickhouse.ts'
import { startServer } from '../helpers/server.ts'
import type { TestServer } from '../helpers/server.ts'
import { createIngestTarget, postIngest } from '../helpers/ingest.ts'
import { createRandom } from '../../bench/payload.ts'

// Two servers, one of them an engine in this process, and ~300 reads: about a minute on a
// loaded 2-core box, so past the default 120 s of a file under coverage.
t.setTimeout(300_000)

const skip = (onChdb && 'needs the 18.16 test server (npm test)') ||
  (!existsSync(join(chdbEngineDir, 'node_modules', 'chdb', 'package.json')) && `the embedded engine is not installed (${chdbInstallCommand})`)

const now = Date.now()
const base = now - 3_600_000
const range = `from=${base - 1000}&to=${now + 1000}`

/** 4,000 seeded events: access logs and application logs with attributes, in several scripts and cases. */
function body (): string {
  const random = createRandom(15)
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]
  const words = ['payment', 'declined', 'Timeout', 'card', 'issuer', 'unreachable', 'ÉCHEC', 'straße', 'İstanbul', 'ok', '42', '3.14', 'ΣΊΣΥΦΟΣ', '😀', 'x"y', 'back\\slash']
  const lines: string[] = []
  for (let i = 0; i < 4000; i++) {
    const ts = base + Math.floor(i * 3_000_000 / 4000) + (i % 5 === 0 ? 0 : i % 3)
    if (random() < 0.4) {
      lines.push(JSON.stringify({
        ts, host: pick(['web-1', 'WEB-3', 'web-ä']), path: pick(['/', '/login', `/api/v1/items/${Math.floor(random() * 30)}`, '/Ünï']),
        method: pick(['GET', 'POST']), status: pick([200, 201, 404, 500, 503]), rt: Math.round(random() * 1000) / 1000, bytes: Math.floor(random() * 5000), user_agent: pick(['curl/8', 'Mozilla/5.0'])
      }))
      continue
    }
    const event: Record<string, unknown> = {
      ts: new Date(ts).toISOString(),
      message: Array.from({ length: 1 + Math.floor(random() * 5) }, () => pick(words)).join(pick([' ', '/', ': '])),
      level: pick(['info', 'INFO', 'warn', 'error', 'debug', 'verbose']),
      service: pick(['checkout', 'cart', 'Auth', 'ŞERVİS']),
      user_id: Math.floor(random() * 200),
      order: { total: Math.round(random() * 50_000) / 100, currency: pick(['EUR', 'USD', 'eur']) },
    }
    if (random() < 0.3) event.flag = pick([true, false, null])
    if (random() < 0.3) event.tags = [pick(words), 1]
    if (random() < 0.1) event.host = 'attr-host'
    if (random() < 0.5) event.trace_id = Math.floor(random() * 1e9).toString(16).padStart(32, '0')
    lines.push(JSON.stringify(event))
  }
  return lines.join('\n') + '\n'
}

const queries = ['', '*', 'service:checkout', 'service:ŞERVİS', 'level:error', 'level:warn OR level:>=error', 'user_id:42', 'user_id:>150',
  'order.total:<10', 'order.currency:eur', 'flag:true', 'flag:null', '-flag:*', 'tags:*', 'attrs.host:*', 'host:attr-host', 'host:web-ä',
  'status:>=500', 'status:404 path:/login', 'path:/api*', 'path:~"^/api/v[0-9]+/items/1[0-9]$"', 'message:~"^\\w+$"', 'timeout',
  '"card issuer"', 'straße', 'istanbul', 'İSTANBUL', 'σίσυφοσ', '😀', '"x\\"y"', 'trace_id:0000*', 'rt:>0.5', '(service:cart OR service:Auth) -level:info', '42']

t.test('reads on 18.16 and on 26.x answer the same for the same events', { skip }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-cross-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const servers: TestServer[] = [
    await startServer(t),
    await startServer(t, { clickhouse: { url: `chdb:${dir}` } }, { database: `cross_${process.pid}` }),
  ]
  const text = body()
  for (const s of servers) t.equal((await postIngest(await createIngestTarget(s, 'app'), text)).body.ingested, 4000)

  const get = async (s: TestServer, path: string): Promise<{ status: number, text: string }> => {
    const res = await fetch(s.url + path, { headers: { authorization: `Bearer ${s.adminToken}` } })
    return { status: res.status, text: await res.text() }
  }
  const stripEvent = ({ id: _id, received_at: _r, ...rest }: Record<string, unknown>): Record<string, unknown> => rest
  const noRequestId = (answer: Record<string, unknown>): Record<string, unknown> => { delete answer.request_id; return answer }
  const events = async (s: TestServer, q: string): Promise<unknown> => {
    const out: unknown[] = []
    let cursor: string | null = null
    for (;;) {
      const r = await get(s, `/api/streams/app/events?${range}&limit=500&q=${encodeURIComponent(q)}${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`)
      if (r.status !== 200) return [r.status, noRequestId(JSON.parse(r.text))]
      const page = JSON.parse(r.text) as { events: Array<Record<string, unknown>>, next_cursor: string | null }
      out.push(...page.events.map(stripEvent))
      cursor = page.next_cursor
      if (cursor === null) return out
    }
  }
  const reads: Record<string, (s: TestServer, q: string) => Promise<unknown>> = {
    events,
    stats: async (s, q) => {
      const r = await get(s, `/api/streams/app/stats?${range}&step=10m&by=service&sample=0&q=${encodeURIComponent(q)}`)
      return [r.status, JSON.parse(r.text, (key, value) => key.startsWith('rt_p') || key === 'slowest_paths' || key === 'request_id' ? undefined : value)]
    },
    fields: async (s, q) => {
      const r = await get(s, `/api/streams/app/fields?${range}&top=8&q=${encodeURIComponent(q)}`)
      return [r.status, noRequestId(JSON.parse(r.text))]
    },
    export: async (s, q) => {
      const r = await get(s, `/api/streams/app/export?${range}&q=${encodeURIComponent(q)}`)
      return r.status !== 200 ? [r.status, noRequestId(JSON.parse(r.text))] : r.text.split('\n').filter((l) => l !== '').map((l) => stripEvent(JSON.parse(l)))
    },
  }
  let compared = 0
  for (const q of queries) {
    for (const [name, read] of Object.entries(reads)) {
      const [old, current] = await Promise.all(servers.map(async (s) => await read(s, q)))
      if (JSON.stringify(old) !== JSON.stringify(current)) t.strictSame(current, old, `${name} q=${JSON.stringify(q)}`)
      else compared++
    }
  }
  t.equal(compared, queries.length * Object.keys(reads).length, `${compared} reads answered the same on both`)
  const all = await events(servers[0], '') as unknown[]
  t.equal(all.length, 4000)

  // Context: the same event on each (the nth of the stream), its neighbours by several `same`.
  const ids = await Promise.all(servers.map(async (s) => (JSON.parse((await get(s, `/api/streams/app/events?${range}&limit=1000`)).text) as { events: Array<{ id: string }> }).events.map((e) => e.id)))
  let contexts = 0
  for (const n of [0, 17, 333, 999]) {
    for (const extra of ['', '&same=user_id', '&same=level,order.currency', '&same=', '&before=0&after=3']) {
      const [old, current] = await Promise.all(servers.map(async (s, i) => {
        const r = await get(s, `/api/streams/app/events/${ids[i][n]}/context?before=5&after=5${extra}`)
        const c = JSON.parse(r.text) as { before: Array<Record<string, unknown>>, event: Record<string, unknown>, after: Array<Record<string, unknown>> }
        return [r.status, c.before.map(stripEvent), stripEvent(c.event), c.after.map(stripEvent)]
      }))
      if (JSON.stringify(old) !== JSON.stringify(current)) t.strictSame(current, old, `context of event ${n}${extra}`)
      else contexts++
    }
  }
  t.equal(contexts, 20, 'the context of 4 events by 5 `same` lists answered the same on both')
})
