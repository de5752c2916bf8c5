// Case folding for text search, identical in JS and in ClickHouse.
//
// Contract: foldCase(s) returns exactly what ClickHouse's lowerUTF8 returns for the UTF-8 bytes
// Sluice stores for s, as a JS string. The SQL filter searches `position(lowerUTF8(col), needle)`
// and the live-tail matcher searches `foldCase(col).includes(needle)`, both with the needle folded
// here, so a row matches in one exactly when it matches in the other.
//
// Why emulate lowerUTF8 instead of calling toLowerCase() on both sides: ClickHouse (18.16 and
// current, src/Functions/LowerUpperUTF8Impl.h) lowers one code point at a time with Poco's
// Unicode tables (PCRE's, Unicode 7.0), only upper-case letters (Lu, not title case like ǅ), only
// when the lower-case letter has the same UTF-8 length (so not ẞ or İ), and never in U+0080-U+00BF
// or U+2000-U+2FFF (so not the Kelvin sign or Roman numerals). JS's toLowerCase() follows current
// Unicode, context rules (final sigma) included. positionCaseInsensitiveUTF8 is not an option:
// it throws UNSUPPORTED_PARAMETER for needles such as "ı" or "ſ".
//
// The ranges below are the blocks where Poco's tables lower anything (found by lowering every code
// point on 18.16); within them the JS simple lower-case mapping agrees with Poco's.
// test/query/case-fold.test.ts checks every code point against a live server.

// Latin-1 letters to Latin Extended-B, Greek and Cyrillic, Armenian, Georgian, Latin Extended
// Additional and Greek Extended, Cyrillic Extended-B and Latin Extended-D as of Unicode 7.0,
// full-width Latin, Deseret, Warang Citi.
const foldable = /[A-Z\u00C0-\u024F\u0370-\u052F\u0531-\u0556\u10A0-\u10CD\u1E00-\u1FFF\uA640-\uA7AD\uFF21-\uFF3A\u{10400}-\u{1044F}\u{118A0}-\u{118BF}]/gu
const upperCaseLetter = /^\p{Lu}$/u

function utf8Length (codePoint: number): number {
  return codePoint < 0x80 ? 1 : codePoint < 0x800 ? 2 : codePoint < 0x10000 ? 3 : 4
}

// Built once: a few thousand candidates, about 860 of which lower.
const folds = new Map<string, string>()
for (const [first, last] of [[0x41, 0x5A], [0xC0, 0x24F], [0x370, 0x52F], [0x531, 0x556], [0x10A0, 0x10CD],
  [0x1E00, 0x1FFF], [0xA640, 0xA7AD], [0xFF21, 0xFF3A], [0x10400, 0x1044F], [0x118A0, 0x118BF]]) {
  for (let cp = first; cp <= last; cp++) {
    const ch = String.fromCodePoint(cp)
    if (!upperCaseLetter.test(ch)) continue
    const lower = ch.toLowerCase()
    const lowerCp = lower.codePointAt(0) as number
    if (lower === String.fromCodePoint(lowerCp) && utf8Length(lowerCp) === utf8Length(cp)) folds.set(ch, lower)
  }
}

// eslint-disable-next-line no-control-regex -- the ASCII range starts at \x00
const nonAscii = /[^\x00-\x7F]/

/**
 * The fold table as translateUTF8's two arguments: the letters that lower, and their lower-case
 * letters, code point for code point. On servers whose lowerUTF8 is not 18.16's (26.x lowers with
 * ICU), the SQL filter folds with translateUTF8(col, from, to) instead (filter-sql.ts), which is
 * exactly foldCase.
 */
export function foldTable (): { from: string, to: string } {
  return { from: [...folds.keys()].join(''), to: [...folds.values()].join('') }
}

/** Text whose lowerUTF8 tells 18.16's folding from ICU's (İ, ẞ, ǅ, the Kelvin sign). */
export const foldProbe = '\u0130\u1E9E\u01C5\u212A'

function foldChar (ch: string): string {
  return folds.get(ch) ?? ch
}

/**
 * Lower-cases `text` the way ClickHouse's lowerUTF8 does. A lone surrogate becomes U+FFFD first,
 * as the row serializer stores it.
 */
export function foldCase (text: string): string {
  // Most log text is ASCII, where toLowerCase() changes exactly A-Z, like lowerUTF8.
  if (!nonAscii.test(text)) return text.toLowerCase()
  return toWellFormed(text).replace(foldable, foldChar)
}

/** `text` as ClickHouse stores it: a lone surrogate (from a JSON "\ud800" escape) becomes U+FFFD. */
export function toWellFormed (text: string): string {
  return text.isWellFormed() ? text : text.toWellFormed()
}
