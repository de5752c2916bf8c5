// @ts-check
// The one text/event-stream reader of Sluice, shared by the dashboard (served as
// /assets/sse-parser.js), the CLI's `sluice tail` and the tests (both through lib/live/sse-parser.ts,
// which gives it types). Plain browser JS with no imports, so every one of them runs the same code.
//
// Contract (WHATWG HTML, "Parsing an event stream"): bytes are decoded as UTF-8 by one streaming
// TextDecoder, so a character split across two chunks is decoded whole and a leading BOM is
// dropped; lines end in CR, LF or CRLF (a CRLF may be split across chunks); `field: value` with one
// optional space after the colon; several data lines join with LF; a blank line dispatches the
// event (type "message" when no `event:` line came) if it had at least one data line; lines
// starting with ':' are comments, handed to onComment. id and retry are not needed and ignored.
// An event without its blank line when the stream ends is not dispatched.

export class SseParser {
  /** @type {(type: string, data: string) => void} */
  #onMessage
  /** @type {((text: string) => void) | undefined} */
  #onComment
  #decoder = new TextDecoder('utf-8')
  /** The current line so far: text after the last line end. */
  #buffer = ''
  /** The last chunk ended in CR: an LF opening the next one ends no second line. */
  #skipLf = false
  #type = ''
  /** @type {string[]} */
  #data = []

  /**
   * @param {(type: string, data: string) => void} onMessage called per dispatched event
   * @param {(text: string) => void} [onComment] called per comment line, with the text after ':'
   */
  constructor (onMessage, onComment) {
    this.#onMessage = onMessage
    this.#onComment = onComment
  }

  /**
   * Takes the next chunk of the stream: bytes (decoded here, a partial character kept for the
   * next chunk) or text already decoded.
   * @param {Uint8Array | string} chunk
   */
  push (chunk) {
    const text = typeof chunk === 'string' ? chunk : this.#decoder.decode(chunk, { stream: true })
    let start = 0
    let i = 0
    if (this.#skipLf && text.length > 0) {
      if (text[0] === '\n') start = i = 1
      this.#skipLf = false
    }
    for (; i < text.length; i++) {
      const ch = text[i]
      if (ch !== '\n' && ch !== '\r') continue
      this.#line(this.#buffer + text.slice(start, i))
      this.#buffer = ''
      if (ch === '\r') {
        if (i + 1 === text.length) this.#skipLf = true
        else if (text[i + 1] === '\n') i++
      }
      start = i + 1
    }
    this.#buffer += text.slice(start)
  }

  /** @param {string} line */
  #line (line) {
    if (line === '') {
      if (this.#data.length > 0) this.#onMessage(this.#type || 'message', this.#data.join('\n'))
      this.#type = ''
      this.#data = []
      return
    }
    if (line[0] === ':') {
      this.#onComment?.(line[1] === ' ' ? line.slice(2) : line.slice(1))
      return
    }
    const colon = line.indexOf(':')
    const field = colon === -1 ? line : line.slice(0, colon)
    let value = colon === -1 ? '' : line.slice(colon + 1)
    if (value[0] === ' ') value = value.slice(1)
    if (field === 'event') this.#type = value
    else if (field === 'data') this.#data.push(value)
  }
}
