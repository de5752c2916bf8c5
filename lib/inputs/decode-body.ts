// Worker side of the whole-body inputs (body-task.ts): decodes a task's body by its inputKind
// and puts its records into the task's RecordSink. Nothing a client sends makes this throw: a
// body that is not a message of its format at all is a BodyError (400 undecodable_body; 413 for
// a snappy block that declares more than ingest.maxDecodedBytes), a record that cannot be stored
// fails alone.
//
// Every event of every input passes through referenceEvent (reference-event.ts) on its way to
// the sink: the one place where the adapters' events meet the worker's reference path.
import { Buffer } from 'node:buffer'
import type { BodyError, ParseTask, RecordSink } from '../ingest/parse-task.ts'
import { EventRejection } from '../events/rejection.ts'
import { invalidBody } from './body-task.ts'
import { parseEventJson } from '../events/json-integers.ts'
import { referenceEvent } from './reference-event.ts'
import { decodeOtlpProto } from './otlp/otlp-proto.ts'
import { otlpEvents } from './otlp/otlp-events.ts'
import { decodeLokiProto, snappyDeclaredLength, uncompressSnappy } from './loki/loki-proto.ts'
import { lokiJsonEvents, lokiProtoEvents } from './loki/loki-events.ts'

function parseJson (bytes: Buffer, parse: (text: string) => unknown = JSON.parse): { value: unknown } | BodyError {
  try {
    return { value: parse(bytes.toString('utf8')) }
  } catch (err) {
    return invalidBody(`The body is not JSON: ${(err as Error).message}`)
  }
}

/**
 * protobufjs throws on malformed input and on messages nested past its recursion limit
 * (otlp-proto.ts protoRecursionLimit: about 330 kvlist levels); a stack overflow (RangeError) is
 * caught the same way. Each means the body is not a message we can read.
 */
function decodeProto<T> (decode: () => T, what: string): { value: T } | BodyError {
  try {
    return { value: decode() }
  } catch (err) {
    return invalidBody(`The body is not a protobuf ${what}: ${(err as Error).message}`)
  }
}

/**
 * maxDecodedBytes: ingest.maxDecodedBytes, the bound on what a snappy block may expand to.
 * maxRecordBytes: ingest.maxLineBytes, the most one record may take (its event's JSON size, as the
 * adapters count it): a larger one fails alone with line_too_long, as an NDJSON line does. Without
 * it, a 61 KB gzip OTLP body stored a 30 MiB attribute, and a page of 8 events answered 252 MB
 * (explore27d H2).
 */
export function decodeBody (task: ParseTask, store: RecordSink, maxDecodedBytes: number, maxRecordBytes = Infinity): BodyError | null {
  const bounds = { receivedAt: task.receivedAt, minTs: Math.max(task.minTs, 0), maxTs: task.maxTs }
  const sink: RecordSink = {
    add (event, record, size) {
      if (size > maxRecordBytes) {
        store.fail(record, 'line_too_long', `The record is ${size} bytes; at most ${maxRecordBytes} (ingest.maxLineBytes)`)
        return
      }
      const value = referenceEvent(event, bounds)
      if (value instanceof EventRejection) store.fail(record, value.code, value.message)
      else store.add(value, record, size)
    },
    fail: (record, code, message) => { store.fail(record, code, message) },
  }
  const bytes = Buffer.from(task.input)
  switch (task.inputKind) {
    case 'otlp-json': {
      const parsed = parseJson(bytes, parseEventJson)
      return 'value' in parsed ? otlpEvents(parsed.value, 'hex', sink) : parsed
    }
    case 'otlp-proto': {
      const decoded = decodeProto(() => decodeOtlpProto(bytes), 'ExportLogsServiceRequest')
      return 'value' in decoded ? otlpEvents(decoded.value, 'base64', sink) : decoded
    }
    case 'loki-json': {
      const parsed = parseJson(bytes)
      return 'value' in parsed ? lokiJsonEvents(parsed.value, sink) : parsed
    }
    case 'loki-proto': {
      const length = snappyDeclaredLength(bytes)
      if (length < 0) return invalidBody('The body is not a snappy block (Loki\'s protobuf push is snappy-compressed)')
      if (length > maxDecodedBytes) {
        return { code: 'payload_too_large', message: `The body decompresses to ${length} bytes; at most ${maxDecodedBytes} are accepted` }
      }
      let block: Buffer
      try {
        block = uncompressSnappy(bytes)
      } catch (err) {
        return invalidBody(`The body is not a valid snappy block: ${(err as Error).message}`)
      }
      const decoded = decodeProto(() => decodeLokiProto(block), 'PushRequest')
      return 'value' in decoded ? lokiProtoEvents(decoded.value, sink) : decoded
    }
    default:
      return invalidBody(`No decoder for input kind ${String(task.inputKind)}`)
  }
}
