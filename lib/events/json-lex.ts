// JSON lexing primitives over UTF-8 bytes, shared by the line scanner (lib/ingest/line-scanner.ts)
// and the event row (event-row.ts): strings and their escapes, whitespace, number tokens' values,
// UTF-8 encoding of code points and of JS strings. Pure functions, except JsonLexer, whose fields
// hold what the last call read besides its return value (escapes seen, an escape's length): one
// lexer per scanner, so nothing is module-level mutable state.
//
// Bytes past a line's end read as undefined in a typed array, which fails every comparison here,
// so no scan runs past the buffer.
import { Buffer } from 'node:buffer'

export const QUOTE = 0x22
export const BACKSLASH = 0x5c
export const LF = 0x0a

// String escapes seen: simple ones (\" \\ \b \f \n \r \t, as JSON.stringify writes them), others
// (\/ and \u of a non-surrogate or of a surrogate pair), and \u of a lone surrogate.
export const escSimple = 1
export const escOther = 2
export const escSurrogate = 4

export class JsonLexer {
  /** Escapes (escSimple | escOther | escSurrogate) of the last string scanString() read. */
  escapes = 0
  /** Bytes of src the last escapeAt() or writeEscape() read: 2, 6 for \uXXXX, 12 for a surrogate pair. */
  escapeLength = 2

  /**
   * A string from its opening quote: returns the index after its closing quote, or -1 when it is
   * invalid (a control character, a bad escape, no closing quote on the line). Sets `escapes`.
   * Small enough for the JIT to inline into each caller.
   */
  scanString (src: Buffer, i: number): number {
    i++
    let c = src[i]
    // The common case: no escape and no control character before the closing quote.
    while (c !== QUOTE && c !== BACKSLASH && c >= 0x20) c = src[++i]
    if (c === QUOTE) {
      this.escapes = 0
      return i + 1
    }
    return this.#scanEscapedString(src, i)
  }

  /** The rest of a string from its first escape (or an invalid byte) at src[i]. */
  #scanEscapedString (src: Buffer, i: number): number {
    let escapes = 0
    for (;;) {
      const c = src[i]
      if (c === QUOTE) break
      if (c === BACKSLASH) {
        const kind = this.escapeAt(src, i)
        if (kind < 0) return -1
        escapes |= kind
        i += this.escapeLength
      } else if (c >= 0x20) {
        i++
      } else {
        return -1 // a control character, '\n' (the line's end) or past the buffer
      }
    }
    this.escapes = escapes
    return i + 1
  }

  /**
   * The kind of the escape at src[i] (its backslash): escSimple, escOther or escSurrogate (a lone
   * one); -1 when invalid. Sets escapeLength.
   */
  escapeAt (src: Buffer, i: number): number {
    const e = src[i + 1]
    this.escapeLength = 2
    if (e === QUOTE || e === BACKSLASH || e === 0x6e || e === 0x74 || e === 0x72 || e === 0x62 || e === 0x66) return escSimple
    if (e === 0x2f) return escOther
    if (e !== 0x75) return -1
    const code = hex4(src, i + 2)
    if (code < 0) return -1
    this.escapeLength = 6
    if (code < 0xd800 || code > 0xdfff) return escOther
    if (code < 0xdc00 && isLowSurrogateEscape(src, i + 6)) {
      this.escapeLength = 12 // a pair: one character
      return escOther
    }
    return escSurrogate
  }

  /**
   * Writes the character of the (valid, not a lone surrogate) escape at src[i] to out[at] as
   * UTF-8; returns the index after it and sets escapeLength.
   */
  writeEscape (src: Buffer, i: number, out: Uint8Array, at: number): number {
    const e = src[i + 1]
    this.escapeLength = 2
    switch (e) {
      case 0x6e: out[at++] = 0x0a; return at
      case 0x74: out[at++] = 0x09; return at
      case 0x72: out[at++] = 0x0d; return at
      case 0x62: out[at++] = 0x08; return at
      case 0x66: out[at++] = 0x0c; return at
      case 0x75: break
      default: out[at++] = e; return at // " \ /
    }
    let code = hex4(src, i + 2)
    this.escapeLength = 6
    if (code >= 0xd800 && code <= 0xdfff) {
      code = 0x10000 + ((code - 0xd800) << 10) + (hex4(src, i + 8) - 0xdc00)
      this.escapeLength = 12
    }
    return writeCodePoint(out, at, code)
  }

  /** Unescapes the string body src[start, end) (valid, no lone surrogate) to out[at] as UTF-8; returns the index after it. */
  unescapeInto (src: Buffer, start: number, end: number, out: Uint8Array, at: number): number {
    let i = start
    while (i < end) {
      const c = src[i]
      if (c !== BACKSLASH) {
        out[at++] = c
        i++
      } else {
        at = this.writeEscape(src, i, out, at)
        i += this.escapeLength
      }
    }
    return at
  }
}

/** Whether src[i] starts the escape of a low surrogate, \uDC00-\uDFFF. */
function isLowSurrogateEscape (src: Buffer, i: number): boolean {
  if (src[i] !== BACKSLASH || src[i + 1] !== 0x75) return false
  const code = hex4(src, i + 2)
  return code >= 0xdc00 && code <= 0xdfff
}

