// Splits a JSON array body into its elements, one per line, for the line framer (line-framer.ts).
//
// Contract: fed the bytes after the opening '[', chunk by chunk, it writes each element's bytes
// followed by an LF, so that element k becomes line k. It tracks strings, escapes and nesting depth
// across chunks but does not validate elements (brackets of either kind count as one depth): the
// worker rejects a bad element as it would a bad line. The LFs inside an element become CRs: both
// are JSON whitespace between tokens and both are forbidden raw inside strings, so the swap keeps a
// valid element valid and an invalid one invalid. An empty element ("[1,,2]", "[1,]") is written
// as the ',' or ']' that ends it, which no JSON parser accepts. An element is written up to
// `keepBytes` bytes; the rest is dropped, and the splitter fails the line for its length. The
// scanner stops at the first byte other than whitespace after the closing ']' (`hasDataAfter`);
// at the end of the body, `isOpen` says whether the closing ']' never came.

const LF = 0x0a
const CR = 0x0d
const SPACE = 0x20
const TAB = 0x09
const QUOTE = 0x22
const BACKSLASH = 0x5c
const COMMA = 0x2c
const OPEN_BRACKET = 0x5b
const CLOSE_BRACKET = 0x5d
const OPEN_BRACE = 0x7b
const CLOSE_BRACE = 0x7d

/** Scanner states, numbers because the scanner compares one per byte between elements. */
const BETWEEN = 0
const ELEMENT = 1
const CLOSED = 2
const JUNK = 3

export class ArrayScanner {
  /** Bytes of an element written at most. */
  readonly #keep: number
  /** Scan state across chunks, in a plain object: the loops load and store it by name, cheaply. */
  #scan = { state: BETWEEN, depth: 0, inString: false, escaped: false, hasLF: false, elements: 0, elementBytes: 0 }

  constructor (keepBytes: number) {
    this.#keep = keepBytes
  }

  /** Whether the body ended inside the array: within an element or after a ','. */
  get isOpen (): boolean {
    return this.#scan.state === BETWEEN || this.#scan.state === ELEMENT
  }

  /** Whether something other than whitespace came after the closing ']'; scanning stopped there. */
  get hasDataAfter (): boolean {
    return this.#scan.state === JUNK
  }

  /**
   * Writes the elements that `chunk` holds from `start` on into `out`, one per line, and returns
   * how many bytes it wrote: at most twice the bytes read (an empty element's ',' and its LF).
   * Between elements it goes byte by byte; an element's bytes are found by #skipElement and copied
   * in one call.
   */
  scan (chunk: Buffer, start: number, out: Buffer): number {
    const scan = this.#scan
    if (scan.state === JUNK) return 0
    let o = 0
    let i = start
    while (i < chunk.length) {
      if (scan.state !== ELEMENT) {
        const byte = chunk[i++]
        if (byte === SPACE || byte === LF || byte === CR || byte === TAB) continue
        if (scan.state === CLOSED) {
          scan.state = JUNK
          return o
        }
        if (byte === COMMA || (byte === CLOSE_BRACKET && scan.elements > 0)) {
          out[o++] = byte // an empty element: its separator alone, which no JSON parser accepts
          out[o++] = LF
          scan.elements++
        }
        if (byte === CLOSE_BRACKET) scan.state = CLOSED
        if (byte === COMMA || byte === CLOSE_BRACKET) continue
        scan.state = ELEMENT
        scan.elementBytes = 0
        i--
      }
      const from = i
      i = this.#skipElement(chunk, i)
      const room = this.#keep - scan.elementBytes
      const copied = chunk.copy(out, o, from, from + Math.min(i - from, Math.max(room, 0)))
      if (scan.hasLF) {
        for (let at = o; at < o + copied; at++) if (out[at] === LF) out[at] = CR
        scan.hasLF = false
      }
      o += copied
      scan.elementBytes += i - from
      if (i < chunk.length) {
        out[o++] = LF
        scan.elements++
        scan.state = chunk[i++] === COMMA ? BETWEEN : CLOSED
      }
    }
    return o
  }

  /**
   * Returns where the element at `i` ends in `chunk`: at its ',' or ']' (depth 0, outside strings),
   * or at the chunk's end. Tracks strings, escapes, depth and whether an LF was seen in #scan.
   */
  #skipElement (chunk: Buffer, i: number): number {
    const scan = this.#scan
    let depth = scan.depth
    let inString = scan.inString
    let escaped = scan.escaped
    let hasLF = scan.hasLF
    for (; i < chunk.length; i++) {
      let byte = chunk[i]
      if (inString) {
        if (escaped) {
          escaped = false
          continue
        }
        // Most of an element is string contents: run through them in a loop of their own.
        while (byte !== QUOTE && byte !== BACKSLASH && byte !== LF && i + 1 < chunk.length) byte = chunk[++i]
        if (byte === BACKSLASH) escaped = true
        else if (byte === QUOTE) inString = false
        else if (byte === LF) hasLF = true
      } else if (byte === QUOTE) {
        inString = true
      } else if (byte === OPEN_BRACE || byte === OPEN_BRACKET) {
        depth++
      } else if (byte === CLOSE_BRACE || byte === CLOSE_BRACKET) {
        if (depth > 0) depth--
        else if (byte === CLOSE_BRACKET) break
      } else if (byte === COMMA) {
        if (depth === 0) break
      } else if (byte === LF) {
        hasLF = true
      }
    }
    scan.depth = depth
    scan.inString = inString
    scan.escaped = escaped
    scan.hasLF = hasLF
    return i
  }
}
