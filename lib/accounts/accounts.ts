// Creating and revoking the things an org is made of: orgs with their owner, PATs, streams and
// ingest tokens. Routes, the bootstrap and tests all go through here, so a token is minted, hashed
// and recorded in exactly one way.
import { SluiceError } from '../errors.ts'
import type { Config } from '../config.ts'
import type { IngestTokenRecord, MetadataStore, OrgRecord, PatRecord, StreamRecord, UserRecord } from '../storage/metadata-store.ts'
import { displayToken, generateId, generateToken, hashToken } from '../auth/token-format.ts'

export interface IssuedPat { pat: PatRecord, token: string }
export interface IssuedIngestToken { record: IngestTokenRecord, token: string }

/** Days of events a stream keeps when none is given. */
export const defaultRetentionDays = 30

export class Accounts {
  readonly store: MetadataStore
  /** The clock (ms) that stamps records and decides expiry; tests move it instead of waiting. */
  readonly now: () => number
  #tokens: Config['tokens']

  constructor (store: MetadataStore, tokens: Config['tokens'], now: () => number = Date.now) {
    this.store = store
    this.#tokens = tokens
    this.now = now
  }

  /** A new org, its owner `admin`, and a PAT with every in-org ability (`*`). */
  async createOrgWithOwner (name: string, now: number, extraAbilities: string[] = [], secret?: string): Promise<{ org: OrgRecord, user: UserRecord } & IssuedPat> {
    if (this.store.orgByName(name)) throw new SluiceError('conflict', `An org named ${name} exists already`)
    const org: OrgRecord = { id: generateId('org'), name, createdAt: now }
    const user: UserRecord = { id: generateId('usr'), orgId: org.id, name: 'admin', createdAt: now }
    await this.store.createOrg(org)
    await this.store.createUser(user)
    const issued = await this.createPat(user, `${name} owner`, ['*', ...extraAbilities], null, now, secret)
    return { org, user, ...issued }
  }

  /** A PAT for `user`. `ttlS` null uses the configured default (0 there: no expiry). */
  async createPat (user: UserRecord, name: string, abilities: string[], ttlS: number | null, now: number, secret?: string): Promise<IssuedPat> {
    const token = secret ?? generateToken('pat')
    const ttl = ttlS ?? this.#tokens.defaultPatTtlS
    const pat: PatRecord = {
      id: generateId('pat'), orgId: user.orgId, userId: user.id, name, tokenHash: hashToken(token),
      display: displayToken(token), abilities: [...new Set(abilities)], createdAt: now,
      expiresAt: ttl > 0 ? now + ttl * 1000 : null, revokedAt: null, lastUsedAt: null,
    }
    await this.store.savePat(pat)
    return { pat, token }
  }

  async revokePat (pat: PatRecord, now: number): Promise<void> {
    if (pat.revokedAt !== null) return
    await this.store.savePat({ ...pat, revokedAt: now })
  }

  async createStream (orgId: string, name: string, description: string, retentionDays: number, now: number): Promise<StreamRecord> {
    if (this.store.stream(orgId, name)) throw new SluiceError('conflict', `A stream named ${name} exists already`)
    // The cache above answers most repeats; concurrent creators (on this node or others) claim the
    // name in ClickHouse, and only the first claim committed saves its stream.
    const claim = await this.store.claimStreamName(orgId, name, now)
    if (claim === null) throw new SluiceError('conflict', `A stream named ${name} exists already`)
    const stream: StreamRecord = { orgId, name, description, retentionDays, createdAt: now }
    try {
      await this.store.saveStream(stream)
    } catch (err) {
      // Unclaimed, the name can be created again (else it would stay taken with no stream).
      await this.store.releaseStreamClaim(claim)
      throw err
    }
    return stream
  }

  async issueIngestToken (stream: StreamRecord, name: string, ttlS: number | null, now: number): Promise<IssuedIngestToken> {
    const token = generateToken('ingest')
    const record: IngestTokenRecord = {
      id: generateId('tok'), orgId: stream.orgId, stream: stream.name, name, tokenHash: hashToken(token),
      display: displayToken(token), createdAt: now, expiresAt: now + (ttlS ?? this.#tokens.defaultIngestTtlS) * 1000,
      revokedAt: null, lastUsedAt: null,
    }
    await this.store.saveIngestToken(record)
    return { record, token }
  }

  async revokeIngestToken (record: IngestTokenRecord, now: number): Promise<void> {
    if (record.revokedAt !== null) return
    await this.store.saveIngestToken({ ...record, revokedAt: now })
  }
}
