// Orgs, users, PATs, streams and ingest tokens, kept in ClickHouse and cached in memory.
//
// Contract:
// - Reads are served from memory; authentication never waits on ClickHouse.
// - A write goes to ClickHouse first and, once it succeeded, into this node's cache: a change made
//   through this node applies here at once. Other nodes see it at their next refresh
//   (refreshIntervalMs, default 5 s), which reloads every table whole.
// - Token use times are kept in memory and written in the background at each refresh, to their own
//   table, so a use recorded on one node never undoes a revocation made on another.
import type { ClickHouse } from './clickhouse.ts'
import type { Logger } from '../logger.ts'
import { sql } from './sql.ts'

export interface OrgRecord { id: string, name: string, createdAt: number }
export interface UserRecord { id: string, orgId: string, name: string, createdAt: number }
export interface PatRecord {
  id: string
  orgId: string
  userId: string
  name: string
  tokenHash: string
  display: string
  abilities: string[]
  createdAt: number
  /** ms; null: never expires. */
  expiresAt: number | null
  revokedAt: number | null
  lastUsedAt: number | null
}
export interface StreamRecord {
  orgId: string
  name: string
  description: string
  retentionDays: number
  createdAt: number
}
export interface IngestTokenRecord {
  id: string
  orgId: string
  stream: string
  name: string
  tokenHash: string
  display: string
  createdAt: number
  expiresAt: number
  revokedAt: number | null
  lastUsedAt: number | null
}

interface Row { [key: string]: unknown }

const nullIfZero = (v: unknown): number | null => (Number(v) > 0 ? Number(v) : null)

/** Monotonic record versions: ms × 1000 plus a counter, so two writes in one ms still order. */
function createVersionClock (): () => number {
  let last = 0
  return () => {
    last = Math.max(Date.now() * 1000, last + 1)
    return last
  }
}

export interface MetadataStoreOptions {
  clickhouse: ClickHouse
  log: Logger
  refreshIntervalMs: number
}

export class MetadataStore {
  #ch: ClickHouse
  #log: Logger
  #refreshIntervalMs: number
  #timer: NodeJS.Timeout | null = null
  #version = createVersionClock()

  #orgs = new Map<string, OrgRecord>()
  #users = new Map<string, UserRecord>()
  #pats = new Map<string, PatRecord>()
  #patsByHash = new Map<string, PatRecord>()
  #streams = new Map<string, StreamRecord>() // key: orgId + '/' + name
  #ingestTokens = new Map<string, IngestTokenRecord>()
  #ingestByHash = new Map<string, IngestTokenRecord>()
  #usage = new Map<string, number>() // token id -> last use (ms) not yet written

  constructor (options: MetadataStoreOptions) {
    this.#ch = options.clickhouse
    this.#log = options.log
    this.#refreshIntervalMs = options.refreshIntervalMs
  }