/** The value of four hex digits at src[i], -1 when they are not. */
export function hex4 (src: Uint8Array, i: number): number {
  let code = 0
  for (let k = i; k < i + 4; k++) {
    const c = src[k]
    let digit: number
    if (c >= 0x30 && c <= 0x39) digit = c - 0x30
    else if (c >= 0x61 && c <= 0x66) digit = c - 0x57
    else if (c >= 0x41 && c <= 0x46) digit = c - 0x37
    else return -1
    code = code * 16 + digit
  }
  return code
}

/** The index of the first byte of src[start, end) that is not JSON whitespace (LF included), or end. */
export function skipBlank (src: Uint8Array, start: number, end: number): number {
  let i = start
  for (; i < end; i++) {
    const c = src[i]
    if (c !== 0x20 && c !== 0x09 && c !== 0x0d && c !== LF) break
  }
  return i
}

/** Skips JSON whitespace; LF counts only when `lfIsSpace` (on a line it is the line's end). */
export function skipSpace (src: Uint8Array, i: number, lfIsSpace: boolean): number {
  for (;;) {
    const c = src[i]
    if (c === 0x20 || c === 0x09 || c === 0x0d || (c === LF && lfIsSpace)) i++
    else return i
  }
}

/** A number token's value as JSON.parse reads it, from its text src[start, end). */
export function numberOf (src: Buffer, start: number, end: number): number {
  return Number(src.toString('latin1', start, end))
}

export function sameBytes (a: Uint8Array, aStart: number, b: Uint8Array, bStart: number, length: number): boolean {
  for (let k = 0; k < length; k++) if (a[aStart + k] !== b[bStart + k]) return false
  return true
}

/**
 * `bytes` when `more` bytes fit after its first `length`, else a buffer of its own (twice the size,
 * or what fits) holding those `length` bytes: the growth of the writers that build a buffer of
 * rows or lines (row-serializer.ts, row-json-serializer.ts, lib/query/export-lines.ts).
 */
export function withRoom (bytes: Buffer<ArrayBuffer>, length: number, more: number): Buffer<ArrayBuffer> {
  if (length + more <= bytes.length) return bytes
  const grown = Buffer.allocUnsafeSlow(Math.max(bytes.length * 2, length + more))
  bytes.copy(grown, 0, 0, length)
  return grown
}

/** Copies src[start, end) to out[at]; returns the index after it. Short spans by a loop (cheaper than a native call). */
export function copyBytes (src: Buffer, start: number, end: number, out: Uint8Array, at: number): number {
  if (end - start > 32) {
    src.copy(out, at, start, end)
    return at + end - start
  }
  for (let k = start; k < end; k++) out[at++] = src[k]
  return at
}

/** The UTF-8 of code point `point` (not a surrogate) at bytes[at]; returns the index after it. */
export function writeCodePoint (bytes: Uint8Array, at: number, point: number): number {
  if (point < 0x80) {
    bytes[at++] = point
  } else if (point < 0x800) {
    bytes[at++] = 0xc0 | (point >> 6)
    bytes[at++] = 0x80 | (point & 0x3f)
  } else if (point < 0x10000) {
    bytes[at++] = 0xe0 | (point >> 12)
    bytes[at++] = 0x80 | ((point >> 6) & 0x3f)
    bytes[at++] = 0x80 | (point & 0x3f)
  } else {
    bytes[at++] = 0xf0 | (point >> 18)
    bytes[at++] = 0x80 | ((point >> 12) & 0x3f)
    bytes[at++] = 0x80 | ((point >> 6) & 0x3f)
    bytes[at++] = 0x80 | (point & 0x3f)
  }
  return at
}

/** Worst case UTF-8 bytes per UTF-16 code unit: 3 (a BMP character above U+07FF, or U+FFFD for a lone surrogate). */
export const maxUtf8BytesPerUnit = 3

/**
 * The UTF-8 of `text` at bytes[at] (room for maxUtf8BytesPerUnit per unit), as Buffer#write
 * encodes it: a lone surrogate becomes U+FFFD. Returns the index after it.
 */
export function encodeUtf8 (text: string, bytes: Uint8Array, at: number): number {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (code < 0x80) {
      bytes[at++] = code
    } else if (code < 0xd800 || code > 0xdfff) {
      at = writeCodePoint(bytes, at, code)
    } else {
      const low = code < 0xdc00 ? text.charCodeAt(i + 1) : NaN
      if (low >= 0xdc00 && low <= 0xdfff) {
        at = writeCodePoint(bytes, at, 0x10000 + ((code - 0xd800) << 10) + (low - 0xdc00))
        i++
      } else {
        at = writeCodePoint(bytes, at, 0xfffd)
      }
    }
  }
  return at
}

/**
 * True when the JSON text src[start, end) opens more than `levels` objects or arrays inside one
 * another: a scan of its brackets outside strings (the text is valid JSON).
 */
export function nestsDeeper (src: Uint8Array, start: number, end: number, levels: number): boolean {
  let depth = 0
  for (let i = start; i < end; i++) {
    const c = src[i]
    if (c === QUOTE) { // a string: skip to its closing quote
      for (i++; i < end; i++) {
        const d = src[i]
        if (d === BACKSLASH) i++
        else if (d === QUOTE) break
      }
    } else if (c === 0x7b || c === 0x5b) {
      if (++depth > levels) return true
    } else if (c === 0x7d || c === 0x5d) {
      depth--
    }
  }
  return false
}
