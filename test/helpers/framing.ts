// Runs a body through the ingest framing stage (line-splitter.ts with its line-batcher.ts) and
// returns what the workers would receive, after checking the batch contract on every batch:
// exact-size ArrayBuffers, every line ended by '\n', line numbers increasing from 1. Lines that
// no batch holds (blank and failed lines before a batch's first line with content, which the
// batcher does not ship) come out as empty lines.
import { Readable, Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { createLineSplitter } from '../../lib/ingest/line-splitter.ts'
import { LineBatcher } from '../../lib/ingest/line-batcher.ts'
import type { LineBatch } from '../../lib/ingest/line-batcher.ts'
import type { LineFailure } from '../../lib/ingest/parse-task.ts'

export interface Framed {
  /** Line k of the body at index k - 1, as the bytes a worker gets (utf8-decoded for asserts). */
  lines: string[]
  /** The same lines as raw bytes. */
  raw: Buffer[]
  failures: LineFailure[]
  batches: LineBatch[]
  lineCount: number
  sawLine: boolean
}

export interface FrameOptions {
  maxLineBytes?: number
  taskBytes?: number
}

/** `body`: the chunks of the body, or a generator of them (to watch memory while they are read). */
export async function frameBody (body: Array<Buffer | string> | AsyncIterable<Buffer>, options: FrameOptions = {}): Promise<Framed> {
  const failures: LineFailure[] = []
  const batches: LineBatch[] = []
  const batcher = new LineBatcher({ taskBytes: options.taskBytes, onFailure: (failure) => failures.push(failure) })
  const source = Readable.from(Array.isArray(body) ? body.map((chunk) => Buffer.from(chunk)) : body, { objectMode: false })
  await pipeline(source, ...createLineSplitter({ batcher, maxLineBytes: options.maxLineBytes }), new Writable({
    objectMode: true,
    write (batch: LineBatch, _encoding, callback) {
      batches.push(batch)
      callback()
    },
  }))
  const raw: Buffer[] = []
  for (const batch of batches) {
    if (!(batch.input instanceof ArrayBuffer)) throw new Error('input is not an ArrayBuffer')
    if (batch.firstLine < raw.length + 1) throw new Error(`batch starts at line ${batch.firstLine}, after line ${raw.length}`)
    while (raw.length + 1 < batch.firstLine) raw.push(Buffer.alloc(0))
    const bytes = Buffer.from(batch.input)
    if (bytes.length === 0 || bytes[bytes.length - 1] !== 0x0a) throw new Error('batch does not end with a newline')
    let start = 0
    for (let lf = bytes.indexOf(0x0a); lf !== -1; lf = bytes.indexOf(0x0a, start)) {
      raw.push(bytes.subarray(start, lf))
      start = lf + 1
    }
    if (raw.length !== batch.firstLine + batch.lineCount - 1) throw new Error('lineCount does not match the batch')
  }
  if (raw.length > batcher.lineCount) throw new Error(`lineCount ${batcher.lineCount}, batches hold ${raw.length}`)
  while (raw.length < batcher.lineCount) raw.push(Buffer.alloc(0))
  return { lines: raw.map((line) => line.toString('utf8')), raw, failures, batches, lineCount: batcher.lineCount, sawLine: batcher.sawLine }
}

/** The body cut in two at `at`. */
export function cutAt (body: Buffer, at: number): Buffer[] {
  return [body.subarray(0, at), body.subarray(at)]
}

/** The body in pieces of `size` bytes. */
export function slices (body: Buffer, size: number): Buffer[] {
  const pieces: Buffer[] = []
  for (let at = 0; at < body.length; at += size) pieces.push(body.subarray(at, at + size))
  return pieces
}
