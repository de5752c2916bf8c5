// The security matrix: every route of lib/app.ts x {own org, other org, no token, wrong token
// kind, missing ability, expired, revoked}, each cell with the status and error code of docs/api.md
// section 4, and no row landing in another org. Plus: a revocation is honoured on the very next
// request on the node that revoked.
import t from 'tap'
import type { Test } from 'tap'
import { request } from 'undici'
import { startServer } from '../helpers/server.ts'
import type { TestServer } from '../helpers/server.ts'
import { hashToken as hashOf } from '../../lib/auth/token-format.ts'

let clock = Date.now()
let s: TestServer

interface Call { method: string, path: string, body?: unknown }
interface Answer { status: number, error: string | null, body: any, wwwAuthenticate: unknown }

async function call (c: Call, token: string | null): Promise<Answer> {
  const ingest = c.path.startsWith('/api/ingest/')
  const headers: Record<string, string> = {}
  if (token !== null) headers.authorization = `Bearer ${token}`
  let body: string | undefined
  if (c.body !== undefined) {
    body = typeof c.body === 'string' ? c.body : JSON.stringify(c.body)
    headers['content-type'] = ingest ? 'application/x-ndjson' : 'application/json'
  }
  const res = await request(s.url + c.path, { method: c.method as 'GET', headers, body })
  if (String(res.headers['content-type']).startsWith('text/event-stream')) {
    res.body.destroy() // a tail that opened: its status is the answer
    return { status: res.statusCode, error: null, body: null, wwwAuthenticate: res.headers['www-authenticate'] }
  }
  const text = await res.body.text()
  const parsed = text ? JSON.parse(text) : null
  return { status: res.statusCode, error: parsed?.error ?? null, body: parsed, wwwAuthenticate: res.headers['www-authenticate'] }
}

/** Tokens of org A (the bootstrap org) and org B, made before the clock moves past the expiring ones. */
interface Tokens {
  admin: string
  full: string // '*' in org A
  onlyData: string // data:read only
  onlyStreamsRead: string // streams:read only
  expiredPat: string
  revokedPat: string
  ingest: string // org A, stream alpha
  ingestOtherStream: string // org A, stream a-second
  expiredIngest: string
  revokedIngest: string
  orgB: { id: string, owner: string, ingestAlpha: string, ingestBeta: string }
}
let tk: Tokens
let orgA = ''
let counter = 0
const fresh = (prefix: string): string => `${prefix}-${++counter}`

async function pat (abilities: string[], ttl?: number): Promise<{ id: string, token: string }> {
  const r = await s.api('POST', '/api/tokens', { body: { name: fresh('pat'), abilities, ...(ttl ? { ttl } : {}) } })
  if (r.status !== 201) throw new Error(`pat ${r.status}`)
  return r.body
}

async function stream (name: string, token = s.adminToken): Promise<void> {
  const r = await s.api('POST', '/api/streams', { token, body: { name } })
  if (r.status !== 201) throw new Error(`stream ${name}: ${r.status}`)
}

async function ingestToken (name: string, token = s.adminToken, ttl?: number): Promise<{ id: string, token: string }> {
  const r = await s.api('POST', `/api/streams/${name}/ingest-token`, { token, body: ttl ? { ttl } : {} })
  if (r.status !== 201) throw new Error(`ingest token ${name}: ${r.status}`)
  return r.body
}

t.before(async () => {
  s = await startServer(t, {}, { now: () => clock })
  orgA = s.app.store.orgByName('default')!.id
  await stream('alpha')
  await stream('a-second')
  await stream('only-a')
  await stream('same-name')
  const revokedPat = await pat(['*', 'orgs:admin'])
  const revokedIngest = await ingestToken('alpha')
  const b = (await s.api('POST', '/api/orgs', { body: { name: 'org-b' } })).body
  await stream('alpha', b.token.token)
  await stream('beta', b.token.token)
  tk = {
    admin: s.adminToken,
    full: (await pat(['*'])).token,
    onlyData: (await pat(['data:read'])).token,
    onlyStreamsRead: (await pat(['streams:read'])).token,
    expiredPat: (await pat(['*', 'orgs:admin'], 60)).token,
    revokedPat: revokedPat.token,
    ingest: (await ingestToken('alpha')).token,
    ingestOtherStream: (await ingestToken('a-second')).token,
    expiredIngest: (await ingestToken('alpha', s.adminToken, 60)).token,
    revokedIngest: revokedIngest.token,
    orgB: { id: b.org.id, owner: b.token.token, ingestAlpha: (await ingestToken('alpha', b.token.token)).token, ingestBeta: (await ingestToken('beta', b.token.token)).token },
  }
  if ((await s.api('DELETE', `/api/tokens/${revokedPat.id}`)).status !== 204) throw new Error('revoke')
  if ((await s.api('DELETE', `/api/streams/alpha/ingest-tokens/${revokedIngest.id}`)).status !== 204) throw new Error('revoke')
  clock += 120_000 // the 60 s tokens are expired from here on
})

