// Orgs, users, PATs, streams and ingest tokens, kept in ClickHouse and cached in memory.
//
// Contract:
// - Reads are served from memory; authentication never waits on ClickHouse.
// - A write goes to ClickHouse first and, once it succeeded, into this node's cache: a change made
//   through this node applies here at once. Other nodes see it at their next refresh
//   (refreshIntervalMs, default 5 s), which reloads every table whole.
// - Token use times are kept in memory and written in the background at each refresh, to their own
//   table, so a use recorded on one node never undoes a revocation made on another.
// - Stream names are unique per org across nodes (claimStreamName): a creator inserts a claim and
//   reads back every claim of the name's current incarnation; the claim the server committed
//   first (lowest block number, 005_stream_lifecycle.ts) wins, the others answer 409. A claim
//   committed after the winner read has a higher number, so no two creators both win.
// - Deleting a stream records a deletion (stream_deletions), then runs ALTER ... DELETE on
//   `events` and every rollup table (asynchronous mutations, seconds to minutes). Reads of a
//   stream created again under the name hide rows received before the last deletion
//   (hiddenBefore) and, until the mutations are done (rollupsPurged), read raw rows instead of
//   rollups, so deleted data never shows, not even while the delete runs. The deleting node
//   watches the mutations and records the purge; any node's refresh does it for deletions older
//   than purgeCheckAfterMs, in case the deleting node stopped first. In cluster mode each ON
//   CLUSTER delete waits at most ddlWaitSeconds for the hosts (lib/storage/on-cluster.ts): the
//   deleting node keeps the queue entries some host had not run yet, and records the purge only
//   once each shard has run them (ddlTaskState: one replica per shard runs a replicated
//   table's ALTER, the others take the mutation by replication) and the mutations are done.
// - A reload never undoes a write made through this node while it ran (its SELECTs may have
//   read before the write's INSERT): the writes' cache changes are applied again on top of it.
import type { ClickHouse } from './clickhouse.ts'
import type { Logger } from '../logger.ts'
import { rawSql, sql } from './sql.ts'
import { SluiceError } from '../errors.ts'
import { randomUUID } from 'node:crypto'
import { streamDataTables, retentionTtl, syncRetentionTtl } from './retention-ttl.ts'
import { localTableName } from './cluster-ddl.ts'
import { commandOnCluster, ddlTaskState, deleteRowsStatement, deletionDdlWaitSeconds } from './on-cluster.ts'
import type { ClusterTarget } from './cluster-ddl.ts'

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

/** The deletions of one stream name in one org (stream_deletions). */
export interface StreamDeletions {
  /** Deletions so far: the name's current incarnation (claims compete within it). */
  count: number
  /** ms (the deleting node's clock) of the newest deletion. */
  lastDeletedAt: number
  /** Whether every deletion's mutations have run on `events` and the rollups. */
  purged: boolean
}

/** A node's refresh checks the purge of deletions older than this (ms): their mutations exist by then. */
const purgeCheckAfterMs = 60_000
/** ms between two looks at system.mutations while the deleting node waits for its purge. */
const purgePollMs = 250

interface Row { [key: string]: unknown }

/** The block number the server gave a claim's INSERT: `<partition>_<min block>_<max block>_<level>`. */
function blockOf (part: string): number {
  const fields = part.split('_')
  return Number(fields[fields.length - 3])
}

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
  /** Cluster name (clickhouse.cluster): deletions then run ON CLUSTER on the local tables; null: one node. */
  cluster?: string | null
  /**
   * Delete a stream's rows with lightweight `DELETE FROM` (the server has it, one node;
   * docs/schema-versions.md): the rows are masked and their parts rewritten by merges later,
   * instead of a mutation rewriting every part. Default false: ALTER DELETE. Both are queued
   * (on-cluster.ts deleteRowsStatement); reads hide the rows by the deletion's time meanwhile.
   */
  lightweightDelete?: boolean
  /** Cluster mode: how long a deletion's ON CLUSTER statements wait for the hosts (lib/storage/on-cluster.ts). */
  ddlWaitSeconds?: number
  /**
   * Keep the stream data tables' TTL at the streams' retention (the server has TTL, one node;
   * lib/storage/retention-ttl.ts): at start, after a stream is saved or deleted, and after a
   * refresh that finds another node's change. Default false: the janitor alone.
   */
  retentionTtl?: boolean
}

