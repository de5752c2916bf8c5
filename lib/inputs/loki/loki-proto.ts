// Loki's push protobuf (logproto.PushRequest, github.com/grafana/loki pkg/push/push.proto) as a
// protobufjs reflection, and the snappy block framing its clients send it in. Field numbers from
// push.proto and google/protobuf/timestamp.proto; unknown fields (hash, Loki's newer ones) are
// skipped as protobuf requires.
import protobuf from 'protobufjs'
import snappy from 'snappy'

const descriptor = {
  nested: {
    loki: {
      nested: {
        Timestamp: { fields: { seconds: { type: 'int64', id: 1 }, nanos: { type: 'int32', id: 2 } } },
        LabelPairAdapter: { fields: { name: { type: 'string', id: 1 }, value: { type: 'string', id: 2 } } },
        EntryAdapter: {
          fields: {
            timestamp: { type: 'Timestamp', id: 1 },
            line: { type: 'string', id: 2 },
            structuredMetadata: { rule: 'repeated', type: 'LabelPairAdapter', id: 3 },
          },
        },
        StreamAdapter: {
          fields: { labels: { type: 'string', id: 1 }, entries: { rule: 'repeated', type: 'EntryAdapter', id: 2 } },
        },
        PushRequest: { fields: { streams: { rule: 'repeated', type: 'StreamAdapter', id: 1 } } },
      },
    },
  },
}

export const PushRequest = protobuf.Root.fromJSON(descriptor).lookupType('loki.PushRequest')

export interface LokiProtoRequest {
  streams?: Array<{
    labels?: string
    entries?: Array<{ timestamp?: { seconds?: string, nanos?: number }, line?: string, structuredMetadata?: Array<{ name?: string, value?: string }> }>
  }>
}

/** A PushRequest's bytes as plain objects (int64 as decimal strings, unset fields absent). Throws when not one. */
export function decodeLokiProto (bytes: Uint8Array): LokiProtoRequest {
  return PushRequest.toObject(PushRequest.decode(bytes), { longs: String, defaults: false }) as LokiProtoRequest
}

/**
 * The uncompressed length a snappy block declares (its leading varint), or -1 when the block
 * does not start with one: read before decompressing, so a body cannot expand past the limit.
 */
export function snappyDeclaredLength (block: Uint8Array): number {
  let length = 0
  for (let i = 0, shift = 1; i < 5 && i < block.length; i++, shift *= 128) {
    length += (block[i] & 0x7f) * shift
    if ((block[i] & 0x80) === 0) return length
  }
  return -1
}

export function uncompressSnappy (block: Uint8Array): Buffer {
  return snappy.uncompressSync(Buffer.from(block.buffer, block.byteOffset, block.byteLength), { asBuffer: true }) as Buffer
}
