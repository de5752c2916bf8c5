// The numbers of `q`'s comparisons (`name:>10`, docs/api.md section 7.2), and the numeric value
// of a text (an attribute, a string column), identical in ClickHouse and in the tail's JS.
//
// Why not toFloat64(text) against Number(text): ClickHouse 18.16 reads decimal text with a fast
// routine that is off by one unit in the last place for about 1 text in 200 (measured on random
// decimals: `1.985`, `2.57741456`, and a third of texts with an exponent), and its SQL parser
// reads float literals the same way, so a boundary value would compare differently in the tail.
// Instead a number is its digits as an integer m (at most 19 digits, so m fits a UInt64) and a
// power of ten 10^k with |k| <= 18 (exact as a double): m as a double, then m * 10^k or m / 10^-k.
// Up to 15 digits m is exact and the value is the correctly rounded one; past 15 (the 16 and 17
// significant digits JavaScript, Python and Go print a double with: 99.81234567890122,
// 0.30000000000000004) m is rounded to the nearest double first, the same in both engines
// (ClickHouse converts the UInt64, JavaScript Number() the digits: both round to nearest), so
// the two still compute the same double, bit for bit, at most an ulp from the text's own value.
// Texts outside that (more digits, a larger scale, hex, `inf`, spaces) are not numbers.
//
// A number of q also means the double its text denotes (`nearest`, as Number() and JSON.parse
// read it), which for 16 or more digits may be an ulp from `value`: a client that sends
// 99.81234567890123 as a JSON number has it stored as JavaScript prints that double,
// 99.81234567890122, whose value is the double itself, while q's 99.81234567890123 rounds its
// digits to ...124 first (explore34 F1). So a comparison takes both (compareBounds): `=` holds for
// either, `>=` and `<` compare with the lower, `>` and `<=` with the higher. Up to 15 digits the
// two are the same double, and nothing changes.

/** Most digits a number may have (integer and fraction together): m fits a UInt64 (below 10^19). */
export const maxNumberDigits = 19
/** Largest |k| in m * 10^k: 10^18 is exact as a double. */
export const maxNumberScale = 18

/** A number as q and the tail read it: the digits, the power of ten, and the value. */
export interface FilterNumber {
  /** The digits as an integer (< 10^19), as the nearest double past 2^53. */
  readonly mantissa: number
  /** The power of ten: value = ±mantissa * 10^scale. */
  readonly scale: number
  readonly negative: boolean
  readonly value: number
  /** The double nearest the text's own value (Number(text)); `value` itself up to 15 digits. */
  readonly nearest: number
}

/** The syntax of a number: an optional minus, digits, an optional fraction, an optional exponent of 1-3 digits. */
export const numberPattern = /^(-?)([0-9]+)(?:\.([0-9]+))?(?:[eE]([+-]?[0-9]{1,3}))?$/

/** 10^0..10^18, each exact as a double. */
export const powersOfTen: readonly number[] = Array.from({ length: maxNumberScale + 1 }, (_, k) => 10 ** k)

/** `text` as a number, or null when it is not one (see the top of this file). */
export function readNumber (text: string): FilterNumber | null {
  const m = numberPattern.exec(text)
  if (m === null) return null
  const fraction = m[3] ?? ''
  const digits = m[2] + fraction
  if (digits.length > maxNumberDigits) return null
  const scale = (m[4] === undefined ? 0 : Number(m[4])) - fraction.length
  if (scale < -maxNumberScale || scale > maxNumberScale) return null
  const mantissa = Number(digits)
  const negative = m[1] === '-'
  const magnitude = scale >= 0 ? mantissa * powersOfTen[scale] : mantissa / powersOfTen[-scale]
  const value = negative ? -magnitude : magnitude
  return { mantissa, scale, negative, value, nearest: digits.length <= 15 ? value : Number(text) }
}

/**
 * The bounds a comparison with `n` uses (see the top of this file): the lower and the higher of
 * its two doubles; the same double up to 15 digits.
 */
export function compareBounds (n: FilterNumber): { low: number, high: number } {
  return { low: Math.min(n.value, n.nearest), high: Math.max(n.value, n.nearest) }
}

/** The numeric value of `text` (readNumber's), or null. */
export function numberValue (text: string): number | null {
  return readNumber(text)?.value ?? null
}
