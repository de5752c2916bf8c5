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

/**
 * The pairs of one attrs text: each key and value a span of UTF-8, in the attrs text itself when
 * it can be (a top-level key, a value without escapes: most of them), else in `scratch` (a dotted
 * path, a decoded string). The RowBinary writer copies each span once, straight from where it is.
 */
export class AttrPairs {
  count = 0
  /** Per pair: the span of its key and of its value; `*InScratch` 1 when it lies in `scratch`, else in the text. */
  keyStart = new Int32Array(64)
  keyEnd = new Int32Array(64)
  keyInScratch = new Uint8Array(64)
  valueStart = new Int32Array(64)
  valueEnd = new Int32Array(64)
  valueInScratch = new Uint8Array(64)
  /** The attrs text of the last flatten(). */
  text: Uint8Array = new Uint8Array(0)
  scratch: Buffer = Buffer.allocUnsafeSlow(4096)
  scratchLength = 0
  /** Bytes of all keys and values. */
  bytes = 0
  // The current path (the prefix of the keys inside a nested object).
  #path: Buffer = Buffer.allocUnsafeSlow(256)
  #end = 0
  // Whether the last string stringEnd() read had a backslash.
  #escaped = false

  /** Flattens attrs' JSON object text src[0, length); replaces the previous pairs. */
  flatten (src: Uint8Array, length: number): void {
    this.count = 0
    this.scratchLength = 0
    this.bytes = 0
    this.text = src
    // '{}': most access-log lines have no attrs.
    if (length <= 2 || src[0] !== OPEN_BRACE) return
    this.#end = length
    this.#object(src, 0, 0)
  }

  /** Bytes of the pairs' text: keys, values and at most 5 bytes of length per string. */
  bytesAtMost (): number {
    return this.bytes + 10 * (this.count + 1)
  }

  /** Key i as a string (tests, the tail's matcher). */
  key (i: number): string {
    return decoder.decode((this.keyInScratch[i] === 1 ? this.scratch : this.text).subarray(this.keyStart[i], this.keyEnd[i]))
  }

  /** Value i as a string. */
  value (i: number): string {
    return decoder.decode((this.valueInScratch[i] === 1 ? this.scratch : this.text).subarray(this.valueStart[i], this.valueEnd[i]))
  }

  // The object whose '{' is at src[i], its keys under the path's first `prefix` bytes; returns
  // the index after its '}'.
  #object (src: Uint8Array, i: number, prefix: number): number {
    const end = this.#end
    i++
    if (src[i] === CLOSE_BRACE) return i + 1
    while (i < end && src[i] === QUOTE) {
      const keyEnd = this.#stringEnd(src, i, end)
      const keyEscaped = this.#escaped
      const keyStart = i + 1
      i = keyEnd + 1 // past ':'
      if (i >= end) return end
      const c = src[i]
      if (c === OPEN_BRACE) {
        i = this.#object(src, i, this.#pathOf(src, prefix, keyStart, keyEnd - 1, keyEscaped))
      } else {
        const n = this.#pair()
        if (prefix === 0 && !keyEscaped) {
          this.keyStart[n] = keyStart
          this.keyEnd[n] = keyEnd - 1
          this.keyInScratch[n] = 0
        } else {
          const length = this.#pathOf(src, prefix, keyStart, keyEnd - 1, keyEscaped)
          this.#scratchRoom(length)
          this.keyStart[n] = this.scratchLength
          this.scratchLength += copy(this.#path, 0, length, this.scratch, this.scratchLength)
          this.keyEnd[n] = this.scratchLength
          this.keyInScratch[n] = 1
        }
        let valueEnd: number
        if (c === QUOTE) {
          valueEnd = this.#stringEnd(src, i, end)
          if (this.#escaped) {
            this.#scratchRoom((valueEnd - i) * 3)
            this.valueStart[n] = this.scratchLength
            this.scratchLength = decodeString(src, i + 1, valueEnd - 1, this.scratch, this.scratchLength)
            this.valueEnd[n] = this.scratchLength
            this.valueInScratch[n] = 1
          } else {
            this.valueStart[n] = i + 1
            this.valueEnd[n] = valueEnd - 1
            this.valueInScratch[n] = 0
          }
        } else {
          valueEnd = c === OPEN_BRACKET ? arrayEnd(src, i, end) : scalarEnd(src, i, end)
          this.valueStart[n] = i
          this.valueEnd[n] = valueEnd
          this.valueInScratch[n] = 0
        }
        this.bytes += this.keyEnd[n] - this.keyStart[n] + this.valueEnd[n] - this.valueStart[n]
        i = valueEnd
      }
      if (src[i] !== COMMA) return i + 1 // '}'
      i++
    }
    return end
  }

