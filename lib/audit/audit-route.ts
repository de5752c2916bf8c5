// GET /api/audit?limit&cursor (orgs:admin): the caller's org's audit entries and the server-wide
// ones (bursts of failed authentication), newest first, in pages like /events.
import type { Router } from '../http/router.ts'
import type { IncomingMessage } from 'node:http'
import { sendJson, toRfc3339 } from '../http/reply.ts'
import { SluiceError } from '../errors.ts'
import { integerParam } from '../http/query-params.ts'
import type { AuditLog, AuditRow } from './audit-log.ts'

export const defaultAuditLimit = 100
export const maxAuditLimit = 1000

function encodeCursor (row: AuditRow): string {
  return Buffer.from(`${row.at}.${row.id}`).toString('base64url')
}

function decodeCursor (cursor: string): { at: number, id: string } {
  const m = /^(\d{1,16})\.([0-9a-f-]{36})$/.exec(Buffer.from(cursor, 'base64url').toString('latin1'))
  if (!m) throw new SluiceError('invalid_query', 'cursor is not one this server gave out', { details: { parameter: 'cursor' } })
  return { at: Number(m[1]), id: m[2] }
}

function auditView (row: AuditRow) {
  return {
    id: row.id, at: toRfc3339(row.at), action: row.action, org_id: row.orgId === '' ? null : row.orgId,
    actor: row.actorTokenId === '' ? null : { user_id: row.actorUserId, token_id: row.actorTokenId },
    target: row.targetKind === '' ? null : { kind: row.targetKind, id: row.targetId },
    request_id: row.requestId === '' ? null : row.requestId, source: row.source, details: row.details,
  }
}

/**
 * What the route needs of the authenticator (lib/auth/authenticate.ts), stated here so that the
 * audit folder imports nothing from auth, which records its changes through the audit log.
 */
export interface AdminCheck {
  requirePat (req: IncomingMessage, ability: 'orgs:admin'): { org: { id: string } }
}

export function registerAuditRoute (router: Router, deps: { auth: AdminCheck, audit: AuditLog }): void {
  const { auth, audit } = deps
  router.add('GET', '/api/audit', async (ctx) => {
    const { org } = auth.requirePat(ctx.req, 'orgs:admin')
    const params = ctx.url.searchParams
    const limit = integerParam(params, 'limit', 1, maxAuditLimit, defaultAuditLimit)
    const cursor = params.get('cursor')
    const page = await audit.list(org.id, limit, cursor ? decodeCursor(cursor) : null)
    const last = page.rows[page.rows.length - 1]
    sendJson(ctx, 200, { entries: page.rows.map(auditView), next_cursor: page.more ? encodeCursor(last) : null })
  })
}
