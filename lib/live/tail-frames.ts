// The tail's SSE frames (`event: event\ndata: <event JSON>\n\n`), written as UTF-8 bytes in the
// parse worker. A task's frames travel to the main thread as one byte array with the frames' end
// offsets, so the tail hub sends them without building, keeping or encoding a string per event
// (bench/README.md, finding 30).
//
// The JSON is tail-event.ts's (the events API's shape), byte for byte: for a row the reference
// path built, it is serializeTailEvent's string; for a row the line scanner read, it is written
// straight from the scanner's byte spans, each string escaped as JSON.stringify escapes it
// (`"`, `\` and the control characters; everything else, UTF-8 included, as it is: the scanner's
// strings are valid UTF-8 without lone surrogates). test/ingest/line-scanner.test.ts holds the two
// to the same bytes.
import type { EventRow } from '../ingest/event-schema.ts'
import { scannedStrings } from '../ingest/line-scanner.ts'
import type { LineScanner } from '../ingest/line-scanner.ts'
import { serializeTailEvent } from './tail-event.ts'

const encoder = new TextEncoder()
const ascii = (text: string): Uint8Array => encoder.encode(text)

const frameStart = ascii('event: event\ndata: ')
const frameEnd = ascii('\n\n')
const nullText = ascii('null')
// The members in tail-event.ts's order, and the scanner's slot of each string member.
const [hostSlot, pathSlot, methodSlot, srcSlot, userAgentSlot, messageSlot, filenameSlot] =
  (['host', 'path', 'method', 'src', 'user_agent', 'message', 'filename'] as const).map((name) => scannedStrings.indexOf(name))
const keyTs = ascii('{"ts":')
const keyHost = ascii(',"host":')
const keyPath = ascii(',"path":')
const keyStatus = ascii(',"status":')
const keyRt = ascii(',"rt":')
const keyBytes = ascii(',"bytes":')
const keyMethod = ascii(',"method":')
const keySrc = ascii(',"src":')
const keyUserAgent = ascii(',"user_agent":')
const keyMessage = ascii(',"message":')
const keyFilename = ascii(',"filename":')
const keyAttrs = ascii(',"attrs":')
const keyReceivedAt = ascii(',"received_at":')
/** Bytes of a frame besides its strings and attrs, at most (keys, numbers, nulls). */
const fixedBytesAtMost = 256

const hex = ascii('0123456789abcdef')
/** For each byte below 0x60: 0 copied as it is, else the letter of its short escape, or 0x75 (`u`). */
const escapeOf = new Uint8Array(0x60)
for (let b = 0; b < 0x20; b++) escapeOf[b] = 0x75
escapeOf[0x08] = 0x62 // \b
escapeOf[0x09] = 0x74 // \t
escapeOf[0x0a] = 0x6e // \n
escapeOf[0x0c] = 0x66 // \f
escapeOf[0x0d] = 0x72 // \r
escapeOf[0x22] = 0x22 // \"
escapeOf[0x5c] = 0x5c // \\

export class TailFrameWriter {
  #bytes = new Uint8Array(16 * 1024)
  #length = 0
  /** End offset of each frame written since the last reset(). */
  readonly ends: number[] = []

  /** Forgets the frames: the next task starts from nothing. */
  reset (): void {
    this.#length = 0
    this.ends.length = 0
  }

  get count (): number {
    return this.ends.length
  }

