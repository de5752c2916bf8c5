// The contract of whole-body inputs (OTLP/HTTP logs, Loki push): formats whose records cannot be
// split into lines before decoding (protobuf, one JSON document, snappy blocks). The main thread
// reads the body through the ingest route's admission, byte limits and decoder, then hands the
// whole decoded body to one parse worker as a BodyTask; the worker decodes it (lib/inputs/
// decode-body.ts), turns each record into a plain event object in Sluice's JSON event shape and
// stores it through the same reference path as a JSON line (parse-worker.ts parseBody).
import type { LineFailureCode, ParseResult, ParseTask } from '../ingest/parse-task.ts'

export const bodyFormats = ['otlp-proto', 'otlp-json', 'loki-proto', 'loki-json'] as const
export type BodyFormat = typeof bodyFormats[number]

export interface BodyTask extends Omit<ParseTask, 'firstLine'> {
  format: BodyFormat
  /**
   * Bound on the bytes a format may expand the body to in the worker (Loki's snappy block): the
   * route's ingest.maxDecodedBytes.
   */
  maxDecodedBytes: number
}

/** A body the worker could not decode at all: nothing of it is stored. */
export interface InvalidBody {
  invalid: { code: 'undecodable_body' | 'payload_too_large', message: string }
}

export type BodyResult = ParseResult | InvalidBody

/**
 * Where a decoder puts each record. `record` numbers records from 1 in body order (it is the
 * `line` of the failures a response lists); `size` is the record's bytes, stored in the `size`
 * column.
 */
export interface EventSink {
  add (event: Record<string, unknown>, record: number, size: number): void
  fail (record: number, code: LineFailureCode, message: string): void
}

/** The whole-body message when the input is not a message of the format at all. */
export function invalidBody (message: string): InvalidBody {
  return { invalid: { code: 'undecodable_body', message } }
}

export function isInvalidBody (result: BodyResult): result is InvalidBody {
  return (result as InvalidBody).invalid !== undefined
}
