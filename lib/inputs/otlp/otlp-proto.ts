// The OTLP logs messages as a protobufjs reflection (no generated code, no .proto files at run
// time), field numbers from opentelemetry-proto: opentelemetry/proto/collector/logs/v1/
// logs_service.proto, logs/v1/logs.proto, common/v1/common.proto, resource/v1/resource.proto.
// Only the fields Sluice reads or answers are declared; protobufjs skips unknown fields, which is
// what protobuf requires of a receiver (the deprecated instrumentation_library_logs, 1000, is
// ignored the same way).
import protobuf from 'protobufjs'

const anyValue = {
  oneofs: { value: { oneof: ['stringValue', 'boolValue', 'intValue', 'doubleValue', 'arrayValue', 'kvlistValue', 'bytesValue'] } },
  fields: {
    stringValue: { type: 'string', id: 1 },
    boolValue: { type: 'bool', id: 2 },
    intValue: { type: 'int64', id: 3 },
    doubleValue: { type: 'double', id: 4 },
    arrayValue: { type: 'ArrayValue', id: 5 },
    kvlistValue: { type: 'KeyValueList', id: 6 },
    bytesValue: { type: 'bytes', id: 7 },
  },
}

const descriptor = {
  nested: {
    otlp: {
      nested: {
        AnyValue: anyValue,
        ArrayValue: { fields: { values: { rule: 'repeated', type: 'AnyValue', id: 1 } } },
        KeyValueList: { fields: { values: { rule: 'repeated', type: 'KeyValue', id: 1 } } },
        KeyValue: { fields: { key: { type: 'string', id: 1 }, value: { type: 'AnyValue', id: 2 } } },
        InstrumentationScope: {
          fields: {
            name: { type: 'string', id: 1 },
            version: { type: 'string', id: 2 },
            attributes: { rule: 'repeated', type: 'KeyValue', id: 3 },
            droppedAttributesCount: { type: 'uint32', id: 4 },
          },
        },
        Resource: {
          fields: {
            attributes: { rule: 'repeated', type: 'KeyValue', id: 1 },
            droppedAttributesCount: { type: 'uint32', id: 2 },
          },
        },
        LogRecord: {
          fields: {
            timeUnixNano: { type: 'fixed64', id: 1 },
            severityNumber: { type: 'int32', id: 2 }, // the SeverityNumber enum, read as its number
            severityText: { type: 'string', id: 3 },
            body: { type: 'AnyValue', id: 5 },
            attributes: { rule: 'repeated', type: 'KeyValue', id: 6 },
            droppedAttributesCount: { type: 'uint32', id: 7 },
            flags: { type: 'fixed32', id: 8 },
            traceId: { type: 'bytes', id: 9 },
            spanId: { type: 'bytes', id: 10 },
            observedTimeUnixNano: { type: 'fixed64', id: 11 },
            eventName: { type: 'string', id: 12 },
          },
        },
        ScopeLogs: {
          fields: {
            scope: { type: 'InstrumentationScope', id: 1 },
            logRecords: { rule: 'repeated', type: 'LogRecord', id: 2 },
            schemaUrl: { type: 'string', id: 3 },
          },
        },
        ResourceLogs: {
          fields: {
            resource: { type: 'Resource', id: 1 },
            scopeLogs: { rule: 'repeated', type: 'ScopeLogs', id: 2 },
            schemaUrl: { type: 'string', id: 3 },
          },
        },
        ExportLogsServiceRequest: { fields: { resourceLogs: { rule: 'repeated', type: 'ResourceLogs', id: 1 } } },
        ExportLogsPartialSuccess: {
          fields: { rejectedLogRecords: { type: 'int64', id: 1 }, errorMessage: { type: 'string', id: 2 } },
        },
        ExportLogsServiceResponse: { fields: { partialSuccess: { type: 'ExportLogsPartialSuccess', id: 1 } } },
      },
    },
  },
}

/**
 * Messages protobufjs decodes (and converts, toObject) nested in one another before it throws
 * "max depth exceeded": 100 by default, and each kvlist level of an AnyValue is 3 messages (an
 * attribute's value is 6 below the request), so a record nesting 32 kvlists made the whole body
 * a 400 (explore27d M3). 1,000 decodes about 330 levels, so that a record past maxValueDepth (64)
 * fails alone with too_deep (otlp-events.ts) and the others are stored; a body deeper than that is
 * still undecodable_body. Each level is a stack frame: 1,000 is far from Node's stack limit.
 * Set for every protobuf message this worker decodes (Loki's too).
 */
export const protoRecursionLimit = 1000
protobuf.util.recursionLimit = protoRecursionLimit
protobuf.Reader.recursionLimit = protoRecursionLimit

const root = protobuf.Root.fromJSON(descriptor)
export const ExportLogsServiceRequest = root.lookupType('otlp.ExportLogsServiceRequest')
export const ExportLogsServiceResponse = root.lookupType('otlp.ExportLogsServiceResponse')

/**
 * A binary ExportLogsServiceRequest as plain objects in OTLP/JSON's field names (camelCase),
 * int64 and fixed64 as decimal strings, bytes as base64, enums as numbers, unset fields absent:
 * the shape otlp-events.ts reads (with ids in base64 instead of JSON's hex). Throws on bytes that
 * are not such a message.
 */
export function decodeOtlpProto (bytes: Uint8Array): unknown {
  const message = ExportLogsServiceRequest.decode(bytes)
  return ExportLogsServiceRequest.toObject(message, { longs: String, bytes: String, enums: Number, defaults: false, arrays: false })
}

/** The binary ExportLogsServiceResponse: empty on full success, else partialSuccess. */
export function encodeOtlpResponse (rejected: number, errorMessage: string): Uint8Array {
  const body = rejected > 0 || errorMessage !== '' ? { partialSuccess: { rejectedLogRecords: rejected, errorMessage } } : {}
  return ExportLogsServiceResponse.encode(ExportLogsServiceResponse.fromObject(body)).finish()
}
