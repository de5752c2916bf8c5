// Event times: epoch numbers by magnitude and RFC 3339 text (docs/api.md section 6.4), to integer
// milliseconds since the epoch. Pure; the RFC 3339 reader runs on bytes in place, so the line
// scanner reads a ts string straight from the line.
import { Buffer } from 'node:buffer'

/**
 * Seconds, milliseconds, microseconds or nanoseconds by magnitude: below 1e11 is seconds (up to
 * year 5138), below 1e14 milliseconds (from 1973), below 1e17 microseconds, above nanoseconds.
 * Each unit is unambiguous for any date from 1973 to 5138. Rounded to the nearest millisecond
 * because s * 1000 is rarely exact in binary floating point. NaN when not finite.
 */
export function epochMsFromNumber (value: number): number {
  if (!Number.isFinite(value)) return NaN
  const magnitude = Math.abs(value)
  if (magnitude < 1e11) return Math.round(value * 1e3)
  if (magnitude < 1e14) return Math.round(value)
  if (magnitude < 1e17) return Math.round(value / 1e3)
  return Math.round(value / 1e6)
}

const daysInMonth = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
const zero = 0x30

/**
 * A string's characters as bytes for epochMsFromRfc3339Bytes (only ASCII can match). A Buffer,
 * as the line scanner's lines are: the reader then sees one kind of array from both callers.
 */
let rfc3339Text: Uint8Array = Buffer.allocUnsafeSlow(64)

/**
 * RFC 3339 date-time to ms since the epoch, NaN when malformed or not a real date (Date.parse
 * would take 2024-02-30 as March 1st, and years 0-99 as 19xx through Date.UTC). Fraction digits
 * are rounded to the nearest ms (half up), like numbers. A leap second (:60) is accepted, as
 * RFC 3339 allows, and lands on the next second.
 */
export function epochMsFromRfc3339 (text: string): number {
  if (text.length > rfc3339Text.length) rfc3339Text = Buffer.allocUnsafeSlow(2 * text.length)
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    rfc3339Text[i] = code < 0x80 ? code : 0
  }
  return epochMsFromRfc3339Bytes(rfc3339Text, 0, text.length)
}

/**
 * epochMsFromRfc3339 of the ASCII text src[start, end), read in place: the parse worker's line
 * scanner reads ts strings from the line's bytes. The shape is
 * `YYYY-MM-DD[Tt ]hh:mm:ss[.f+]([Zz]|[+-]hh:mm)`.
 */
export function epochMsFromRfc3339Bytes (src: Uint8Array, start: number, end: number): number {
  const length = end - start
  if (length < 20) return NaN
  const year = digitsAt(src, start, 4)
  const month = digitsAt(src, start + 5, 2)
  const day = digitsAt(src, start + 8, 2)
  const hour = digitsAt(src, start + 11, 2)
  const minute = digitsAt(src, start + 14, 2)
  const second = digitsAt(src, start + 17, 2)
  const t = src[start + 10]
  if (src[start + 4] !== 0x2d || src[start + 7] !== 0x2d || (t !== 0x54 && t !== 0x74 && t !== 0x20) ||
    src[start + 13] !== 0x3a || src[start + 16] !== 0x3a) return NaN
  // NaN digits fail every comparison below.
  if (!(month >= 1 && month <= 12 && day >= 1 && hour <= 23 && minute <= 59 && second <= 60 && year >= 0)) return NaN
  const isLeapYear = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0)
  if (day > daysInMonth[month - 1] + (month === 2 && isLeapYear ? 1 : 0)) return NaN
  // The zone designator ends the text: 'Z' or 'z', else a ±hh:mm offset.
  const last = src[end - 1]
  const zone = last === 0x5a || last === 0x7a ? end - 1 : end - 6
  let fractionMs = 0
  if (zone > start + 19) {
    // A fraction: '.' and at least one digit.
    if (src[start + 19] !== 0x2e || zone === start + 20) return NaN
    for (let i = start + 20, scale = 100; i < zone; i++, scale /= 10) {
      const digit = src[i] - zero
      if (!(digit >= 0 && digit <= 9)) return NaN
      if (scale >= 1) fractionMs += digit * scale
    }
    if (zone > start + 23 && src[start + 23] >= zero + 5) fractionMs++
  } else if (zone !== start + 19) {
    return NaN
  }
  let offsetMinutes = 0
  if (zone === end - 6) {
    const sign = src[zone]
    const offsetHour = digitsAt(src, zone + 1, 2)
    const offsetMinute = digitsAt(src, zone + 4, 2)
    if ((sign !== 0x2b && sign !== 0x2d) || src[zone + 3] !== 0x3a || !(offsetHour <= 23 && offsetMinute <= 59)) return NaN
    offsetMinutes = (sign === 0x2d ? -1 : 1) * (offsetHour * 60 + offsetMinute)
  }
  const seconds = daysFromCivil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second - offsetMinutes * 60
  return seconds * 1e3 + fractionMs
}

/** The decimal value of `count` digits at src[start], NaN when one is not a digit. */
function digitsAt (src: Uint8Array, start: number, count: number): number {
  let value = 0
  for (let i = start; i < start + count; i++) {
    const digit = src[i] - zero
    if (!(digit >= 0 && digit <= 9)) return NaN
    value = value * 10 + digit
  }
  return value
}

/** Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil). */
function daysFromCivil (year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year
  const era = Math.floor(y / 400)
  const yearOfEra = y - era * 400
  const dayOfYear = Math.floor((153 * (month > 2 ? month - 3 : month + 9) + 2) / 5) + day - 1
  const dayOfEra = yearOfEra * 365 + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100) + dayOfYear
  return era * 146097 + dayOfEra - 719468
}
