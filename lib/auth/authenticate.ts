// Authentication and authorization (docs/api.md section 4), in the order given there:
// header shape (401) → token checksum (403, no lookup) → known, not expired, not revoked (403)
// → token kind for the route (403) → ability or stream (403). Resource existence (404) is the
// route's job, after this.
import type { IncomingMessage } from 'node:http'
import { SluiceError } from '../errors.ts'
import type { MetadataStore, IngestTokenRecord, OrgRecord, PatRecord, UserRecord } from '../storage/metadata-store.ts'
import { hashToken, hashesEqual, parseToken } from './token-format.ts'
import type { TokenKind } from './token-format.ts'
import { hasAbility } from './abilities.ts'
import type { Ability } from './abilities.ts'

export interface PatPrincipal { kind: 'pat', pat: PatRecord, org: OrgRecord, user: UserRecord }
export interface IngestPrincipal { kind: 'ingest', token: IngestTokenRecord, org: OrgRecord }

// RFC 6750 b64token (token68) after a case-insensitive "Bearer" scheme.
const bearerPattern = /^bearer +([A-Za-z0-9\-._~+/]+=*) *$/i
// RFC 7617 Basic credentials (base64 of "user:password"); the token is the password (docs/api.md
// section 4, for shippers that only do Basic: Elasticsearch and Loki clients).
const basicPattern = /^basic +([A-Za-z0-9+/]+=*) *$/i
const malformed = 'Malformed Authorization header: send Authorization: Bearer <token> (or Basic with the token as the password)'

/**
 * The token of a request, or a 401: `Bearer <token>`, or `Basic` with the token as the password
 * (any user name). Two Authorization headers are refused: a proxy in front that reads the other
 * one would authorize a different token than Sluice does.
 */
export function readBearerToken (req: IncomingMessage): string {
  const header = req.headers.authorization
  if (header === undefined || header === '') {
    throw new SluiceError('unauthorized', 'Missing Authorization header: send Authorization: Bearer <token>')
  }
  let seen = 0
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    if (req.rawHeaders[i].length === 13 && req.rawHeaders[i].toLowerCase() === 'authorization') seen++
  }
  if (seen > 1) throw new SluiceError('unauthorized', 'Send one Authorization header, not several')
  const m = bearerPattern.exec(header)
  if (m) return m[1]
  const b = basicPattern.exec(header)
  if (b) {
    const decoded = Buffer.from(b[1], 'base64').toString('latin1')
    const colon = decoded.indexOf(':')
    const password = colon < 0 ? '' : decoded.slice(colon + 1)
    if (/^[A-Za-z0-9\-._~+/]+=*$/.test(password)) return password
  }
  throw new SluiceError('unauthorized', malformed)
}

function invalid (): SluiceError {
  return new SluiceError('invalid_token')
}

function isLive (record: { expiresAt: number | null, revokedAt: number | null }, now: number): boolean {
  return record.revokedAt === null && (record.expiresAt === null || record.expiresAt > now)
}

/** Told of each failed authentication (401 unauthorized, 403 invalid_token): the audit log counts them. */
export type AuthFailureListener = (address: string, code: 'unauthorized' | 'invalid_token') => void

export class Authenticator {
  #store: MetadataStore
  #now: () => number
  #onFailure: AuthFailureListener | null

  /** `now` is the clock that decides expiry (ms); tests move it instead of waiting. */
  constructor (store: MetadataStore, now: () => number = Date.now, onFailure: AuthFailureListener | null = null) {
    this.#store = store
    this.#now = now
    this.#onFailure = onFailure
  }

  #resolve (req: IncomingMessage, expected: TokenKind, now: number): PatPrincipal | IngestPrincipal {
    try {
      return this.#resolveToken(req, expected, now)
    } catch (err) {
      const code = (err as SluiceError).code
      if (this.#onFailure !== null && (code === 'unauthorized' || code === 'invalid_token')) {
        this.#onFailure(req.socket.remoteAddress ?? '', code)
      }
      throw err
    }
  }

  #resolveToken (req: IncomingMessage, expected: TokenKind, now: number): PatPrincipal | IngestPrincipal {
    const token = readBearerToken(req)
    const kind = parseToken(token)
    if (kind === null) throw invalid() // bad shape or checksum: no lookup
    const hash = hashToken(token)
    if (kind === 'pat') {
      const pat = this.#store.patByHash(hash)
      if (!pat || !hashesEqual(pat.tokenHash, hash) || !isLive(pat, now)) throw invalid()
      const org = this.#store.org(pat.orgId)
      const user = this.#store.user(pat.userId)
      if (!org || !user) throw invalid()
      if (expected !== 'pat') throw new SluiceError('wrong_token_kind', 'A personal access token cannot send events; use an ingest token')
      this.#store.touchToken(pat, now)
      return { kind: 'pat', pat, org, user }
    }
    const tok = this.#store.ingestTokenByHash(hash)
    if (!tok || !hashesEqual(tok.tokenHash, hash) || !isLive(tok, now)) throw invalid()
    const org = this.#store.org(tok.orgId)
    if (!org) throw invalid()
    if (expected !== 'ingest') throw new SluiceError('wrong_token_kind', 'An ingest token can only send events; use a personal access token')
    this.#store.touchToken(tok, now)
    return { kind: 'ingest', token: tok, org }
  }

  /**
   * Whether a PAT that authenticated a request earlier still would: not revoked (on this node at
   * once, on others after their metadata refresh), not expired, its org and user still there.
   * For what stays open after the check (a live tail).
   */
  stillLive (principal: PatPrincipal): boolean {
    const pat = this.#store.patByHash(principal.pat.tokenHash)
    return pat !== undefined && isLive(pat, this.#now()) && this.#store.org(pat.orgId) !== undefined && this.#store.user(pat.userId) !== undefined
  }

  /** A PAT holding `ability`, or the 401/403 of docs/api.md section 4. */
  requirePat (req: IncomingMessage, ability: Ability): PatPrincipal {
    const principal = this.#resolve(req, 'pat', this.#now()) as PatPrincipal
    if (!hasAbility(principal.pat.abilities, ability)) {
      throw new SluiceError('insufficient_ability', `This token lacks the ability ${ability}`)
    }
    return principal
  }

  /**
   * Any live ingest token, or the 401/403 of docs/api.md section 4: for the protocol inputs
   * (OTLP, Loki), whose target is the token's own stream.
   */
  requireIngestToken (req: IncomingMessage): IngestPrincipal {
    return this.#resolve(req, 'ingest', this.#now()) as IngestPrincipal
  }

  /** An ingest token for `stream`, or the 401/403 of docs/api.md section 4. */
  requireIngest (req: IncomingMessage, stream: string): IngestPrincipal {
    const principal = this.#resolve(req, 'ingest', this.#now()) as IngestPrincipal
    if (principal.token.stream !== stream) {
      throw new SluiceError('forbidden_stream', `This ingest token writes to stream ${principal.token.stream} only`)
    }
    return principal
  }
}