  /** The frame of the row `scanner` just read, its JSON written from the scanner's spans. */
  addScanned (scanner: LineScanner, receivedAt: number): void {
    const sources = scanner.stringSource
    let stringBytes = scanner.attrsLength
    for (let s = 0; s < sources.length; s++) if (sources[s] !== null) stringBytes += scanner.stringEnd[s] - scanner.stringStart[s]
    this.#reserve(fixedBytesAtMost + 6 * stringBytes)
    this.#put(frameStart)
    this.#put(keyTs)
    this.#integer(scanner.ts)
    this.#put(keyHost)
    this.#string(scanner, hostSlot)
    this.#put(keyPath)
    this.#string(scanner, pathSlot)
    this.#put(keyStatus)
    this.#integerOrNull(scanner.status)
    this.#put(keyRt)
    if (scanner.rt < 0) this.#put(nullText)
    else this.#ascii(String(scanner.rt))
    this.#put(keyBytes)
    this.#integerOrNull(scanner.bytes)
    this.#put(keyMethod)
    this.#string(scanner, methodSlot)
    this.#put(keySrc)
    this.#string(scanner, srcSlot)
    this.#put(keyUserAgent)
    this.#string(scanner, userAgentSlot)
    this.#put(keyMessage)
    this.#string(scanner, messageSlot)
    this.#put(keyFilename)
    this.#string(scanner, filenameSlot)
    this.#put(keyAttrs)
    this.#bytes.set(scanner.attrsBytes.subarray(0, scanner.attrsLength), this.#length)
    this.#length += scanner.attrsLength
    this.#put(keyReceivedAt)
    this.#integer(receivedAt)
    this.#bytes[this.#length++] = 0x7d // }
    this.#put(frameEnd)
    this.ends.push(this.#length)
  }

  /** The frame of a row the reference path built. */
  addRow (row: EventRow, receivedAt: number): void {
    const json = serializeTailEvent(row, receivedAt)
    this.#reserve(frameStart.length + 3 * json.length + frameEnd.length)
    this.#put(frameStart)
    this.#length += encoder.encodeInto(json, this.#bytes.subarray(this.#length)).written
    this.#put(frameEnd)
    this.ends.push(this.#length)
  }

  /** The frames in an array of their own (cloned to the main thread), or an empty one. */
  finish (): Uint8Array {
    return this.#bytes.slice(0, this.#length)
  }

  #reserve (bytes: number): void {
    if (this.#length + bytes <= this.#bytes.length) return
    const grown = new Uint8Array(Math.max(this.#bytes.length * 2, this.#length + bytes))
    grown.set(this.#bytes.subarray(0, this.#length))
    this.#bytes = grown
  }

  #put (constant: Uint8Array): void {
    const bytes = this.#bytes
    let at = this.#length
    for (let i = 0; i < constant.length; i++) bytes[at++] = constant[i]
    this.#length = at
  }

  #ascii (text: string): void {
    const bytes = this.#bytes
    let at = this.#length
    for (let i = 0; i < text.length; i++) bytes[at++] = text.charCodeAt(i)
    this.#length = at
  }

  /** A non-negative safe integer in decimal. */
  #integer (value: number): void {
    if (value < 10) { this.#bytes[this.#length++] = 0x30 + value; return }
    this.#ascii(String(value))
  }

  #integerOrNull (value: number): void {
    if (value < 0) this.#put(nullText)
    else this.#integer(value)
  }

  /** A scanned string as a JSON string, or null when absent. */
  #string (scanner: LineScanner, slot: number): void {
    const src = scanner.stringSource[slot]
    if (src === null) { this.#put(nullText); return }
    const bytes = this.#bytes
    let at = this.#length
    bytes[at++] = 0x22
    for (let i = scanner.stringStart[slot], end = scanner.stringEnd[slot]; i < end; i++) {
      const b = src[i]
      const escape = b < 0x60 ? escapeOf[b] : 0
      if (escape === 0) {
        bytes[at++] = b
      } else if (escape !== 0x75) {
        bytes[at++] = 0x5c
        bytes[at++] = escape
      } else {
        bytes[at++] = 0x5c
        bytes[at++] = 0x75
        bytes[at++] = 0x30
        bytes[at++] = 0x30
        bytes[at++] = hex[b >> 4]
        bytes[at++] = hex[b & 15]
      }
    }
    bytes[at++] = 0x22
    this.#length = at
  }
}