interface Route {
  name: string
  kind: 'pat' | 'ingest'
  /** A fresh request for an own-org cell (destructive routes get a new target each time). */
  make: () => Promise<Call>
  own: number
  /** The token used in the own-org cell (default: `*` in org A). */
  ownToken?: () => string
  /** Org B's attempt on org A's resource; its expected status and code, and what else to check. */
  other: () => Promise<{ call: Call, token: string }>
  otherStatus: number
  otherError: string | null
  otherCheck?: (t: Test, a: Answer) => Promise<unknown> | unknown
}

const line = JSON.stringify({ path: '/matrix', status: 200 })
const tokensOfUser = async (token: string): Promise<string[]> => (await call({ method: 'GET', path: '/api/tokens' }, token)).body.tokens.map((x: { id: string }) => x.id)

const routes: Route[] = [
  {
    name: 'POST /api/ingest/{stream}', kind: 'ingest', make: async () => ({ method: 'POST', path: '/api/ingest/alpha', body: line }), own: 200,
    ownToken: () => tk.ingest,
    // Org B's token for its own stream named alpha: stored in org B, never in A.
    other: async () => ({ call: { method: 'POST', path: '/api/ingest/alpha', body: line }, token: tk.orgB.ingestAlpha }), otherStatus: 200, otherError: null,
  },
  {
    name: 'POST /api/streams', kind: 'pat', make: async () => ({ method: 'POST', path: '/api/streams', body: { name: fresh('made') } }), own: 201,
    // A name A uses already: B gets its own stream of that name, and A's is untouched.
    other: async () => ({ call: { method: 'POST', path: '/api/streams', body: { name: 'same-name', description: 'b' } }, token: tk.orgB.owner }),
    otherStatus: 201, otherError: null,
    otherCheck: async (t) => {
      t.equal(s.app.store.stream(tk.orgB.id, 'same-name')!.description, 'b', 'B\'s same-name is B\'s')
      t.equal(s.app.store.stream(orgA, 'same-name')!.description, '', 'A\'s same-name is untouched')
    },
  },
  {
    name: 'GET /api/streams', kind: 'pat', make: async () => ({ method: 'GET', path: '/api/streams' }), own: 200,
    other: async () => ({ call: { method: 'GET', path: '/api/streams' }, token: tk.orgB.owner }), otherStatus: 200, otherError: null,
    otherCheck: (t, a) => t.notOk(a.body.streams.some((x: { name: string }) => x.name === 'a-second'), 'no stream of A is listed to B'),
  },
  {
    name: 'GET /api/streams/{stream}', kind: 'pat', make: async () => ({ method: 'GET', path: '/api/streams/a-second' }), own: 200,
    other: async () => ({ call: { method: 'GET', path: '/api/streams/a-second' }, token: tk.orgB.owner }), otherStatus: 404, otherError: 'not_found',
  },
  {
    name: 'PATCH /api/streams/{stream}', kind: 'pat', make: async () => ({ method: 'PATCH', path: '/api/streams/a-second', body: { description: 'x' } }), own: 200,
    other: async () => ({ call: { method: 'PATCH', path: '/api/streams/a-second', body: { description: 'pwned' } }, token: tk.orgB.owner }), otherStatus: 404, otherError: 'not_found',
    otherCheck: (t) => t.not(s.app.store.stream(orgA, 'a-second')!.description, 'pwned'),
  },
  {
    name: 'DELETE /api/streams/{stream}', kind: 'pat',
    make: async () => { const name = fresh('doomed'); await stream(name); return { method: 'DELETE', path: `/api/streams/${name}` } }, own: 204,
    other: async () => ({ call: { method: 'DELETE', path: '/api/streams/only-a' }, token: tk.orgB.owner }), otherStatus: 404, otherError: 'not_found',
    otherCheck: (t) => t.ok(s.app.store.stream(orgA, 'only-a'), 'A\'s stream survives'),
  },
  {
    name: 'POST /api/streams/{stream}/ingest-token', kind: 'pat', make: async () => ({ method: 'POST', path: '/api/streams/a-second/ingest-token', body: {} }), own: 201,
    other: async () => ({ call: { method: 'POST', path: '/api/streams/only-a/ingest-token', body: {} }, token: tk.orgB.owner }), otherStatus: 404, otherError: 'not_found',
  },
  {
    name: 'GET /api/streams/{stream}/ingest-tokens', kind: 'pat', make: async () => ({ method: 'GET', path: '/api/streams/a-second/ingest-tokens' }), own: 200,
    other: async () => ({ call: { method: 'GET', path: '/api/streams/only-a/ingest-tokens' }, token: tk.orgB.owner }), otherStatus: 404, otherError: 'not_found',
  },
  {
    name: 'DELETE /api/streams/{stream}/ingest-tokens/{id}', kind: 'pat',
    make: async () => ({ method: 'DELETE', path: `/api/streams/alpha/ingest-tokens/${(await ingestToken('alpha')).id}` }), own: 204,
    // B has a stream named alpha too: A's token id under it is still not found.
    other: async () => ({ call: { method: 'DELETE', path: `/api/streams/alpha/ingest-tokens/${s.app.store.ingestTokenByHash(hashOf(tk.ingest))!.id}` }, token: tk.orgB.owner }),
    otherStatus: 404, otherError: 'not_found',
    otherCheck: async (t) => t.equal((await call({ method: 'POST', path: '/api/ingest/alpha', body: line }, tk.ingest)).status, 200, 'A\'s ingest token still works'),
  },
  {
    name: 'POST /api/tokens', kind: 'pat', make: async () => ({ method: 'POST', path: '/api/tokens', body: { name: fresh('t'), abilities: ['data:read'] } }), own: 201,
    other: async () => ({ call: { method: 'POST', path: '/api/tokens', body: { name: 'b', abilities: ['data:read'] } }, token: tk.orgB.owner }), otherStatus: 201, otherError: null,
    otherCheck: async (t, a) => {
      t.equal(s.app.store.pat(a.body.id)!.orgId, tk.orgB.id, 'B\'s new PAT belongs to B')
      t.notOk((await tokensOfUser(tk.full)).includes(a.body.id))
    },
  },
  {
    name: 'GET /api/tokens', kind: 'pat', make: async () => ({ method: 'GET', path: '/api/tokens' }), own: 200,
    other: async () => ({ call: { method: 'GET', path: '/api/tokens' }, token: tk.orgB.owner }), otherStatus: 200, otherError: null,
    otherCheck: (t, a) => t.ok(a.body.tokens.every((x: { id: string }) => s.app.store.pat(x.id)!.orgId === tk.orgB.id), 'B lists B\'s PATs only'),
  },
  {
    name: 'DELETE /api/tokens/{id}', kind: 'pat', make: async () => ({ method: 'DELETE', path: `/api/tokens/${(await pat(['data:read'])).id}` }), own: 204,
    other: async () => ({ call: { method: 'DELETE', path: `/api/tokens/${s.app.store.patByHash(hashOf(tk.full))!.id}` }, token: tk.orgB.owner }),
    otherStatus: 404, otherError: 'not_found',
    otherCheck: async (t) => t.equal((await call({ method: 'GET', path: '/api/streams' }, tk.full)).status, 200, 'A\'s PAT still works'),
  },
  {
    name: 'POST /api/orgs', kind: 'pat', make: async () => ({ method: 'POST', path: '/api/orgs', body: { name: fresh('org') } }), own: 201, ownToken: () => tk.admin,
    other: async () => ({ call: { method: 'POST', path: '/api/orgs', body: { name: fresh('org') } }, token: tk.orgB.owner }), otherStatus: 403, otherError: 'insufficient_ability',
  },
  {
    name: 'GET /api/streams/{stream}/events', kind: 'pat', make: async () => ({ method: 'GET', path: '/api/streams/alpha/events' }), own: 200,
    other: async () => ({ call: { method: 'GET', path: '/api/streams/only-a/events' }, token: tk.orgB.owner }), otherStatus: 404, otherError: 'not_found',
  },
  {
    name: 'GET /api/streams/{stream}/stats', kind: 'pat', make: async () => ({ method: 'GET', path: '/api/streams/alpha/stats' }), own: 200,
    other: async () => ({ call: { method: 'GET', path: '/api/streams/only-a/stats' }, token: tk.orgB.owner }), otherStatus: 404, otherError: 'not_found',
  },
  {
    name: 'GET /api/streams/{stream}/tail', kind: 'pat', make: async () => ({ method: 'GET', path: '/api/streams/alpha/tail' }), own: 200,
    other: async () => ({ call: { method: 'GET', path: '/api/streams/only-a/tail' }, token: tk.orgB.owner }), otherStatus: 404, otherError: 'not_found',
  },
  {
    name: 'GET /api/audit', kind: 'pat', make: async () => ({ method: 'GET', path: '/api/audit' }), own: 200, ownToken: () => tk.admin,
    other: async () => ({ call: { method: 'GET', path: '/api/audit' }, token: tk.orgB.owner }), otherStatus: 403, otherError: 'insufficient_ability',
  },
]

