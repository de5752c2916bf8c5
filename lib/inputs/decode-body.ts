// Worker side of the whole-body inputs (contract in body-task.ts): decodes a body of one format
// and emits its records into an EventSink. Nothing a client sends makes this throw: a body that
// is not a message of its format at all is an InvalidBody (400 undecodable_body), a record that
// cannot be stored fails alone.
import { Buffer } from 'node:buffer'
import type { BodyTask, EventSink, InvalidBody } from './body-task.ts'
import { invalidBody } from './body-task.ts'
import { decodeOtlpProto } from './otlp/otlp-proto.ts'
import { otlpEvents } from './otlp/otlp-events.ts'
import { decodeLokiProto, snappyDeclaredLength, uncompressSnappy } from './loki/loki-proto.ts'
import { lokiJsonEvents, lokiProtoEvents } from './loki/loki-events.ts'

function parseJson (bytes: Buffer): { value: unknown } | InvalidBody {
  try {
    return { value: JSON.parse(bytes.toString('utf8')) }
  } catch (err) {
    return invalidBody(`The body is not JSON: ${(err as Error).message}`)
  }
}

/**
 * protobufjs throws on malformed input, and a message nested deep enough overflows its
 * recursive decoder's stack (RangeError): both mean the body is not a message we can read.
 */
function decodeProto<T> (decode: () => T, what: string): { value: T } | InvalidBody {
  try {
    return { value: decode() }
  } catch (err) {
    return invalidBody(`The body is not a protobuf ${what}: ${(err as Error).message}`)
  }
}

export function decodeBody (task: BodyTask, sink: EventSink): InvalidBody | null {
  const bytes = Buffer.from(task.input)
  switch (task.format) {
    case 'otlp-json': {
      const parsed = parseJson(bytes)
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
      if (length > task.maxDecodedBytes) {
        return { invalid: { code: 'payload_too_large', message: `The body decompresses to ${length} bytes; at most ${task.maxDecodedBytes} are accepted` } }
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
  }
}
