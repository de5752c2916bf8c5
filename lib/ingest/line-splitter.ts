// Splits a decoded request body into its lines with split2 and packs them into worker tasks
// (docs/api.md section 6.3, "Framing").
//
// Contract: bytes in; LineBatch objects out (line-batcher.ts), holding every line of the body in
// order, numbered from 1. Lines stay raw bytes: they are never decoded as UTF-8 on the main thread,
// so the worker can tell invalid UTF-8 apart. A leading BOM is dropped; a line ends at LF, and a
// CR before that LF (or before the end of the body) is removed; blank lines keep their numbers (a
// run of them arrives from the framer as one marker line, see line-framer.ts); the
// last line may lack its LF. A line over maxLineBytes fails alone with line_too_long, and a JSON
// array body (line-framer.ts) yields one line per element. Failures reach the batcher's
// onFailure; its lineCount and sawLine are final once this stream has ended.
//
// Stages: LineFramer (bytes to latin1 text: BOM, over-long lines, arrays) → split2 → a stage that
// passes batches on and adds the last one at the end. split2's mapper hands each line straight to
// the batcher and returns a batch only when one is full, so stream machinery runs per task instead
// of per line: about 1.5× the throughput of pushing each line on to a batching stage. The stages
// are returned as a list for the caller's own pipeline(): wrapping them into one Duplex with
// stream.compose() cost a second pipeline per request, 15% of the main thread's time under load.
import { Transform } from 'node:stream'
import type { TransformCallback } from 'node:stream'
import split2 from 'split2'
import { LineFramer, blankRunMarker, firstMarker, framingFailures } from './line-framer.ts'
import type { FailedLine, LineBatch, LineBatcher } from './line-batcher.ts'

export interface LineSplitterOptions {
  /** Receives the lines; the pipeline (ingest-pipeline.ts) reads its totals once the body has been read. */
  batcher: LineBatcher
  /** Longest line accepted, in bytes, CR of CRLF excluded; default 256 KiB (docs/api.md section 6.5). */
  maxLineBytes?: number
}

const defaultMaxLineBytes = 256 * 1024
const CR = 0x0d

/** The stages in pipeline order: bytes in at the first, LineBatch objects out of the last. */
export function createLineSplitter (options: LineSplitterOptions): [LineFramer, Transform, LastBatch] {
  const { batcher } = options
  const maxLineBytes = options.maxLineBytes ?? defaultMaxLineBytes
  const tooLong: FailedLine = { code: 'line_too_long', message: `the line is over the ${maxLineBytes}-byte limit` }

  /** split2's mapper: one call per line, the line as latin1 text. */
  function addLine (text: string): LineBatch | undefined {
    let length = text.length
    if (length === 0) return batcher.add(text)
    if (text.charCodeAt(0) === blankRunMarker) return batcher.addBlankLines(Number(text.slice(1)))
    const last = text.charCodeAt(length - 1)
    if (last === CR) length--
    else if (last >= firstMarker) return batcher.add(framingFailures[last - firstMarker])
    if (length > maxLineBytes) return batcher.add(tooLong)
    return batcher.add(length === text.length ? text : text.slice(0, length))
  }

  // split2 decodes bytes as UTF-8 but passes strings through untouched (string_decoder returns
  // them as they are); decodeStrings: false keeps Writable from turning them back into bytes.
  return [
    new LineFramer(maxLineBytes),
    split2('\n', addLine, { decodeStrings: false }) as Transform,
    new LastBatch(batcher),
  ]
}

/** Passes split2's batches on; when the body ends, adds the batch still being filled. */
export class LastBatch extends Transform {
  readonly #batcher: LineBatcher

  constructor (batcher: LineBatcher) {
    super({ objectMode: true })
    this.#batcher = batcher
  }

  override _transform (batch: LineBatch, _encoding: BufferEncoding, callback: TransformCallback): void {
    callback(null, batch)
  }

  override _flush (callback: TransformCallback): void {
    callback(null, this.#batcher.flush())
  }
}
