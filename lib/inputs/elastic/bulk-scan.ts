// The items of a `_bulk` body that admission refused before it was read (bulk-rejection.ts): the
// body is read to its end here, on the main thread, to list its actions so that each can be
// answered 429. Only action lines are parsed (a few dozen bytes each); a document line is looked
// at up to its first non-blank byte and skipped to its newline, never decoded or kept. Memory: one
// partial action line (at most ingest.maxLineBytes) and one small object per item.
//
// Pairing follows bulk-answer.ts pairItems: blank lines are skipped; `index`, `create` and
// `update` take the next non-blank line as their document, `delete` none. A body Elasticsearch
// would refuse whole (a line where an action belongs that is not one, an action without its
// document at the end) is 400 bad_request here too; the size limits are the pipeline's (413).
import { Writable } from 'node:stream'
import type { Duplex, Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { SluiceError } from '../../errors.ts'
import { ByteLimit } from '../../ingest/byte-limit.ts'
import type { ActionName } from './bulk-lines.ts'
import type { BulkItem } from './bulk-answer.ts'

export interface ScanLimits {
  maxRawBytes: number
  maxDecodedBytes: number
  maxLineBytes: number
  /** Non-blank lines past which the body is 413 (bulk-answer.ts checkItemCount's bound). */
  maxLines: number
}

const newline = 10
const actions = new Set<string>(['index', 'create', 'update', 'delete'])

/** Reads `body` (through `decoder`, when it is compressed) and returns its items, each with status 0 and no error. */
export async function scanBulkItems (body: Readable, decoder: Duplex | null, limits: ScanLimits): Promise<BulkItem[]> {
  const scanner = new ActionScanner(limits)
  const stages: Duplex[] = []
  if (decoder !== null) stages.push(new ByteLimit(limits.maxRawBytes, 'raw'), decoder)
  const rawIsLower = limits.maxRawBytes <= limits.maxDecodedBytes
  // Without a decoder the wire bytes are the decoded bytes: one limit, the lower (as ingest-pipeline.ts byteStages).
  stages.push(decoder !== null || !rawIsLower ? new ByteLimit(limits.maxDecodedBytes, 'decoded') : new ByteLimit(limits.maxRawBytes, 'raw'))
  await pipeline([body, ...stages, scanner])
  return scanner.finish()
}

class ActionScanner extends Writable {
  readonly #limits: ScanLimits
  readonly items: BulkItem[] = []
  /** 1-based number of the line being read. */
  #line = 1
  #lines = 0
  /** The action waiting for its document, or null when an action comes next. */
  #pending: { action: ActionName, line: number, index: string | null, id: string | null } | null = null
  /** Bytes of the action line read so far (only while an action comes next). */
  #partial: Buffer[] = []
  #partialBytes = 0
  /** In a document line: skipping to its newline. */
  #inDocument = false

  constructor (limits: ScanLimits) {
    super()
    this.#limits = limits
  }

  override _write (chunk: Buffer, _encoding: BufferEncoding, done: (err?: Error | null) => void): void {
    try {
      this.#scan(chunk)
      done()
    } catch (err) {
      done(err as Error)
    }
  }

  #scan (chunk: Buffer): void {
    let at = 0
    while (at < chunk.length) {
      if (this.#pending !== null) {
        at = this.#skipDocument(chunk, at)
        continue
      }
      const end = chunk.indexOf(newline, at)
      const stop = end === -1 ? chunk.length : end
      this.#partialBytes += stop - at
      if (this.#partialBytes > this.#limits.maxLineBytes) {
        throw new SluiceError('bad_request', `Malformed action/metadata line [${this.#line}]: line_too_long: an action line is a few dozen bytes`)
      }
      if (stop > at) this.#partial.push(chunk.subarray(at, stop))
      if (end === -1) return
      this.#actionLine(Buffer.concat(this.#partial).toString('utf8'))
      this.#partial = []
      this.#partialBytes = 0
      this.#line++
      at = end + 1
    }
  }

  /** Past the document of the pending action (blank lines before it skipped): where the scan goes on. */
  #skipDocument (chunk: Buffer, at: number): number {
    if (this.#inDocument) {
      const end = chunk.indexOf(newline, at)
      if (end === -1) return chunk.length
      this.#inDocument = false
      this.#pending = null
      this.#line++
      return end + 1
    }
    for (let i = at; i < chunk.length; i++) {
      const b = chunk[i]
      if (b === newline) { this.#line++; continue }
      if (b === 0x20 || b === 0x09 || b === 0x0d) continue
      this.#countLine()
      this.#inDocument = true
      this.#item(this.#pending!)
      return i
    }
    return chunk.length
  }

  #actionLine (text: string): void {
    if (text.trim() === '') return
    this.#countLine()
    let value: unknown
    try {
      value = JSON.parse(text)
    } catch (err) {
      throw new SluiceError('bad_request', `Malformed action/metadata line [${this.#line}]: invalid_json: ${(err as Error).message}`)
    }
    const keys = value !== null && typeof value === 'object' && !Array.isArray(value) ? Object.keys(value) : []
    const meta = keys.length === 1 && actions.has(keys[0]) ? (value as Record<string, unknown>)[keys[0]] : undefined
    if (meta === null || typeof meta !== 'object' || Array.isArray(meta)) {
      throw new SluiceError('bad_request', `Malformed action/metadata line [${this.#line}]: expected an action line: {"index": {}}, {"create": {}}, {"update": {...}} or {"delete": {...}}`)
    }
    const { _index: index, _id: id } = meta as Record<string, unknown>
    const action = { action: keys[0] as ActionName, line: this.#line, index: typeof index === 'string' ? index : null, id: typeof id === 'string' || typeof id === 'number' ? String(id) : null }
    if (action.action === 'delete') this.#item(action)
    else this.#pending = action
  }

  #item (action: { action: ActionName, line: number, index: string | null, id: string | null }): void {
    const docLine = action.action === 'delete' ? action.line : this.#line
    this.items.push({ action: action.action, line: action.line, docLine, index: action.index, id: action.id, status: 0, error: null })
  }

  #countLine (): void {
    if (++this.#lines > this.#limits.maxLines) {
      throw new SluiceError('payload_too_large', `The body holds more than ${this.#limits.maxLines} lines; a bulk request is answered for at most ${this.#limits.maxLines} items: send fewer per request`)
    }
  }

  /** The items, once the body has ended. */
  finish (): BulkItem[] {
    if (this.#partialBytes > 0) this.#actionLine(Buffer.concat(this.#partial).toString('utf8'))
    if (this.#pending !== null && !this.#inDocument) {
      throw new SluiceError('bad_request', `The action on line [${this.#pending.line}] has no document: every index, create and update line is followed by one`)
    }
    if (this.items.length === 0) throw new SluiceError('empty_body', 'The body holds no lines: send action and document lines')
    return this.items
  }
}
