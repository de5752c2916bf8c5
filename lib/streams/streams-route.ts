// Streams: create, list, get (with stats), patch, delete (docs/api.md section 5.1).
import type { Router } from '../http/router.ts'
import type { RequestContext } from '../http/reply.ts'
import { sendEmpty, sendJson, toRfc3339 } from '../http/reply.ts'
import { readJsonBody } from '../http/json-body.ts'
import { allowOnly, optionalInteger, optionalString, requiredName } from '../http/fields.ts'
import type { Authenticator } from '../auth/authenticate.ts'
import type { Accounts } from '../accounts/accounts.ts'
import { defaultRetentionDays } from '../accounts/accounts.ts'
import { streamView } from '../accounts/views.ts'
import type { MetadataStore, StreamRecord } from '../storage/metadata-store.ts'
import type { ClickHouse } from '../storage/clickhouse.ts'
import { sql } from '../storage/sql.ts'
import type { AuditLog } from '../audit/audit-log.ts'
import { auditContext } from '../audit/audit-log.ts'
import { findStream } from './streams.ts'

export interface StreamRoutesDeps {
  auth: Authenticator
  accounts: Accounts
  clickhouse: ClickHouse
  audit: AuditLog
}

/** Retention a stream may have, in days: one day to ten years. */
const maxRetentionDays = 3650
const maxDescriptionLength = 1024

async function streamStats (clickhouse: ClickHouse, store: MetadataStore, s: StreamRecord) {
  // Rows of a deleted stream of the same name may remain while its deletion runs: hidden.
  const hiddenBefore = store.hiddenBefore(s.orgId, s.name)
  const rows = await clickhouse.query<{ events: number, bytes: number, last: number }>(sql`
    SELECT count() AS events, sum(size) AS bytes, max(ts) AS last
    FROM events WHERE org_id = ${s.orgId} AND stream = ${s.name} AND received_at > ${hiddenBefore}`)
  const r = rows[0] ?? { events: 0, bytes: 0, last: 0 }
  return { events: Number(r.events), bytes: Number(r.bytes), last_event_at: r.events > 0 ? toRfc3339(Number(r.last)) : null }
}

export function registerStreamRoutes (router: Router, deps: StreamRoutesDeps): void {
  const { auth, accounts, clickhouse, audit } = deps

  router.add('POST', '/api/streams', async (ctx: RequestContext) => {
    const principal = auth.requirePat(ctx.req, 'streams:create')
    const { org } = principal
    const body = await readJsonBody(ctx.req)
    allowOnly(body, ['name', 'description', 'retention_days'])
    const name = requiredName(body, 'name')
    const description = optionalString(body, 'description', maxDescriptionLength) ?? ''
    const retention = optionalInteger(body, 'retention_days', 1, maxRetentionDays) ?? defaultRetentionDays
    const stream = await accounts.createStream(org.id, name, description, retention, accounts.now())
    await audit.record({
      ...auditContext(ctx, principal), action: 'stream.created', targetKind: 'stream', targetId: name,
      details: { description, retention_days: retention },
    })
    ctx.res.setHeader('location', `/api/streams/${stream.name}`)
    sendJson(ctx, 201, { ...streamView(stream), stats: { events: 0, bytes: 0, last_event_at: null } })
  })

  router.add('GET', '/api/streams', (ctx) => {
    const { org } = auth.requirePat(ctx.req, 'streams:read')
    sendJson(ctx, 200, { streams: accounts.store.streamsOfOrg(org.id).map(streamView) })
  })

  router.add('GET', '/api/streams/:stream', async (ctx) => {
    const { org } = auth.requirePat(ctx.req, 'streams:read')
    const stream = findStream(accounts.store, org.id, ctx.params.stream)
    sendJson(ctx, 200, { ...streamView(stream), stats: await streamStats(clickhouse, accounts.store, stream) })
  })

  router.add('PATCH', '/api/streams/:stream', async (ctx) => {
    const principal = auth.requirePat(ctx.req, 'streams:update')
    const { org } = principal
    const stream = findStream(accounts.store, org.id, ctx.params.stream)
    const body = await readJsonBody(ctx.req)
    allowOnly(body, ['description', 'retention_days'])
    const next: StreamRecord = {
      ...stream,
      description: optionalString(body, 'description', maxDescriptionLength) ?? stream.description,
      retentionDays: optionalInteger(body, 'retention_days', 1, maxRetentionDays) ?? stream.retentionDays,
    }
    await accounts.store.saveStream(next)
    await audit.record({
      ...auditContext(ctx, principal), action: 'stream.updated', targetKind: 'stream', targetId: next.name,
      details: { description: next.description, retention_days: next.retentionDays },
    })
    sendJson(ctx, 200, { ...streamView(next), stats: await streamStats(clickhouse, accounts.store, next) })
  })

  router.add('DELETE', '/api/streams/:stream', async (ctx) => {
    const principal = auth.requirePat(ctx.req, 'streams:delete')
    const stream = findStream(accounts.store, principal.org.id, ctx.params.stream)
    await accounts.store.deleteStream(stream, accounts.now())
    await audit.record({ ...auditContext(ctx, principal), action: 'stream.deleted', targetKind: 'stream', targetId: stream.name, details: {} })
    sendEmpty(ctx, 204)
  })
}
