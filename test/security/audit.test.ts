// GET /api/audit: token, stream and org changes (who, what, when, request id) and bursts of
// failed authentication, newest first in pages, scoped to the caller's org, never a secret.
import t from 'tap'
import { startServer } from '../helpers/server.ts'
import type { TestServer } from '../helpers/server.ts'
import { authFailureThreshold } from '../../lib/audit/audit-log.ts'
import { hashToken } from '../../lib/auth/token-format.ts'

let clock = Date.UTC(2026, 0, 1, 12, 0, 30)
let s: TestServer
t.before(async () => { s = await startServer(t, {}, { now: () => clock }) })

interface Entry {
  id: string, at: string, action: string, org_id: string | null, actor: { user_id: string, token_id: string } | null,
  target: { kind: string, id: string } | null, request_id: string | null, source: string, details: Record<string, unknown>
}

async function allEntries (token?: string): Promise<Entry[]> {
  const out: Entry[] = []
  let cursor: string | null = null
  do {
    const r: { status: number, body: { entries: Entry[], next_cursor: string | null } } =
      await s.api('GET', `/api/audit?limit=3${cursor ? `&cursor=${cursor}` : ''}`, { token })
    if (r.status !== 200) throw new Error(`audit ${r.status}`)
    out.push(...r.body.entries)
    cursor = r.body.next_cursor
  } while (cursor)
  return out
}

t.test('changes are logged with who, what, when and the request id, newest first, without secrets', async (t) => {
  const admin = s.app.store.patByHash(hashToken(s.adminToken))!
  const secrets: string[] = []
  const step = async (method: string, path: string, body?: unknown): Promise<{ body: any, requestId: string }> => {
    clock += 1000
    const r = await s.api(method, path, { body })
    t.ok(r.status < 300, `${method} ${path}: ${r.status}`)
    if (r.body?.token) secrets.push(typeof r.body.token === 'string' ? r.body.token : r.body.token.token)
    return { body: r.body, requestId: String(r.headers['x-request-id']) }
  }
  const created = await step('POST', '/api/streams', { name: 'audited', description: 'd' })
  const patched = await step('PATCH', '/api/streams/audited', { retention_days: 7 })
  const ingest = await step('POST', '/api/streams/audited/ingest-token', { name: 'shipper' })
  const revokedIngest = await step('DELETE', `/api/streams/audited/ingest-tokens/${ingest.body.id}`)
  const pat = await step('POST', '/api/tokens', { name: 'ci', abilities: ['data:read'] })
  const revokedPat = await step('DELETE', `/api/tokens/${pat.body.id}`)
  const org = await step('POST', '/api/orgs', { name: 'audited-org' })
  const deleted = await step('DELETE', '/api/streams/audited')

  const entries = await allEntries()
  t.same(entries.map((e) => [e.action, e.target?.id, e.request_id]), [
    ['stream.deleted', 'audited', deleted.requestId],
    ['org.created', org.body.org.id, org.requestId],
    ['token.revoked', pat.body.id, revokedPat.requestId],
    ['token.created', pat.body.id, pat.requestId],
    ['ingest_token.revoked', ingest.body.id, revokedIngest.requestId],
    ['ingest_token.created', ingest.body.id, ingest.requestId],
    ['stream.updated', 'audited', patched.requestId],
    ['stream.created', 'audited', created.requestId],
  ], 'every change, newest first, across pages of 3')
  for (const e of entries) {
    t.same(e.actor, { user_id: admin.userId, token_id: admin.id }, `${e.action}: who`)
    t.equal(e.org_id, admin.orgId)
    t.match(e.source, /127\.0\.0\.1/)
  }
  t.equal(entries[0].at, new Date(clock).toISOString(), 'when, by the app clock')
  t.same(entries.find((e) => e.action === 'token.created')!.details, { name: 'ci', abilities: ['data:read'], expires_at: null })
  t.same(entries.find((e) => e.action === 'stream.updated')!.details, { description: 'd', retention_days: 7 })
  const text = JSON.stringify(entries)
  for (const secret of [...secrets, s.adminToken]) {
    t.notOk(text.includes(secret), 'no secret in the log')
    t.notOk(text.includes(hashToken(secret)), 'no token hash in the log')
  }
  const [raw] = await s.app.clickhouse.query<{ text: string }>('SELECT groupArray(details) AS text FROM audit_log')
  for (const secret of secrets) t.notOk(JSON.stringify(raw).includes(secret), 'nor in the stored rows')

  // The new org's owner holds `*`, not orgs:admin: the audit log is not theirs to read.
  const owner = org.body.token.token
  const denied = await s.api('GET', '/api/audit', { token: owner })
  t.same([denied.status, denied.body.error], [403, 'insufficient_ability'])
})

t.test('another org\'s changes are not listed', async (t) => {
  const other = (await s.api('POST', '/api/orgs', { body: { name: 'elsewhere' } })).body
  t.equal((await s.api('POST', '/api/streams', { token: other.token.token, body: { name: 'theirs' } })).status, 201)
  const entries = await allEntries()
  t.notOk(entries.some((e) => e.target?.id === 'theirs'), 'a stream of another org is not in this org\'s log')
  const [stored] = await s.app.clickhouse.query<{ n: number }>(`SELECT count() AS n FROM audit_log WHERE org_id = '${other.org.id}' AND target_id = 'theirs'`)
  t.equal(Number(stored.n), 1, 'it is in that org\'s')
})

t.test('a burst of failed authentication from one address is one entry per minute; a few failures are none', async (t) => {
  clock = Date.UTC(2026, 0, 1, 13, 0, 5)
  const bad = 'slp_' + 'A'.repeat(36)
  for (let i = 0; i < authFailureThreshold + 2; i++) {
    const r = await s.api('GET', '/api/streams', { token: i % 2 === 0 ? null : bad })
    t.ok(r.status === 401 || r.status === 403)
  }
  clock += 60_000
  for (let i = 0; i < authFailureThreshold - 1; i++) await s.api('GET', '/api/streams', { token: null })
  await s.app.audit.flush(true)
  const bursts = (await allEntries()).filter((e) => e.action === 'auth.failures')
  t.equal(bursts.length, 1, 'one entry: the next minute stayed under the threshold')
  t.match(bursts[0], { org_id: null, actor: null, source: /127\.0\.0\.1/ })
  t.same(bursts[0].details.count, authFailureThreshold + 2)
  t.same(bursts[0].details.codes, { unauthorized: (authFailureThreshold + 2) / 2, invalid_token: (authFailureThreshold + 2) / 2 })
  t.equal(bursts[0].details.window_start, new Date(Date.UTC(2026, 0, 1, 13, 0, 0)).toISOString())
})

t.test('bad limits and cursors are 400 invalid_query; no token is 401', async (t) => {
  for (const q of ['limit=0', 'limit=1001', 'limit=x', 'cursor=abc']) {
    const r = await s.api('GET', `/api/audit?${q}`)
    t.same([r.status, r.body.error], [400, 'invalid_query'], q)
  }
  t.equal((await s.api('GET', '/api/audit', { token: null })).status, 401)
})
