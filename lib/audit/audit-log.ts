// The audit log: who changed which token, stream or org, when and through which request, and
// which source addresses failed authentication in bursts. Stored in ClickHouse (audit_log,
// migration 004), read by GET /api/audit (audit-route.ts).
//
// Contract:
// - record() writes one row per change once the change itself is stored, and is awaited by the
//   route, so a change answered 2xx is in the log unless ClickHouse failed between the two writes
//   (then the failure is logged at error level and the answer stands: the change happened).
// - No row ever holds a secret or a token hash: tokens are named by id, and `details` is built
//   by the routes from names, abilities, stream settings and times only.
// - Failed authentication (401 unauthorized, 403 invalid_token) is counted per source address in
//   one-minute windows (the injected clock's minutes); a window with at least
//   authFailureThreshold failures becomes one row (`auth.failures`: count, codes, window) when
//   it ends, at the next flush (every minute, and at close). These rows belong to no org (the
//   token, if any, named none): every orgs:admin caller sees them. At most
//   maxTrackedAddresses addresses are counted per window; the rest share the source `other`,
//   so a spray from many addresses still shows and memory stays bounded.
import { randomUUID } from 'node:crypto'
import type { ClickHouse } from '../storage/clickhouse.ts'
import type { Logger } from '../logger.ts'
import type { RequestContext } from '../http/reply.ts'
import { sql } from '../storage/sql.ts'

export const auditActions = [
  'org.created', 'token.created', 'token.revoked', 'stream.created', 'stream.updated', 'stream.deleted',
  'ingest_token.created', 'ingest_token.revoked', 'auth.failures',
] as const
export type AuditAction = typeof auditActions[number]

export interface AuditEntry {
  /** The org the change belongs to; '' for server-wide rows (auth failures). */
  orgId: string
  action: AuditAction
  /** Who: the user and the PAT that made the change (ids, never secrets). */
  actorUserId: string
  actorTokenId: string
  /** What: 'pat', 'ingest_token', 'stream', 'org', or '' (auth failures). */
  targetKind: string
  targetId: string
  requestId: string
  /** The client's address. */
  source: string
  /** Non-secret facts about the change (names, abilities, settings, counts). */
  details: Record<string, unknown>
}

export interface AuditRow extends AuditEntry {
  id: string
  /** ms since the epoch. */
  at: number
}

/** Failures from one address in one minute before they make an `auth.failures` row. */
export const authFailureThreshold = 10
/** Addresses counted per window at most; more share the source `other`. */
export const maxTrackedAddresses = 10_000
const windowMs = 60_000

interface FailureWindow { start: number, count: number, codes: Record<string, number> }

export interface AuditLogOptions {
  clickhouse: ClickHouse
  log: Logger
  /** Clock (ms) for entry times and failure windows; tests move it instead of waiting. */
  now?: () => number
}

export class AuditLog {
  #ch: ClickHouse
  #log: Logger
  #now: () => number
  #failures = new Map<string, FailureWindow>()
  /** Failure bursts of ended windows, not yet written. */
  #closed: AuditRow[] = []
  #timer: NodeJS.Timeout | null = null

  constructor (options: AuditLogOptions) {
    this.#ch = options.clickhouse
    this.#log = options.log
    this.#now = options.now ?? Date.now
  }