/** The ability a route needs, to pick a PAT without it. */
function missingAbilityToken (route: Route): string {
  return route.name.includes('/events') || route.name.includes('/stats') || route.name.includes('/tail') ? tk.onlyStreamsRead : tk.onlyData
}

for (const route of routes) {
  t.test(route.name, async (t) => {
    const pats = route.kind === 'pat'
    const cells: Array<[string, () => string | null, number, string | null]> = [
      ['own org', () => route.ownToken?.() ?? tk.full, route.own, null],
      ['no token', () => null, 401, 'unauthorized'],
      ['wrong token kind', () => pats ? tk.ingest : tk.full, 403, 'wrong_token_kind'],
      pats
        ? ['missing ability', () => missingAbilityToken(route), 403, 'insufficient_ability']
        : ['token for another stream', () => tk.ingestOtherStream, 403, 'forbidden_stream'],
      ['expired', () => pats ? tk.expiredPat : tk.expiredIngest, 403, 'invalid_token'],
      ['revoked', () => pats ? tk.revokedPat : tk.revokedIngest, 403, 'invalid_token'],
    ]
    for (const [cell, token, status, error] of cells) {
      const a = await call(await route.make(), token())
      t.equal(a.status, status, `${cell}: status`)
      t.equal(a.error, error, `${cell}: error code`)
      if (status === 401) t.equal(a.wwwAuthenticate, 'Bearer', `${cell}: WWW-Authenticate`)
    }
    const other = await route.other()
    const a = await call(other.call, other.token)
    t.equal(a.status, route.otherStatus, 'other org: status')
    t.equal(a.error, route.otherError, 'other org: error code')
    await route.otherCheck?.(t, a)
  })
}

