// An event's attrs flattened to key/value pairs: the `attr_keys` and `attr_values` columns
// (docs/api.md section 6.4, "Attributes"), which every read filters and groups by without
// parsing JSON per row. One walker over attrs' bytes serves the RowBinary writer
// (lib/ingest/row-serializer.ts) and, through flattenAttrsText, the live tail's matcher, so the
// stored pairs and the pairs the tail filters on cannot differ.
//
// - Nested objects are addressed by dotted paths: {"user":{"id":42}} is `user.id`. An empty
//   object gives no pair; a key spelt with a dot ({"a.b":1}) is the same path as the nesting.
// - A value is text: a string's own text (escapes decoded, a lone surrogate as U+FFFD, as
//   ClickHouse stores strings); a number, true, false and null as their JSON text (`129.5`,
//   `true`, `null`); an array as its JSON text (`[1,2]`), not flattened.
// - Pairs come in the order of attrs' text, nested pairs where their object stands. A path seen
//   twice ({"a.b":1,"a":{"b":2}}) gives two pairs; readers take the first (indexOf).
//
// attrs is always the text JSON.stringify writes for an object (both ingest paths produce that
// form, compact and escaped the same way), so the walker needs no whitespace handling and trusts
// the text to be valid: it is never run on a client's bytes directly. Still, every loop stops at
// the text's end, so text that is not such an object (a test's, a damaged row's) gives some
// pairs or none, never a hang or a read past the end.
import { Buffer } from 'node:buffer'
import { BACKSLASH, hex4, QUOTE, writeCodePoint } from './json-lex.ts'

const OPEN_BRACE = 0x7b
const CLOSE_BRACE = 0x7d
const OPEN_BRACKET = 0x5b
const CLOSE_BRACKET = 0x5d
const COMMA = 0x2c
const DOT = 0x2e

/** The pairs of one attrs text: keys and values as UTF-8, each list concatenated with end offsets. */
export class AttrPairs {
  count = 0
  keyBytes: Buffer = Buffer.allocUnsafeSlow(1024)
  keyLength = 0
  keyEnds = new Int32Array(64)
  valueBytes: Buffer = Buffer.allocUnsafeSlow(4096)
  valueLength = 0
  valueEnds = new Int32Array(64)
  // The current path (the prefix of the keys inside a nested object).
  #path: Buffer = Buffer.allocUnsafeSlow(256)
  #end = 0

  /** Flattens attrs' JSON object text src[0, length); replaces the previous pairs. */
  flatten (src: Uint8Array, length: number): void {
    this.count = 0
    this.keyLength = 0
    this.valueLength = 0
    // '{}': most access-log lines have no attrs.
    if (length <= 2 || src[0] !== OPEN_BRACE) return
    this.#end = length
    this.#object(src, 0, 0)
  }

  /** Bytes of the pairs' text: keys, values and at most 5 bytes of length per string. */
  bytesAtMost (): number {
    return this.keyLength + this.valueLength + 10 * (this.count + 1)
  }

  /** Key i as a string (tests, the tail's matcher). */
  key (i: number): string {
    return this.keyBytes.toString('utf8', i === 0 ? 0 : this.keyEnds[i - 1], this.keyEnds[i])
  }

  /** Value i as a string. */
  value (i: number): string {
    return this.valueBytes.toString('utf8', i === 0 ? 0 : this.valueEnds[i - 1], this.valueEnds[i])
  }

  // The object whose '{' is at src[i], its keys under the path's first `prefix` bytes; returns
  // the index after its '}'.
  #object (src: Uint8Array, i: number, prefix: number): number {
    const end = this.#end
    i++
    if (src[i] === CLOSE_BRACE) return i + 1
    while (i < end && src[i] === QUOTE) {
      // The key: the path, a dot, the key's text.
      let at = prefix
      if (prefix > 0) {
        this.#pathRoom(at + 1)
        this.#path[at++] = DOT
      }
      const keyEnd = stringEnd(src, i, end)
      this.#pathRoom(at + (keyEnd - i) * 3)
      at = decodeString(src, i + 1, keyEnd - 1, this.#path, at)
      i = keyEnd + 1 // past ':'
      if (i >= end) return end
      const c = src[i]
      if (c === OPEN_BRACE) {
        i = this.#object(src, i, at)
      } else {
        const start = c === QUOTE ? i + 1 : i
        const valueEnd = c === QUOTE ? stringEnd(src, i, end) : c === OPEN_BRACKET ? arrayEnd(src, i, end) : scalarEnd(src, i, end)
        this.#pair(at)
        this.#valueRoom((valueEnd - start) * 3)
        this.valueLength = c === QUOTE
          ? decodeString(src, start, valueEnd - 1, this.valueBytes, this.valueLength)
          : this.valueLength + copy(src, start, valueEnd, this.valueBytes, this.valueLength)
        this.valueEnds[this.count - 1] = this.valueLength
        i = valueEnd
      }
      if (src[i] !== COMMA) return i + 1 // '}'
      i++
    }
    return end
  }