  /** Flushes ended failure windows every minute until close(). */
  start (): void {
    this.#timer = setInterval(() => {
      this.flush().catch((err: unknown) => this.#log.warn('audit flush failed', { err }))
    }, windowMs)
    this.#timer.unref()
  }

  async close (): Promise<void> {
    if (this.#timer) clearInterval(this.#timer)
    this.#timer = null
    await this.flush(true).catch((err: unknown) => this.#log.warn('audit flush failed', { err }))
  }

  /** Writes one entry; a storage failure is logged, not thrown (the change it records is done). */
  async record (entry: AuditEntry): Promise<void> {
    try {
      await this.#insert([{ ...entry, id: randomUUID(), at: this.#now() }])
    } catch (err) {
      this.#log.error('audit entry not written', { err, action: entry.action, target_id: entry.targetId, request_id: entry.requestId })
    }
  }

  /** Counts one failed authentication from `address` (code: unauthorized or invalid_token). */
  noteAuthFailure (address: string, code: string): void {
    const start = Math.floor(this.#now() / windowMs) * windowMs
    let key = address
    if (!this.#failures.has(key) && this.#failures.size >= maxTrackedAddresses) key = 'other'
    let window = this.#failures.get(key)
    if (window !== undefined && window.start !== start) {
      this.#closeWindow(key, window)
      window = undefined
    }
    if (window === undefined) {
      window = { start, count: 0, codes: {} }
      this.#failures.set(key, window)
    }
    window.count++
    window.codes[code] = (window.codes[code] ?? 0) + 1
  }

  #closeWindow (address: string, window: FailureWindow): void {
    this.#failures.delete(address)
    if (window.count < authFailureThreshold) return
    this.#closed.push({
      id: randomUUID(), at: window.start + windowMs, orgId: '', action: 'auth.failures', actorUserId: '', actorTokenId: '',
      targetKind: '', targetId: '', requestId: '', source: address,
      details: { count: window.count, codes: window.codes, window_start: new Date(window.start).toISOString(), window_ms: windowMs },
    })
  }

  /** Writes the failure bursts of ended windows (all windows with `all`, at close and in tests). */
  async flush (all = false): Promise<void> {
    const current = Math.floor(this.#now() / windowMs) * windowMs
    for (const [address, window] of [...this.#failures]) {
      if (all || window.start < current) this.#closeWindow(address, window)
    }
    if (this.#closed.length === 0) return
    const rows = this.#closed
    this.#closed = []
    try {
      await this.#insert(rows)
    } catch (err) {
      this.#closed.push(...rows)
      throw err
    }
  }

  async #insert (rows: AuditRow[]): Promise<void> {
    const values = rows.map((r) => sql`(${r.orgId}, ${r.at}, ${r.id}, ${r.action}, ${r.actorUserId}, ${r.actorTokenId},
      ${r.targetKind}, ${r.targetId}, ${r.requestId}, ${r.source}, ${JSON.stringify(r.details)})`.text)
    await this.#ch.command(`INSERT INTO audit_log (org_id, at, id, action, actor_user_id, actor_token_id, target_kind,
      target_id, request_id, source, details) VALUES ${values.join(', ')}`)
  }

  /**
   * A page of the org's entries and the server-wide ones, newest first, after `after` (the
   * (at, id) of the previous page's last entry), at most `limit`, plus whether more follow.
   */
  async list (orgId: string, limit: number, after: { at: number, id: string } | null): Promise<{ rows: AuditRow[], more: boolean }> {
    const keyset = after ? sql`AND (at < ${after.at} OR (at = ${after.at} AND id < ${after.id}))` : sql``
    const found = await this.#ch.query<Record<string, unknown>>(sql`SELECT org_id, at, id, action, actor_user_id, actor_token_id,
        target_kind, target_id, request_id, source, details
      FROM audit_log WHERE (org_id = ${orgId} OR org_id = '') ${keyset}
      ORDER BY at DESC, id DESC LIMIT ${limit + 1}`)
    const rows = found.slice(0, limit).map((r) => ({
      orgId: String(r.org_id), at: Number(r.at), id: String(r.id), action: String(r.action) as AuditAction,
      actorUserId: String(r.actor_user_id), actorTokenId: String(r.actor_token_id), targetKind: String(r.target_kind),
      targetId: String(r.target_id), requestId: String(r.request_id), source: String(r.source),
      details: JSON.parse(String(r.details)) as Record<string, unknown>,
    }))
    return { rows, more: found.length > limit }
  }
}

/** The acting PAT of a change, as the authenticator resolves it (lib/auth/authenticate.ts PatPrincipal). */
export interface AuditActor {
  org: { id: string }
  user: { id: string }
  pat: { id: string }
}

/** The who, when and where of a change made through `ctx` by `principal`, for AuditLog#record. */
export function auditContext (ctx: RequestContext, principal: AuditActor): Pick<AuditEntry, 'orgId' | 'actorUserId' | 'actorTokenId' | 'requestId' | 'source'> {
  return {
    orgId: principal.org.id, actorUserId: principal.user.id, actorTokenId: principal.pat.id,
    requestId: ctx.requestId, source: ctx.req.socket.remoteAddress ?? '',
  }
}