  /** Writes prefix + '.' + the key src[start, end) (decoded when escaped) into the path; returns its length. */
  #pathOf (src: Uint8Array, prefix: number, start: number, end: number, escaped: boolean): number {
    let at = prefix
    this.#pathRoom(at + 1 + (end - start) * 3)
    if (prefix > 0) this.#path[at++] = DOT
    return escaped ? decodeString(src, start, end, this.#path, at) : at + copy(src, start, end, this.#path, at)
  }

  /** The index after the closing quote of the string whose opening quote is at src[i] (at most `end`); sets #escaped. */
  #stringEnd (src: Uint8Array, i: number, end: number): number {
    this.#escaped = false
    i++
    while (i < end) {
      const c = src[i]
      if (c === QUOTE) return i + 1
      if (c === BACKSLASH) {
        this.#escaped = true
        i += 2
      } else {
        i++
      }
    }
    return end
  }

  // A new pair's number (its spans follow).
  #pair (): number {
    if (this.count === this.keyStart.length) {
      const size = this.count * 2
      this.keyStart = growInts(this.keyStart, size)
      this.keyEnd = growInts(this.keyEnd, size)
      this.valueStart = growInts(this.valueStart, size)
      this.valueEnd = growInts(this.valueEnd, size)
      const keyIn = new Uint8Array(size)
      keyIn.set(this.keyInScratch)
      this.keyInScratch = keyIn
      const valueIn = new Uint8Array(size)
      valueIn.set(this.valueInScratch)
      this.valueInScratch = valueIn
    }
    return this.count++
  }

  #pathRoom (bytes: number): void {
    if (bytes > this.#path.length) this.#path = grow(this.#path, this.#path.length, bytes)
  }

  #scratchRoom (bytes: number): void {
    if (this.scratchLength + bytes > this.scratch.length) this.scratch = grow(this.scratch, this.scratchLength, this.scratchLength + bytes)
  }
}

// ignoreBOM: a key or value that starts with U+FEFF keeps it, as the columns do.
const decoder = new TextDecoder('utf-8', { ignoreBOM: true })

function growInts (ints: Int32Array<ArrayBuffer>, size: number): Int32Array<ArrayBuffer> {
  const grown = new Int32Array(size)
  grown.set(ints)
  return grown
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

/**
 * The thread's AttrPairs, shared by every user in it (the row writers, flattenAttrsText): each
 * flattens and takes its pairs out before it returns, so one never sees another's. A writer's own
 * per task cost 6 allocations and their GC per 120 KiB task.
 */
export const threadPairs = new AttrPairs()

/** attrs' JSON object text flattened (the tail's matcher, tests): the pairs the columns hold. */
export function flattenAttrsText (json: string): { keys: string[], values: string[] } {
  const bytes = Buffer.from(json)
  threadPairs.flatten(bytes, bytes.length)
  const keys: string[] = []
  const values: string[] = []
  for (let i = 0; i < threadPairs.count; i++) {
    keys.push(threadPairs.key(i))
    values.push(threadPairs.value(i))
  }
  return { keys, values }
}