export class MetadataStore {
  #ch: ClickHouse
  #log: Logger
  #refreshIntervalMs: number
  #cluster: ClusterTarget | null
  #lightweightDelete: boolean
  #ddlWaitSeconds: number
  #retentionTtl: boolean
  /** The streams' retention (as a TTL text) the tables' TTL was last brought to; null: not yet. */
  #ttlSyncedFor: string | null = null
  /** Deletion statements some hosts still have to run, by their queue entry's ZooKeeper path (lib/storage/on-cluster.ts). */
  #lateDdlTasks = new Map<string, string>()
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
  #deletions = new Map<string, StreamDeletions>() // key: orgId + '/' + name
  /** Streams whose deletion runs on this node now (key: orgId + '/' + name). */
  readonly #deleting = new Set<string>()
  #purgeTimers = new Set<NodeJS.Timeout>()
  #stopped = false
  /** Cache changes of writes made while a reload may be running, replayed over its result. */
  #localWrites: Array<{ seq: number, apply: () => void }> = []
  #writeSeq = 0

  constructor (options: MetadataStoreOptions) {
    this.#ch = options.clickhouse
    this.#log = options.log
    this.#refreshIntervalMs = options.refreshIntervalMs
    this.#cluster = options.cluster ? { cluster: options.cluster, database: options.clickhouse.database } : null
    this.#lightweightDelete = options.lightweightDelete === true && this.#cluster === null
    this.#ddlWaitSeconds = options.ddlWaitSeconds ?? deletionDdlWaitSeconds
    this.#retentionTtl = options.retentionTtl === true && this.#cluster === null
  }

