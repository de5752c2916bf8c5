// The whole-body inputs (OTLP/HTTP logs, Loki push): formats whose records cannot be split into
// lines before decoding (protobuf, one JSON document, snappy blocks). Their routes run the
// ingest pipeline (lib/ingest/ingest-pipeline.ts) with framing 'body': the decoded body, bounded
// by ingest.maxDecodedBytes, goes to one parse worker as one task of their inputKind; the worker
// entry (lib/parse-worker-entry.ts) hands it to decodeBody (decode-body.ts), which turns each
// record into a plain event object in Sluice's JSON event shape and puts it into the task's
// RecordSink: stored by the same reference path as a JSON line.
import type { BodyError, InputKind } from '../ingest/parse-task.ts'

export type BodyFormat = Exclude<InputKind, 'ndjson'>

/** The answer to a body that is not a message of its format at all: 400, nothing stored. */
export function invalidBody (message: string): BodyError {
  return { code: 'undecodable_body', message }
}
