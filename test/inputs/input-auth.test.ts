// Who the protocol inputs write for: the ingest token's own org and stream, nothing else; and the
// refusals of docs/api.md section 4 (no token, a PAT, a revoked token).
import t from 'tap'
import { request } from 'undici'
import { startServer } from '../helpers/server.ts'

const paths = ['/v1/logs', '/api/otlp/v1/logs', '/loki/api/v1/push', '/api/loki/api/v1/push']

function body (path: string, text: string): string {
  return path.includes('loki')
    ? JSON.stringify({ streams: [{ stream: { app: 'x' }, values: [[`${Date.now()}000000`, text]] }] })
    : JSON.stringify({ resourceLogs: [{ scopeLogs: [{ logRecords: [{ body: { stringValue: text } }] }] }] })
}

async function send (url: string, path: string, authorization: string | null, text: string) {
  const headers: Record<string, string> = { 'content-type': 'application/json' }
  if (authorization !== null) headers.authorization = authorization
  const res = await request(`${url}${path}`, { method: 'POST', headers, body: body(path, text) })
  const raw = await res.body.text()
  return { status: res.statusCode, error: raw === '' ? null : (JSON.parse(raw) as { error?: string }).error ?? null }
}

t.test('each route writes to the token\'s org and stream; refusals store nothing', async (t) => {
  const s = await startServer(t)
  const mk = async (token: string, stream: string): Promise<string> => {
    t.equal((await s.api('POST', '/api/streams', { token, body: { name: stream } })).status, 201)
    return (await s.api('POST', `/api/streams/${stream}/ingest-token`, { token, body: {} })).body.token
  }
  const a = await mk(s.adminToken, 'shared-name')
  await mk(s.adminToken, 'other')
  const orgB = await s.api('POST', '/api/orgs', { body: { name: 'org-b' } })
  const b = await mk(orgB.body.token.token, 'shared-name')
  const revoked = await s.api('POST', '/api/streams/other/ingest-token', { body: {} })
  t.equal((await s.api('DELETE', `/api/streams/other/ingest-tokens/${revoked.body.id}`)).status, 204)

  for (const path of paths) {
    t.equal((await send(s.url, path, `Bearer ${a}`, `a ${path}`)).status, path.includes('loki') ? 204 : 200, `${path}: org A`)
    t.equal((await send(s.url, path, 'Basic ' + Buffer.from(`u:${b}`).toString('base64'), `b ${path}`)).status, path.includes('loki') ? 204 : 200, `${path}: org B, Basic`)
    t.same(await send(s.url, path, null, 'none'), { status: 401, error: 'unauthorized' }, `${path}: no token`)
    t.same(await send(s.url, path, `Bearer ${s.adminToken}`, 'pat'), { status: 403, error: 'wrong_token_kind' }, `${path}: a PAT`)
    t.same(await send(s.url, path, `Bearer ${revoked.body.token}`, 'revoked'), { status: 403, error: 'invalid_token' }, `${path}: revoked`)
  }
  const rows = await s.app.clickhouse.query<{ org_id: string, stream: string, message: string }>(
    'SELECT org_id, stream, message FROM events ORDER BY org_id, stream, message')
  const orgA = s.app.store.orgByName('default')!.id
  const expected = [
    ...paths.map((p) => ({ org_id: orgA, stream: 'shared-name', message: `a ${p}` })),
    ...paths.map((p) => ({ org_id: orgB.body.org.id, stream: 'shared-name', message: `b ${p}` })),
  ].sort((x, y) => `${x.org_id}/${x.message}`.localeCompare(`${y.org_id}/${y.message}`))
  t.same(rows.slice().sort((x, y) => `${x.org_id}/${x.message}`.localeCompare(`${y.org_id}/${y.message}`)), expected)
})
