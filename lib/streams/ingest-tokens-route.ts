// Ingest tokens of a stream: issue (secret shown once), list (no secrets), revoke (idempotent).
import type { Router } from '../http/router.ts'
import { sendEmpty, sendJson, toRfc3339 } from '../http/reply.ts'
import { readJsonBody } from '../http/json-body.ts'
import { allowOnly, optionalInteger, optionalString } from '../http/fields.ts'
import { SluiceError } from '../errors.ts'
import type { Authenticator } from '../auth/authenticate.ts'
import type { Accounts } from '../accounts/accounts.ts'
import { ingestTokenView } from '../accounts/views.ts'
import { findStream } from './streams.ts'
import type { AuditLog } from '../audit/audit-log.ts'
import { auditContext } from '../audit/audit-log.ts'

/** Bounds of an ingest token's `ttl`, seconds: one minute to ten years (docs/api.md section 5.2). */
const minTtlS = 60
const maxTtlS = 315_360_000

export function registerIngestTokenRoutes (router: Router, deps: { auth: Authenticator, accounts: Accounts, audit: AuditLog }): void {
  const { auth, accounts, audit } = deps

  router.add('POST', '/api/streams/:stream/ingest-token', async (ctx) => {
    const principal = auth.requirePat(ctx.req, 'streams:issue-token')
    const { org } = principal
    const stream = findStream(accounts.store, org.id, ctx.params.stream)
    const body = await readJsonBody(ctx.req)
    allowOnly(body, ['ttl', 'name'])
    const ttl = optionalInteger(body, 'ttl', minTtlS, maxTtlS) ?? null
    const now = accounts.now()
    const name = optionalString(body, 'name', 200) ?? `${stream.name} ingest token`
    const { record, token } = await accounts.issueIngestToken(stream, name, ttl, now)
    await audit.record({
      ...auditContext(ctx, principal), action: 'ingest_token.created', targetKind: 'ingest_token', targetId: record.id,
      details: { stream: stream.name, name, expires_at: toRfc3339(record.expiresAt) },
    })
    sendJson(ctx, 201, {
      id: record.id, token, stream: record.stream, name: record.name,
      created_at: toRfc3339(record.createdAt), expires_at: toRfc3339(record.expiresAt),
    })
  })

  router.add('GET', '/api/streams/:stream/ingest-tokens', (ctx) => {
    const { org } = auth.requirePat(ctx.req, 'streams:read')
    const stream = findStream(accounts.store, org.id, ctx.params.stream)
    const now = accounts.now()
    sendJson(ctx, 200, { tokens: accounts.store.ingestTokensOfStream(org.id, stream.name).map((x) => ingestTokenView(x, now)) })
  })

  router.add('DELETE', '/api/streams/:stream/ingest-tokens/:id', async (ctx) => {
    const principal = auth.requirePat(ctx.req, 'streams:revoke-token')
    const { org } = principal
    const stream = findStream(accounts.store, org.id, ctx.params.stream)
    const record = accounts.store.ingestToken(ctx.params.id)
    // A token of a deleted stream of the same name is not this stream's (docs/api.md section 5.1).
    if (!record || record.orgId !== org.id || record.stream !== stream.name || record.createdAt < stream.createdAt) {
      throw new SluiceError('not_found', 'No such ingest token on this stream')
    }
    if (record.revokedAt === null) {
      await accounts.revokeIngestToken(record, accounts.now())
      await audit.record({
        ...auditContext(ctx, principal), action: 'ingest_token.revoked', targetKind: 'ingest_token', targetId: record.id,
        details: { stream: stream.name, name: record.name },
      })
    }
    sendEmpty(ctx, 204)
  })
}
