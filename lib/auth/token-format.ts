// Token format (docs/api.md section 3): `slp_` (PAT) or `sli_` (ingest token), 30 random base62
// characters, then 6 base62 characters of the CRC-32 (IEEE) of those 30 characters, big-endian,
// left-padded with '0'. 40 characters in all. The checksum lets us reject a mistyped or made-up
// token without a storage lookup, and lets secret scanners recognise ours. Only the SHA-256 of
// the whole token is ever stored.
import { createHash, randomInt, timingSafeEqual } from 'node:crypto'
import { crc32 } from 'node:zlib'

export const tokenKinds = { pat: 'slp_', ingest: 'sli_' } as const
export type TokenKind = keyof typeof tokenKinds

const alphabet = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'
const randomLength = 30
const checksumLength = 6
export const tokenLength = 4 + randomLength + checksumLength

function base62 (value: number, width: number): string {
  let out = ''
  let n = value
  while (n > 0) {
    out = alphabet[n % 62] + out
    n = Math.floor(n / 62)
  }
  return out.padStart(width, '0')
}

export function checksumOf (body: string): string {
  return base62(crc32(Buffer.from(body, 'ascii')), checksumLength)
}

/** A new token of the given kind with 30 × log2(62) ≈ 178 bits of randomness. */
export function generateToken (kind: TokenKind): string {
  let body = ''
  for (let i = 0; i < randomLength; i++) body += alphabet[randomInt(62)]
  return tokenKinds[kind] + body + checksumOf(body)
}

const shapePattern = /^(slp_|sli_)([0-9A-Za-z]{30})([0-9A-Za-z]{6})$/

/** The kind of a well-formed token whose checksum holds, else null. */
export function parseToken (token: string): TokenKind | null {
  const m = shapePattern.exec(token)
  if (!m) return null
  if (checksumOf(m[2]) !== m[3]) return null
  return m[1] === tokenKinds.pat ? 'pat' : 'ingest'
}

export function hashToken (token: string): string {
  return createHash('sha256').update(token).digest('hex')
}

/** Constant-time comparison of two hex digests of equal length. */
export function hashesEqual (a: string, b: string): boolean {
  const x = Buffer.from(a, 'hex')
  const y = Buffer.from(b, 'hex')
  return x.length === y.length && timingSafeEqual(x, y)
}

/** What lists show instead of the secret: prefix + first 4 + … + last 4. */
export function displayToken (token: string): string {
  return token.slice(0, 8) + '…' + token.slice(-4)
}

/** Random identifiers for records (not secrets): a prefix and 16 base62 characters. */
export function generateId (prefix: string): string {
  let out = prefix + '_'
  for (let i = 0; i < 16; i++) out += alphabet[randomInt(62)]
  return out
}