t.test('no row lands in another org: A holds only A\'s ingests, B only B\'s', async (t) => {
  const rows = await s.app.clickhouse.query<{ org_id: string, stream: string, n: number }>(
    'SELECT org_id, stream, count() AS n FROM events GROUP BY org_id, stream ORDER BY org_id, stream')
  const byKey = new Map(rows.map((r) => [`${r.org_id}/${r.stream}`, Number(r.n)]))
  // A: the own-org ingest cell and the check after B's attempt to revoke A's token; B: its one ingest.
  t.equal(byKey.get(`${orgA}/alpha`), 2, 'org A\'s alpha holds its own two ingests only')
  t.equal(byKey.get(`${tk.orgB.id}/alpha`), 1, 'org B\'s alpha holds B\'s one ingest')
  t.equal(rows.length, 2, 'no other stream of any org received a row (401/403 cells stored nothing)')
})

t.test('a revocation is honoured on the very next request on the node that revoked', async (t) => {
  const p = await pat(['streams:read'])
  t.equal((await call({ method: 'GET', path: '/api/streams' }, p.token)).status, 200)
  t.equal((await s.api('DELETE', `/api/tokens/${p.id}`)).status, 204)
  const next = await call({ method: 'GET', path: '/api/streams' }, p.token)
  t.same([next.status, next.error], [403, 'invalid_token'], 'the PAT')
  const it = await ingestToken('a-second')
  t.equal((await call({ method: 'POST', path: '/api/ingest/a-second', body: line }, it.token)).status, 200)
  t.equal((await s.api('DELETE', `/api/streams/a-second/ingest-tokens/${it.id}`)).status, 204)
  const after = await call({ method: 'POST', path: '/api/ingest/a-second', body: line }, it.token)
  t.same([after.status, after.error], [403, 'invalid_token'], 'the ingest token')
})
