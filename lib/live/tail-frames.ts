// The tail's SSE frames (`event: event\ndata: <event JSON>\n\n`), written as UTF-8 bytes in the
// parse worker. A task's frames travel to the main thread as one byte array with the frames' end
// offsets, so the tail hub sends them without building, keeping or encoding a string per event
// (bench/README.md, finding 30). The JSON is the events API's, written by the one writer of that
// shape (lib/events/event-json.ts) from the event row, whichever path read the line.
import type { EventRow } from '../events/event-row.ts'
import { eventJsonBytesAtMost, writeEventJson } from '../events/event-json.ts'

const encoder = new TextEncoder()
const frameStart = encoder.encode('event: event\ndata: ')
const frameEnd = encoder.encode('\n\n')

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

  /** The frame of `row`, stored with `seq`. */
  add (row: EventRow, receivedAt: number, seq: number): void {
    this.#reserve(frameStart.length + eventJsonBytesAtMost(row) + frameEnd.length)
    this.#put(frameStart)
    this.#length = writeEventJson(this.#bytes, this.#length, row, receivedAt, seq)
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
}
