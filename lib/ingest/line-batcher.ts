// Packs lines into worker tasks (the `input` and `firstLine` of a ParseTask, parse-task.ts).
//
// Contract: SplitLine items in (line-splitter.ts), in body order; LineBatch objects out, each
// holding consecutive lines, every line followed by '\n', in an exact-size ArrayBuffer ready to be
// transferred, of about `taskBytes` (a line longer than that gets a task of its own). Lines are
// numbered from 1 and every line keeps its number: a blank line (only spaces, tabs or CRs) is
// written empty, and a line that failed on the main thread is written empty and reported through
// `onFailure`, so the worker skips both without counting them. When the input ends, `lineCount`
// and `sawLine` tell the route how many lines there were and whether any of them was not blank
// (none: 400 empty_body).
import { Transform } from 'node:stream'
import type { TransformCallback } from 'node:stream'
import type { LineFailure, ParseTask } from './parse-task.ts'
import type { SplitLine } from './line-splitter.ts'

export interface LineBatcherOptions {
  /**
   * Bytes of lines per task; default 128 KiB: large enough that posting a task to a worker costs
   * little next to parsing it, small enough to spread one request over several workers.
   */
  taskBytes?: number
  /** Receives each line that failed before reaching a worker (line_too_long, JSON array framing). */
  onFailure: (failure: LineFailure) => void
}

export interface LineBatch extends Pick<ParseTask, 'input' | 'firstLine'> {
  /** Lines in `input`, blank and failed ones included. */
  lineCount: number
}

const defaultTaskBytes = 128 * 1024
const LF = 0x0a

export class LineBatcher extends Transform {
  readonly #taskBytes: number
  readonly #onFailure: (failure: LineFailure) => void
  /** Lines of the batch being filled, written as latin1 (one byte per char); its own ArrayBuffer. */
  #buffer: Buffer<ArrayBuffer>
  #used = 0
  #firstLine = 1
  #batchLines = 0
  #lineCount = 0
  #sawLine = false

  constructor (options: LineBatcherOptions) {
    super({ objectMode: true })
    this.#taskBytes = options.taskBytes ?? defaultTaskBytes
    this.#onFailure = options.onFailure
    this.#buffer = Buffer.allocUnsafeSlow(this.#taskBytes)
  }

  /** Lines seen so far, blank and failed ones included. */
  get lineCount (): number {
    return this.#lineCount
  }

  /** Whether any line so far was not blank (a failed line counts: it had content). */
  get sawLine (): boolean {
    return this.#sawLine
  }

  override _transform (item: SplitLine, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.#add(item)
    callback()
  }

  override _flush (callback: TransformCallback): void {
    if (this.#batchLines > 0) this.#pushBatch()
    callback()
  }

  #add (item: SplitLine): void {
    const line = ++this.#lineCount
    let text = ''
    if (typeof item !== 'string') {
      this.#sawLine = true
      this.#onFailure({ line, code: item.code, message: item.message })
    } else if (!isBlank(item)) {
      this.#sawLine = true
      text = item
    }
    const size = text.length + 1
    if (this.#used + size > this.#taskBytes && this.#batchLines > 0) this.#pushBatch()
    if (this.#batchLines === 0) this.#firstLine = line
    if (size > this.#buffer.length) this.#buffer = Buffer.allocUnsafeSlow(size)
    this.#used += this.#buffer.write(text, this.#used, 'latin1')
    this.#buffer[this.#used++] = LF
    this.#batchLines++
  }

  #pushBatch (): void {
    const batch: LineBatch = {
      input: this.#buffer.buffer.slice(0, this.#used),
      firstLine: this.#firstLine,
      lineCount: this.#batchLines,
    }
    this.#used = 0
    this.#batchLines = 0
    this.push(batch)
  }
}

/** True for a line of only spaces, tabs and CRs, as the worker defines blank. */
function isBlank (text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (code !== 0x20 && code !== 0x09 && code !== 0x0d) return false
  }
  return true
}
