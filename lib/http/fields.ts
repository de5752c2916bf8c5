// Field checks for management request bodies. Each throws 422 validation_failed naming the field,
// so a client learns exactly what to fix.
import { SluiceError } from '../errors.ts'

export type Body = Record<string, unknown>

function fail (message: string): never {
  throw new SluiceError('validation_failed', message)
}

/** Rejects keys the endpoint does not know (a typo should not be silently ignored). */
export function allowOnly (body: Body, keys: readonly string[]): void {
  for (const key of Object.keys(body)) {
    if (!keys.includes(key)) fail(`unknown field ${JSON.stringify(key)}; allowed: ${keys.join(', ')}`)
  }
}

export function optionalString (body: Body, key: string, maxLength: number): string | undefined {
  const v = body[key]
  if (v === undefined || v === null) return undefined
  if (typeof v !== 'string') fail(`${key} must be a string`)
  if (v.length > maxLength) fail(`${key} must be at most ${maxLength} characters`)
  return v
}

export function optionalInteger (body: Body, key: string, min: number, max: number): number | undefined {
  const v = body[key]
  if (v === undefined || v === null) return undefined
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) fail(`${key} must be an integer ${min}-${max}`)
  return v
}

/** Stream and org names: `^[a-z0-9][a-z0-9_-]{0,62}$` (docs/api.md section 3). */
export const namePattern = /^[a-z0-9][a-z0-9_-]{0,62}$/

export function requiredName (body: Body, key: string): string {
  const v = body[key]
  if (typeof v !== 'string' || !namePattern.test(v)) {
    fail(`${key} must match ^[a-z0-9][a-z0-9_-]{0,62}$ (lowercase letters, digits, _ and -, up to 63 characters)`)
  }
  return v
}