  /**
   * Brings the tables' TTL to the streams' retention when this node's view of it changed since
   * the last time (lib/storage/retention-ttl.ts reads ClickHouse, not this cache). A failure is
   * logged; the next refresh tries again.
   */
  async #syncTtl (force = false): Promise<void> {
    if (!this.#retentionTtl) return
    const view = retentionTtl(this.allStreams(), 'ts')
    if (!force && view === this.#ttlSyncedFor) return
    try {
      const ran = await syncRetentionTtl(this.#ch, streamDataTables)
      if (ran.length > 0) this.#log.info('retention TTL updated', { tables: ran.length })
      this.#ttlSyncedFor = view
    } catch (err) {
      this.#log.warn('retention TTL not updated; the next metadata refresh tries again', { err })
    }
  }

  /** Loads everything, then refreshes on a timer until stop(). */
  async start (): Promise<void> {
    await this.reload()
    await this.#syncTtl()
    const tick = (): void => {
      this.#timer = setTimeout(() => {
        this.#writeUsage()
          .then(() => this.reload())
          .then(() => this.#syncTtl())
          .then(() => this.#checkOldPurges())
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
    this.#stopped = true
    for (const timer of this.#purgeTimers) clearTimeout(timer)
    this.#purgeTimers.clear()
    await this.#writeUsage().catch((err: unknown) => this.#log.warn('token usage write failed', { err }))
  }

  /** Replaces the cache with what ClickHouse holds now. */
  async reload (): Promise<void> {
    const since = this.#writeSeq
    const [orgs, users, pats, streams, tokens, usage, deletions] = await Promise.all([
      this.#ch.query<Row>('SELECT * FROM orgs FINAL WHERE deleted = 0'),
      this.#ch.query<Row>('SELECT * FROM users FINAL WHERE deleted = 0'),
      this.#ch.query<Row>('SELECT * FROM pats FINAL'),
      this.#ch.query<Row>('SELECT * FROM streams FINAL WHERE deleted = 0'),
      this.#ch.query<Row>('SELECT * FROM ingest_tokens FINAL'),
      this.#ch.query<Row>('SELECT token_id, max(last_used_at) AS t FROM token_usage GROUP BY token_id'),
      this.#ch.query<Row>(`SELECT org_id, name, count() AS deletions, max(deleted_at) AS last_deleted_at, min(purged_at) AS purged
        FROM stream_deletions FINAL GROUP BY org_id, name`),
    ])
    this.#deletions = new Map(deletions.map((r) => [`${String(r.org_id)}/${String(r.name)}`, {
      count: Number(r.deletions), lastDeletedAt: Number(r.last_deleted_at), purged: Number(r.purged) > 0,
    }]))
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
    for (const w of this.#localWrites) if (w.seq > since) w.apply()
    this.#localWrites = this.#localWrites.filter((w) => w.seq > since)
  }

  /** Applies a write's change to the cache, and again after any reload that was running. */
  #local (apply: () => void): void {
    apply()
    this.#localWrites.push({ seq: ++this.#writeSeq, apply })
  }

  /**
   * Two PATs can share a secret: a database copied into one whose first start used the same
   * SLUICE_BOOTSTRAP_TOKEN (docs/schema-versions.md, "Upgrade path"). The secret then means the
   * one not revoked, else the oldest: revoking the copy's own PAT, as the upgrade says, must not
   * lock the admin out (explore34b G8).
   */
  #putPat (p: PatRecord): void {
    this.#pats.set(p.id, p)
    const held = this.#patsByHash.get(p.tokenHash)
    if (held === undefined || (held.id === p.id && p.revokedAt === null)) {
      this.#patsByHash.set(p.tokenHash, p)
      return
    }
    let best = p
    for (const q of this.#pats.values()) if (q.tokenHash === p.tokenHash && betterPat(q, best)) best = q
    this.#patsByHash.set(p.tokenHash, best)
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

  /** The deletions of a stream name, if it was ever deleted. */
  deletionsOf (orgId: string, name: string): StreamDeletions | undefined { return this.#deletions.get(`${orgId}/${name}`) }

  /**
   * Rows of the stream received at or before this time (ms) belong to a deleted incarnation of
   * its name and must not be read; 0 when the name was never deleted.
   */
  hiddenBefore (orgId: string, name: string): number { return this.deletionsOf(orgId, name)?.lastDeletedAt ?? 0 }

  /** False while a deletion of the name may still have rows in the rollups: read raw rows instead. */
  rollupsPurged (orgId: string, name: string): boolean { return this.deletionsOf(orgId, name)?.purged ?? true }

  ingestTokenByHash (hash: string): IngestTokenRecord | undefined { return this.#ingestByHash.get(hash) }
  ingestToken (id: string): IngestTokenRecord | undefined { return this.#ingestTokens.get(id) }
  /**
   * The ingest tokens of the stream `stream` as it exists now: a token made for a deleted stream
   * of the same name (revoked with it) is not one of them (docs/api.md section 5.1).
   */
  ingestTokensOfStream (orgId: string, stream: string): IngestTokenRecord[] {
    const current = this.stream(orgId, stream)
    return [...this.#ingestTokens.values()]
      .filter((x) => x.orgId === orgId && x.stream === stream && (current === undefined || x.createdAt >= current.createdAt))
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
    this.#local(() => this.#orgs.set(org.id, org))
  }

  async createUser (user: UserRecord): Promise<void> {
    await this.#ch.command(sql`INSERT INTO users (id, org_id, name, created_at, deleted, version)
      VALUES (${user.id}, ${user.orgId}, ${user.name}, ${user.createdAt}, 0, ${this.#version()})`)
    this.#local(() => this.#users.set(user.id, user))
  }

  async savePat (p: PatRecord): Promise<void> {
    await this.#ch.command(sql`INSERT INTO pats
      (id, org_id, user_id, name, token_hash, display, abilities, created_at, expires_at, revoked_at, version)
      VALUES (${p.id}, ${p.orgId}, ${p.userId}, ${p.name}, ${p.tokenHash}, ${p.display}, ${p.abilities},
        ${p.createdAt}, ${p.expiresAt ?? 0}, ${p.revokedAt ?? 0}, ${this.#version()})`)
    this.#local(() => this.#putPat(p))
  }

  async saveStream (s: StreamRecord): Promise<void> {
    await this.#ch.command(sql`INSERT INTO streams (org_id, name, description, retention_days, created_at, deleted, version)
      VALUES (${s.orgId}, ${s.name}, ${s.description}, ${s.retentionDays}, ${s.createdAt}, 0, ${this.#version()})`)
    this.#local(() => this.#streams.set(`${s.orgId}/${s.name}`, s))
    await this.#syncTtl(true)
  }

  /**
   * Claims a stream name for creation: the claim's id when it won (the caller then saves the
   * stream, or releases the claim if it cannot), null when another creator's claim, on any node,
   * was committed first. A losing claim is dropped at once (its block number is above the
   * winner's, so no one's outcome changes), which keeps stream_claims near one partition per
   * stream.
   */
  async claimStreamName (orgId: string, name: string, at: number): Promise<string | null> {
    const [current] = await this.#ch.query<{ n: number }>(sql`SELECT count() AS n FROM stream_deletions FINAL
      WHERE org_id = ${orgId} AND name = ${name}`)
    const generation = Number(current.n)
    const claimId = randomUUID()
    await this.#ch.command(sql`INSERT INTO stream_claims (org_id, name, generation, claim_id, claimed_at)
      VALUES (${orgId}, ${name}, ${generation}, ${claimId}, ${at})`)
    const claims = await this.#ch.query<{ claim_id: string, part: string }>(sql`SELECT claim_id, _part AS part FROM stream_claims
      WHERE org_id = ${orgId} AND name = ${name} AND generation = ${generation}`)
    // Lowest block number first; equal blocks (cluster mode: a replicated table numbers blocks per
    // partition, so every claim is block 0) go to the lowest claim id, so every creator that sees
    // the same claims picks the same winner (docs/api.md section 5.2 has the cluster window).
    let winner = ''
    let lowest = Infinity
    for (const claim of claims) {
      const block = blockOf(claim.part)
      if (block < lowest || (block === lowest && claim.claim_id < winner)) {
        lowest = block
        winner = claim.claim_id
      }
    }
    if (winner === claimId) return claimId
    await this.releaseStreamClaim(claimId)
    return null
  }

  /** Drops a claim (its own partition); best effort: a claim left behind only costs a partition. */
  async releaseStreamClaim (claimId: string): Promise<void> {
    await this.#ch.command(sql`ALTER TABLE stream_claims DROP PARTITION ${claimId}`)
      .catch((err: unknown) => this.#log.warn('stream claim not released', { err, claim_id: claimId }))
  }

  /**
   * Marks the stream deleted, revokes its tokens, records the deletion (from then on reads of the
   * name hide the stream's old rows) and deletes its rows from `events` and the rollups, in
   * background mutations whose end is recorded as the deletion's purge.
   */
  async deleteStream (s: StreamRecord, at: number): Promise<void> {
    // Deletions of one stream racing on this node: the first deletes it; to the others it is
    // already gone, as it is to a deletion that comes after (one 204, one audit entry).
    const key = `${s.orgId}/${s.name}`
    if (this.#deleting.has(key)) throw new SluiceError('not_found', `No stream named ${JSON.stringify(s.name)} in this org`)
    this.#deleting.add(key)
    try {
      await this.#deleteStream(s, at, key)
    } finally {
      this.#deleting.delete(key)
    }
  }

  async #deleteStream (s: StreamRecord, at: number, key: string): Promise<void> {
    for (const tok of this.ingestTokensOfStream(s.orgId, s.name)) {
      if (tok.revokedAt === null) await this.saveIngestToken({ ...tok, revokedAt: at })
    }
    // The wall clock, not `at`: it is compared with rows' received_at, stamped by Date.now().
    const deletedAt = Math.max(Date.now(), this.hiddenBefore(s.orgId, s.name) + 1)
    await this.#ch.command(sql`INSERT INTO stream_deletions (org_id, name, deleted_at, purged_at, version)
      VALUES (${s.orgId}, ${s.name}, ${deletedAt}, 0, ${this.#version()})`)
    const previous = this.#deletions.get(key)
    const deletion = { count: (previous?.count ?? 0) + 1, lastDeletedAt: deletedAt, purged: false }
    this.#local(() => { if ((this.#deletions.get(key)?.lastDeletedAt ?? 0) < deletedAt) this.#deletions.set(key, { ...deletion }) })
    await this.#ch.command(sql`INSERT INTO streams (org_id, name, description, retention_days, created_at, deleted, version)
      VALUES (${s.orgId}, ${s.name}, ${s.description}, ${s.retentionDays}, ${s.createdAt}, 1, ${this.#version()})`)
    this.#local(() => this.#streams.delete(key))
    // Mutations apply to the parts that exist now, so a stream created again under the same name
    // keeps its new events. The tables at once: one after another, a cluster's DELETE took 8.5 s
    // with every host up and 22.5 s with a replica stopped (each statement waiting its
    // ddlWaitSeconds for it; explore27a).
    await Promise.all(streamDataTables.map(async (table) => {
      // Cluster mode: a host late to take its DDL queue runs the delete later; the purge waits for
      // it (#mutationsDone).
      const statement = deleteRowsStatement(table, sql`org_id = ${s.orgId} AND stream = ${s.name}`, this.#cluster, this.#lightweightDelete)
      this.#late(await commandOnCluster(this.#ch, statement, this.#ddlWaitSeconds, this.#cluster !== null), statement, table)
    }))
    this.#watchPurge(s.orgId, s.name)
    await this.#syncTtl(true)
  }

  /** Keeps a deletion statement that some hosts run later (`late`, its queue entry), to watch it. */
  #late (late: string | null, statement: string, table?: string): void {
    if (late === null) return
    if (late === '') this.#log.warn('a stream deletion runs later on some hosts, and its queue entry is unknown', { table })
    else this.#lateDdlTasks.set(late, statement)
  }

  /** True when no mutation of the stream data tables is still running. */
  async #mutationsDone (): Promise<boolean> {
    // Cluster mode: a deletion's statement some hosts had not run when it returned has no
    // mutation there yet.
    for (const [path, statement] of this.#lateDdlTasks) {
      const state = await ddlTaskState(this.#ch, this.#cluster!.cluster, path)
      if (state === 'running') return false
      if (state === 'failed') {
        // A shard ran none of it (ddlTaskState): once more, as a new queue entry.
        this.#log.warn('a stream deletion failed on some hosts; running it again', { path })
        this.#late(await commandOnCluster(this.#ch, statement, this.#ddlWaitSeconds), statement)
        this.#lateDdlTasks.delete(path)
        return false
      }
      this.#lateDdlTasks.delete(path)
    }
    // Cluster mode: the local tables, on one replica of every shard (each replica lists the
    // mutations of its replicated table with its own progress).
    const source = this.#cluster === null ? rawSql('system.mutations') : sql`cluster(${this.#cluster.cluster}, system, mutations)`
    const tables = this.#cluster === null ? streamDataTables : streamDataTables.map(localTableName)
    const [pending] = await this.#ch.query<{ n: number }>(sql`SELECT count() AS n FROM ${source}
      WHERE database = ${this.#ch.database} AND is_done = 0 AND has(${tables}, table)`)
    return Number(pending.n) === 0
  }

  /**
   * Records the purge of every deletion of the name still unpurged: called once no mutation of
   * the data tables runs, which covers the older deletions of the name too.
   */
  async #recordPurge (orgId: string, name: string): Promise<void> {
    const rows = await this.#ch.query<{ deleted_at: number }>(sql`SELECT deleted_at FROM stream_deletions FINAL
      WHERE org_id = ${orgId} AND name = ${name} AND purged_at = 0`)
    for (const r of rows) {
      await this.#ch.command(sql`INSERT INTO stream_deletions (org_id, name, deleted_at, purged_at, version)
        VALUES (${orgId}, ${name}, ${Number(r.deleted_at)}, ${Date.now()}, ${this.#version()})`)
    }
    const entry = this.#deletions.get(`${orgId}/${name}`)
    const newest = Math.max(0, ...rows.map((r) => Number(r.deleted_at)))
    if (entry && entry.lastDeletedAt <= newest) entry.purged = true
  }

  /** Polls system.mutations until the deletion's mutations are done, then records its purge. */
  #watchPurge (orgId: string, name: string): void {
    const poll = (): void => {
      const timer = setTimeout(() => {
        this.#purgeTimers.delete(timer)
        this.#mutationsDone()
          .then(async (done) => {
            if (done) await this.#recordPurge(orgId, name)
            else if (!this.#stopped) poll()
          })
          .catch((err: unknown) => {
            this.#log.warn('stream purge check failed; the next metadata refresh retries it', { err })
          })
      }, purgePollMs)
      timer.unref()
      this.#purgeTimers.add(timer)
    }
    poll()
  }

  /** Records the purge of deletions old enough that their mutations exist, once those are done. */
  async #checkOldPurges (): Promise<void> {
    const old = [...this.#deletions].filter(([, d]) => !d.purged && d.lastDeletedAt < Date.now() - purgeCheckAfterMs)
    if (old.length === 0 || !(await this.#mutationsDone())) return
    for (const [key] of old) {
      const slash = key.indexOf('/')
      await this.#recordPurge(key.slice(0, slash), key.slice(slash + 1))
    }
  }

  async saveIngestToken (tok: IngestTokenRecord): Promise<void> {
    await this.#ch.command(sql`INSERT INTO ingest_tokens
      (id, org_id, stream, name, token_hash, display, created_at, expires_at, revoked_at, version)
      VALUES (${tok.id}, ${tok.orgId}, ${tok.stream}, ${tok.name}, ${tok.tokenHash}, ${tok.display},
        ${tok.createdAt}, ${tok.expiresAt}, ${tok.revokedAt ?? 0}, ${this.#version()})`)
    this.#local(() => this.#putIngestToken(tok))
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

/** Of two PATs with one secret, whether `a` is the one it means: not revoked, else the older. */
function betterPat (a: PatRecord, b: PatRecord): boolean {
  if ((a.revokedAt === null) !== (b.revokedAt === null)) return a.revokedAt === null
  return a.createdAt < b.createdAt
}
