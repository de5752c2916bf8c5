// Packs lines into worker tasks: the `input` and `firstLine` of a ParseTask (parse-task.ts).
//
// Contract: add() takes the body's lines in order, as latin1 text (one character per raw byte) or
// as a FailedLine, and returns a LineBatch whenever the next line would take the batch being
// filled past `taskBytes`; addBlankLines(n) takes a run of n blank lines at once (the framer's
// cheap form of a run of LFs); flush() returns the last one. A batch holds consecutive lines, each
// followed by '\n', in an exact-size ArrayBuffer of its own, ready to be transferred; a line longer
// than taskBytes gets a batch of its own, short ones are never sent one per task. Lines are
// numbered from 1 and every line keeps its number: a blank line (only spaces, tabs or CRs) is
// written empty, and a failed line is written empty and reported through `onFailure`, so the
// worker skips both without counting them. A batch starts at a line with content: blank and
// failed lines before it are not written at all (the next batch's firstLine skips them), so a
// body of blank lines ships nothing to the workers, and a run of blank lines costs at most the
// room left in the batch being filled. `lineCount` and `sawLine` tell the pipeline how many lines
// the body had and whether any was not blank (none: 400 empty_body).
import type { LineFailure, LineFailureCode, ParseTask } from './parse-task.ts'

export interface LineBatcherOptions {
  /**
   * Bytes of lines per task; default 120 KiB: large enough that posting a task to a worker costs
   * little next to parsing it, small enough to spread a request over several workers.
   */
  taskBytes?: number
  /** Receives each line that failed before reaching a worker (line_too_long, JSON array framing). */
  onFailure: (failure: LineFailure) => void
}

/** A line that failed on the main thread; the batcher gives it its number. */
export interface FailedLine {
  code: LineFailureCode
  message: string
}

export interface LineBatch extends Pick<ParseTask, 'input' | 'firstLine'> {
  /** Lines in `input`, blank and failed ones included. */
  lineCount: number
}

// 120 KiB, not 128: the batch is joined into one string before it is copied out, and V8 puts a
// string of 128 KiB or more in its large-object space, an mmap of its own per string, faulted in
// page by page and unmapped only by a full GC (line-framer.ts keeps split2's strings under it for
// the same reason). bench/split.bench.ts framed about 20% faster at 120 than at 128 KiB.
const defaultTaskBytes = 120 * 1024

export class LineBatcher {
  readonly #taskBytes: number
  readonly #onFailure: (failure: LineFailure) => void
  /**
   * The batch being filled, joined into one string when it is full: half the cost of copying the
   * lines one by one. They are slices of split2's strings, so holding them copies nothing.
   */
  #lines: string[] = []
  #bytes = 0
  #firstLine = 1
  /** Lines in the batch being filled (an entry of #lines may hold a run of blank ones). */
  #batchLines = 0
  #lineCount = 0
  #sawLine = false

  constructor (options: LineBatcherOptions) {
    this.#taskBytes = options.taskBytes ?? defaultTaskBytes
    this.#onFailure = options.onFailure
  }

  /** Lines so far, blank and failed ones included. */
  get lineCount (): number {
    return this.#lineCount
  }

  /** Whether any line so far was not blank (a failed line counts: it had content). */
  get sawLine (): boolean {
    return this.#sawLine
  }

  /** Adds the next line; returns the batch it closed, if it did not fit in that one. */
  add (line: string | FailedLine): LineBatch | undefined {
    const number = ++this.#lineCount
    let text = ''
    if (typeof line !== 'string') {
      this.#sawLine = true
      this.#onFailure({ line: number, code: line.code, message: line.message })
    } else if (!isBlank(line)) {
      this.#sawLine = true
      text = line
    }
    // Nothing for a worker before the batch's first line with content.
    if (text.length === 0 && this.#lines.length === 0) return undefined
    const full = this.#bytes + text.length + 1 > this.#taskBytes && this.#lines.length > 0 ? this.#take() : undefined
    if (this.#lines.length === 0) this.#firstLine = number
    this.#lines.push(text)
    this.#batchLines++
    this.#bytes += text.length + 1
    return full
  }

  /**
   * Adds `count` blank lines. Inside a batch with content they are written (empty lines keep the
   * numbers of the lines after them) while they fit; a run that does not closes the batch, and
   * the rest of the run is skipped: the next batch starts after it.
   */
  addBlankLines (count: number): LineBatch | undefined {
    if (count <= 0) return undefined
    this.#lineCount += count
    if (this.#lines.length === 0) return undefined
    if (this.#bytes + count > this.#taskBytes) return this.#take()
    // One entry of count - 1 LFs: join('\n') puts the count-th LF after it.
    this.#lines.push('\n'.repeat(count - 1))
    this.#batchLines += count
    this.#bytes += count
    return undefined
  }

  /** Returns the batch being filled, if it holds any line. */
  flush (): LineBatch | undefined {
    return this.#lines.length > 0 ? this.#take() : undefined
  }

  #take (): LineBatch {
    this.#lines.push('') // so that join() ends the last line with '\n' too
    const input = new ArrayBuffer(this.#bytes)
    const lineCount = this.#batchLines
    Buffer.from(input).write(this.#lines.join('\n'), 'latin1')
    const batch: LineBatch = { input, firstLine: this.#firstLine, lineCount }
    this.#lines = []
    this.#batchLines = 0
    this.#bytes = 0
    return batch
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