  // Appends a pair whose key is the path's first `pathLength` bytes (its value follows).
  #pair (pathLength: number): void {
    if (this.count === this.keyEnds.length) {
      const keyEnds = new Int32Array(this.count * 2)
      keyEnds.set(this.keyEnds)
      this.keyEnds = keyEnds
      const valueEnds = new Int32Array(this.count * 2)
      valueEnds.set(this.valueEnds)
      this.valueEnds = valueEnds
    }
    if (this.keyLength + pathLength > this.keyBytes.length) this.keyBytes = grow(this.keyBytes, this.keyLength, this.keyLength + pathLength)
    this.keyLength += copy(this.#path, 0, pathLength, this.keyBytes, this.keyLength)
    this.keyEnds[this.count++] = this.keyLength
  }

  #pathRoom (bytes: number): void {
    if (bytes > this.#path.length) this.#path = grow(this.#path, this.#path.length, bytes)
  }

  #valueRoom (bytes: number): void {
    if (this.valueLength + bytes > this.valueBytes.length) this.valueBytes = grow(this.valueBytes, this.valueLength, this.valueLength + bytes)
  }
}

function grow (bytes: Buffer, used: number, wanted: number): Buffer {
  const grown = Buffer.allocUnsafeSlow(Math.max(2 * bytes.length, wanted))
  bytes.copy(grown, 0, 0, used)
  return grown
}

function copy (src: Uint8Array, start: number, end: number, out: Uint8Array, at: number): number {
  for (let k = start; k < end; k++) out[at++] = src[k]
  return end - start
}

/** The index after the closing quote of the string whose opening quote is at src[i] (at most `end`). */
function stringEnd (src: Uint8Array, i: number, end: number): number {
  i++
  while (i < end) {
    const c = src[i]
    if (c === QUOTE) return i + 1
    i += c === BACKSLASH ? 2 : 1
  }
  return end
}

/** The index after the ']' of the array whose '[' is at src[i] (at most `end`). */
function arrayEnd (src: Uint8Array, i: number, end: number): number {
  let depth = 0
  while (i < end) {
    const c = src[i]
    if (c === QUOTE) {
      i = stringEnd(src, i, end)
      continue
    }
    if (c === OPEN_BRACKET || c === OPEN_BRACE) depth++
    else if ((c === CLOSE_BRACKET || c === CLOSE_BRACE) && --depth === 0) return i + 1
    i++
  }
  return end
}

/** The index after a number, true, false or null starting at src[i] (at most `end`). */
function scalarEnd (src: Uint8Array, i: number, end: number): number {
  while (i < end && src[i] !== COMMA && src[i] !== CLOSE_BRACE) i++
  return i
}

/**
 * A string's body src[start, end) (between its quotes) decoded to UTF-8 at out[at] (room for 3
 * bytes per source byte: a 6-byte \u escape decodes to at most 3); returns the index after it.
 */
function decodeString (src: Uint8Array, start: number, end: number, out: Uint8Array, at: number): number {
  for (let i = start; i < end;) {
    const c = src[i]
    if (c !== BACKSLASH) {
      out[at++] = c
      i++
      continue
    }
    const e = src[i + 1]
    if (e !== 0x75) { // u
      out[at++] = e === 0x6e ? 0x0a : e === 0x74 ? 0x09 : e === 0x72 ? 0x0d : e === 0x62 ? 0x08 : e === 0x66 ? 0x0c : e
      i += 2
      continue
    }
    let point = hex4(src, i + 2)
    i += 6
    if (point < 0) {
      point = 0xfffd // not four hex digits: only in text that is no attrs
    } else if (point >= 0xd800 && point <= 0xdfff) {
      const low = point < 0xdc00 && src[i] === BACKSLASH && src[i + 1] === 0x75 ? hex4(src, i + 2) : -1
      if (low >= 0xdc00 && low <= 0xdfff) {
        point = 0x10000 + ((point - 0xd800) << 10) + (low - 0xdc00)
        i += 6
      } else {
        point = 0xfffd // a lone surrogate, as ClickHouse stores it
      }
    }
    at = writeCodePoint(out, at, point)
  }
  return at
}

const shared = new AttrPairs()

/** attrs' JSON object text flattened (the tail's matcher, tests): the pairs the columns hold. */
export function flattenAttrsText (json: string): { keys: string[], values: string[] } {
  const bytes = Buffer.from(json)
  shared.flatten(bytes, bytes.length)
  const keys: string[] = []
  const values: string[] = []
  for (let i = 0; i < shared.count; i++) {
    keys.push(shared.key(i))
    values.push(shared.value(i))
  }
  return { keys, values }
}