  /** Loads everything, then refreshes on a timer until stop(). */
  async start (): Promise<void> {
    await this.reload()
    const tick = (): void => {
      this.#timer = setTimeout(() => {
        this.#writeUsage()
          .then(() => this.reload())
          .catch((err: unknown) => this.#log.warn('metadata refresh failed', { err }))
          .finally(() => { if (this.#timer) tick() })
      }, this.#refreshIntervalMs)
      this.#timer.unref()
    }
    tick()
  }

  async stop (): Promise<void> {
    if (this.#timer) clearTimeout(this.#timer)
    this.#timer = null
    await this.#writeUsage().catch((err: unknown) => this.#log.warn('token usage write failed', { err }))
  }

  /** Replaces the cache with what ClickHouse holds now. */
  async reload (): Promise<void> {
    const [orgs, users, pats, streams, tokens, usage] = await Promise.all([
      this.#ch.query<Row>('SELECT * FROM orgs FINAL WHERE deleted = 0'),
      this.#ch.query<Row>('SELECT * FROM users FINAL WHERE deleted = 0'),
      this.#ch.query<Row>('SELECT * FROM pats FINAL'),
      this.#ch.query<Row>('SELECT * FROM streams FINAL WHERE deleted = 0'),
      this.#ch.query<Row>('SELECT * FROM ingest_tokens FINAL'),
      this.#ch.query<Row>('SELECT token_id, max(last_used_at) AS t FROM token_usage GROUP BY token_id'),
    ])
    const lastUsed = new Map(usage.map((r) => [String(r.token_id), Number(r.t)]))
    for (const [id, t] of this.#usage) lastUsed.set(id, Math.max(t, lastUsed.get(id) ?? 0))

    this.#orgs = new Map(orgs.map((r) => [String(r.id), { id: String(r.id), name: String(r.name), createdAt: Number(r.created_at) }]))
    this.#users = new Map(users.map((r) => [String(r.id), {
      id: String(r.id), orgId: String(r.org_id), name: String(r.name), createdAt: Number(r.created_at),
    }]))
    this.#pats = new Map()
    this.#patsByHash = new Map()
    for (const r of pats) {
      this.#putPat({
        id: String(r.id), orgId: String(r.org_id), userId: String(r.user_id), name: String(r.name),
        tokenHash: String(r.token_hash), display: String(r.display), abilities: (r.abilities as string[]).map(String),
        createdAt: Number(r.created_at), expiresAt: nullIfZero(r.expires_at), revokedAt: nullIfZero(r.revoked_at),
        lastUsedAt: lastUsed.get(String(r.id)) ?? null,
      })
    }
    this.#streams = new Map(streams.map((r) => [`${String(r.org_id)}/${String(r.name)}`, {
      orgId: String(r.org_id), name: String(r.name), description: String(r.description),
      retentionDays: Number(r.retention_days), createdAt: Number(r.created_at),
    }]))
    this.#ingestTokens = new Map()
    this.#ingestByHash = new Map()
    for (const r of tokens) {
      this.#putIngestToken({
        id: String(r.id), orgId: String(r.org_id), stream: String(r.stream), name: String(r.name),
        tokenHash: String(r.token_hash), display: String(r.display), createdAt: Number(r.created_at),
        expiresAt: Number(r.expires_at), revokedAt: nullIfZero(r.revoked_at), lastUsedAt: lastUsed.get(String(r.id)) ?? null,
      })
    }
  }

  #putPat (p: PatRecord): void {
    this.#pats.set(p.id, p)
    this.#patsByHash.set(p.tokenHash, p)
  }

  #putIngestToken (tok: IngestTokenRecord): void {
    this.#ingestTokens.set(tok.id, tok)
    this.#ingestByHash.set(tok.tokenHash, tok)
  }

  // ---- reads (memory) ----

  orgCount (): number { return this.#orgs.size }
  org (id: string): OrgRecord | undefined { return this.#orgs.get(id) }
  orgByName (name: string): OrgRecord | undefined {
    for (const o of this.#orgs.values()) if (o.name === name) return o
    return undefined
  }

  user (id: string): UserRecord | undefined { return this.#users.get(id) }
  usersOfOrg (orgId: string): UserRecord[] { return [...this.#users.values()].filter((u) => u.orgId === orgId) }
  patByHash (hash: string): PatRecord | undefined { return this.#patsByHash.get(hash) }
  pat (id: string): PatRecord | undefined { return this.#pats.get(id) }
  patsOfUser (userId: string): PatRecord[] {
    return [...this.#pats.values()].filter((p) => p.userId === userId).sort((a, b) => a.createdAt - b.createdAt)
  }

  stream (orgId: string, name: string): StreamRecord | undefined { return this.#streams.get(`${orgId}/${name}`) }
  allStreams (): StreamRecord[] { return [...this.#streams.values()] }
  streamsOfOrg (orgId: string): StreamRecord[] {
    return [...this.#streams.values()].filter((s) => s.orgId === orgId).sort((a, b) => a.name.localeCompare(b.name))
  }

  ingestTokenByHash (hash: string): IngestTokenRecord | undefined { return this.#ingestByHash.get(hash) }
  ingestToken (id: string): IngestTokenRecord | undefined { return this.#ingestTokens.get(id) }
  ingestTokensOfStream (orgId: string, stream: string): IngestTokenRecord[] {
    return [...this.#ingestTokens.values()]
      .filter((x) => x.orgId === orgId && x.stream === stream)
      .sort((a, b) => a.createdAt - b.createdAt)
  }

  /** Records a token use; written to ClickHouse at the next refresh. */
  touchToken (record: PatRecord | IngestTokenRecord, at: number): void {
    record.lastUsedAt = at
    this.#usage.set(record.id, at)
  }

  // ---- writes (ClickHouse, then memory) ----

  async createOrg (org: OrgRecord): Promise<void> {
    await this.#ch.command(sql`INSERT INTO orgs (id, name, created_at, deleted, version)
      VALUES (${org.id}, ${org.name}, ${org.createdAt}, 0, ${this.#version()})`)
    this.#orgs.set(org.id, org)
  }

  async createUser (user: UserRecord): Promise<void> {
    await this.#ch.command(sql`INSERT INTO users (id, org_id, name, created_at, deleted, version)
      VALUES (${user.id}, ${user.orgId}, ${user.name}, ${user.createdAt}, 0, ${this.#version()})`)
    this.#users.set(user.id, user)
  }

  async savePat (p: PatRecord): Promise<void> {
    await this.#ch.command(sql`INSERT INTO pats
      (id, org_id, user_id, name, token_hash, display, abilities, created_at, expires_at, revoked_at, version)
      VALUES (${p.id}, ${p.orgId}, ${p.userId}, ${p.name}, ${p.tokenHash}, ${p.display}, ${p.abilities},
        ${p.createdAt}, ${p.expiresAt ?? 0}, ${p.revokedAt ?? 0}, ${this.#version()})`)
    this.#putPat(p)
  }

  async saveStream (s: StreamRecord): Promise<void> {
    await this.#ch.command(sql`INSERT INTO streams (org_id, name, description, retention_days, created_at, deleted, version)
      VALUES (${s.orgId}, ${s.name}, ${s.description}, ${s.retentionDays}, ${s.createdAt}, 0, ${this.#version()})`)
    this.#streams.set(`${s.orgId}/${s.name}`, s)
  }

  /** Marks the stream deleted, revokes its tokens and deletes its events (a background mutation). */
  async deleteStream (s: StreamRecord, at: number): Promise<void> {
    for (const tok of this.ingestTokensOfStream(s.orgId, s.name)) {
      if (tok.revokedAt === null) await this.saveIngestToken({ ...tok, revokedAt: at })
    }
    await this.#ch.command(sql`INSERT INTO streams (org_id, name, description, retention_days, created_at, deleted, version)
      VALUES (${s.orgId}, ${s.name}, ${s.description}, ${s.retentionDays}, ${s.createdAt}, 1, ${this.#version()})`)
    this.#streams.delete(`${s.orgId}/${s.name}`)
    // Mutations apply to the parts that exist now, so a stream created again under the same name
    // keeps its new events.
    await this.#ch.command(sql`ALTER TABLE events DELETE WHERE org_id = ${s.orgId} AND stream = ${s.name}`)
  }

  async saveIngestToken (tok: IngestTokenRecord): Promise<void> {
    await this.#ch.command(sql`INSERT INTO ingest_tokens
      (id, org_id, stream, name, token_hash, display, created_at, expires_at, revoked_at, version)
      VALUES (${tok.id}, ${tok.orgId}, ${tok.stream}, ${tok.name}, ${tok.tokenHash}, ${tok.display},
        ${tok.createdAt}, ${tok.expiresAt}, ${tok.revokedAt ?? 0}, ${this.#version()})`)
    this.#putIngestToken(tok)
  }

  async #writeUsage (): Promise<void> {
    if (this.#usage.size === 0) return
    const entries = [...this.#usage]
    this.#usage.clear()
    const values = entries.map(([id, t]) => sql`(${id}, ${t})`.text).join(', ')
    try {
      await this.#ch.command(`INSERT INTO token_usage (token_id, last_used_at) VALUES ${values}`)
    } catch (err) {
      for (const [id, t] of entries) this.#usage.set(id, Math.max(t, this.#usage.get(id) ?? 0))
      throw err
    }
  }
}
