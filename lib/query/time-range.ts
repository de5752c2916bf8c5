// The `from` and `to` query parameters of events, stats and tail, as milliseconds since the epoch.
//
// Contract:
// - Each accepts RFC 3339 (`2025-11-21T10:00:00Z`, `2025-11-21T12:00:00.250+02:00`; fractions past
//   milliseconds are truncated), epoch milliseconds (`1763700000000`), `now`, `now-<n><unit>` or
//   `now+<n><unit>` with unit s, m, h or d (`now-15m`, `now-24h`, `now-7d`, `now+1d`): events may
//   carry a ts up to two days ahead, which a `to=now` would hide.
// - Absent (undefined or null) `to` is now; absent `from` is 15 minutes before `to` (not before
//   the epoch). An empty string is a value, and not a valid one.
// - The range is half-open [from, to) and from < to; times before the epoch are refused.
// - Every refusal is SluiceError('invalid_query') naming the parameter.
import { SluiceError } from '../errors.ts'

export interface TimeRange {
  /** ms since the epoch, inclusive. */
  from: number
  /** ms since the epoch, exclusive. */
  to: number
}

export interface TimeRangeInput {
  from?: string | null
  to?: string | null
}

/** 15 minutes: the default range, "the last 15 minutes" (docs/api.md section 7.1). */
export const defaultRangeMs = 15 * 60_000

const unitMs: Readonly<Record<string, number>> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }
const relativePattern = /^now(?:([+-])([0-9]{1,9})([smhd]))?$/
const epochPattern = /^[0-9]{1,16}$/
// RFC 3339 section 5.6: full-date "T" full-time, with "t"/"z" allowed lower case (section 5.6 note).
const rfc3339Pattern = /^([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt]([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]+))?(?:([Zz])|([+-])([0-9]{2}):([0-9]{2}))$/

function daysInMonth (year: number, month: number): number {
  return new Date(Date.UTC(year, month, 0)).getUTCDate()
}

function parseRfc3339 (text: string): number | null {
  const m = rfc3339Pattern.exec(text)
  if (!m) return null
  const [year, month, dayOfMonth, hour, minute, second] = m.slice(1, 7).map(Number)
  // Second 60 is a leap second (RFC 3339 allows it); Date.UTC carries it into the next minute.
  // Years before 1970 are refused here already: Date.UTC would read 0070 as 1970.
  if (year < 1970 || month < 1 || month > 12 || dayOfMonth < 1 || dayOfMonth > daysInMonth(year, month) ||
      hour > 23 || minute > 59 || second > 60) return null
  const ms = m[7] ? Number(m[7].slice(0, 3).padEnd(3, '0')) : 0
  let offsetMin = 0
  if (!m[8]) {
    const offsetHour = Number(m[10])
    const offsetMinute = Number(m[11])
    if (offsetHour > 23 || offsetMinute > 59) return null
    offsetMin = (m[9] === '-' ? -1 : 1) * (offsetHour * 60 + offsetMinute)
  }
  return Date.UTC(year, month - 1, dayOfMonth, hour, minute, second, ms) - offsetMin * 60_000
}

/** One time parameter to ms since the epoch; `now` is the caller's clock, ms. */
export function parseTime (name: string, text: string, now: number): number {
  let value: number | null = null
  const relative = relativePattern.exec(text)
  if (relative) {
    value = relative[1] === undefined ? now : now + (relative[1] === '-' ? -1 : 1) * Number(relative[2]) * unitMs[relative[3]]
  } else if (epochPattern.test(text)) {
    value = Number(text)
  } else {
    value = parseRfc3339(text)
  }
  if (value === null || !Number.isSafeInteger(value)) {
    throw new SluiceError('invalid_query', `${name}: expected RFC 3339, epoch milliseconds, now or now±<n><s|m|h|d> (got ${JSON.stringify(text)})`, { details: { parameter: name } })
  }
  if (value < 0) throw new SluiceError('invalid_query', `${name}: ${JSON.stringify(text)} is before 1970-01-01T00:00:00Z`, { details: { parameter: name } })
  return value
}

export function parseTimeRange (input: TimeRangeInput, now: number): TimeRange {
  const to = input.to === undefined || input.to === null ? now : parseTime('to', input.to, now)
  const from = input.from === undefined || input.from === null ? Math.max(0, to - defaultRangeMs) : parseTime('from', input.from, now)
  if (from >= to) throw new SluiceError('invalid_query', `from must be before to (got from=${from}, to=${to} ms)`, { details: { parameter: 'from' } })
  return { from, to }
}
