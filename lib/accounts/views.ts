// The JSON shapes of records in API responses: snake_case fields, RFC 3339 times, never a secret.
import type { IngestTokenRecord, OrgRecord, PatRecord, StreamRecord, UserRecord } from '../storage/metadata-store.ts'
import { toRfc3339 } from '../http/reply.ts'

export type TokenStatus = 'active' | 'expired' | 'revoked'

function statusOf (record: { expiresAt: number | null, revokedAt: number | null }, now: number): TokenStatus {
  if (record.revokedAt !== null) return 'revoked'
  return record.expiresAt !== null && record.expiresAt <= now ? 'expired' : 'active'
}

export function orgView (org: OrgRecord) {
  return { id: org.id, name: org.name, created_at: toRfc3339(org.createdAt) }
}

export function userView (user: UserRecord) {
  return { id: user.id, org_id: user.orgId, name: user.name, created_at: toRfc3339(user.createdAt) }
}

export function streamView (s: StreamRecord) {
  return {
    id: s.name, name: s.name, description: s.description, retention_days: s.retentionDays,
    created_at: toRfc3339(s.createdAt),
  }
}

export function patView (p: PatRecord, now: number) {
  return {
    id: p.id, name: p.name, abilities: p.abilities, display: p.display, status: statusOf(p, now),
    created_at: toRfc3339(p.createdAt), expires_at: toRfc3339(p.expiresAt),
    last_used_at: toRfc3339(p.lastUsedAt), revoked_at: toRfc3339(p.revokedAt),
  }
}

export function ingestTokenView (tok: IngestTokenRecord, now: number) {
  return {
    id: tok.id, name: tok.name, stream: tok.stream, display: tok.display, status: statusOf(tok, now),
    created_at: toRfc3339(tok.createdAt), expires_at: toRfc3339(tok.expiresAt),
    last_used_at: toRfc3339(tok.lastUsedAt), revoked_at: toRfc3339(tok.revokedAt),
  }
}
