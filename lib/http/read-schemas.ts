// JSON schemas of the read API's answers, written once: the OpenAPI document publishes them
// (openapi.ts, components.schemas) and serializers.ts compiles the same objects with
// fast-json-stringify into the functions that write the answers. So the wire and the document
// cannot drift: a member the schema lacks is not sent at all, and test/http/serializers.test.ts
// holds every serializer's output equal to JSON.stringify's on real answers.
// The Event schema follows the field table (lib/events/fields.ts); events themselves are written
// by the byte-level writer (lib/events/event-json.ts), which is faster for pages of events.
import { eventFields } from '../events/fields.ts'
import type { EventField } from '../events/fields.ts'
import { levelNames } from '../events/level.ts'

type Json = Record<string, unknown>

const integer = { type: 'integer' } as const
const number = { type: 'number' } as const
const string = { type: 'string' } as const
const nullableNumber = { type: ['number', 'null'] } as const

function fieldSchema (f: EventField): Json {
  switch (f.rule) {
    case 'ts': return { type: 'integer', description: 'ms since the epoch' }
    case 'status': case 'count': return { type: ['integer', 'null'] }
    case 'seconds': return { type: ['number', 'null'], description: 'seconds' }
    case 'level': return { enum: [...levelNames, null] }
    default: return { type: ['string', 'null'] }
  }
}

/** An event of the events API, tail frames, context and export (docs/api.md section 7.3). */
export const eventSchema: Json = {
  type: 'object',
  required: ['id', ...eventFields.map((f) => f.name), 'attrs', 'received_at'],
  properties: {
    id: { type: 'string', description: 'The event\'s id: `<ts>-<seq>`, for the context route' },
    ...Object.fromEntries(eventFields.map((f) => [f.name, fieldSchema(f)])),
    attrs: { type: ['object', 'string'], description: 'The other keys of the line, as sent' },
    received_at: { type: 'integer', description: 'ms since the epoch' },
  },
}

const counted = (key: string, value: Json = string): Json => ({
  type: 'array', items: { type: 'object', required: [key, 'count'], properties: { [key]: value, count: integer } },
})

/** GET /stats (docs/api.md section 7.4). */
export const statsSchema = {
  type: 'object',
  required: ['from', 'to', 'step_ms', 'series', 'totals', 'top'],
  properties: {
    from: integer,
    to: integer,
    step_ms: integer,
    series: {
      type: 'array',
      items: {
        type: 'object',
        required: ['t', 'count', 'status_2xx', 'status_3xx', 'status_4xx', 'status_5xx', 'bytes', 'rt_p50', 'rt_p95', 'rt_p99'],
        properties: {
          t: integer, count: integer, status_2xx: integer, status_3xx: integer, status_4xx: integer, status_5xx: integer, bytes: integer,
          rt_p50: nullableNumber, rt_p95: nullableNumber, rt_p99: nullableNumber,
          groups: { type: 'object', additionalProperties: integer, description: 'With `by`: events per listed group value in this bucket' },
        },
      },
    },
    totals: {
      type: 'object',
      required: ['count', 'error_rate', 'bytes', 'unique_sources'],
      properties: { count: integer, error_rate: number, bytes: integer, unique_sources: { type: ['integer', 'null'], description: 'null with `lists=none`' } },
    },
    groups: { ...counted('value'), description: 'With `by`: the field\'s top values over the range, count descending' },
    sampled: { type: 'boolean', description: 'With `by`: true when the values were found over slices of the range (`sample`): their counts scaled up, or counted again exactly over the whole range, and a rare value may be missing; false when every event was counted' },
    top: {
      type: 'object',
      required: ['paths', 'hosts', 'status', 'sources', 'user_agents', 'filenames', 'levels', 'not_found_paths', 'slowest_paths'],
      properties: {
        paths: {
          type: 'array',
          items: { type: 'object', required: ['path', 'count', 'error_share', 'rt_p95'], properties: { path: string, count: integer, error_share: number, rt_p95: nullableNumber } },
        },
        hosts: counted('host'),
        status: counted('status', integer),
        sources: counted('src'),
        user_agents: counted('user_agent'),
        filenames: counted('filename'),
        levels: counted('level'),
        not_found_paths: counted('path'),
        slowest_paths: {
          type: 'array',
          items: { type: 'object', required: ['path', 'rt_p95', 'count'], properties: { path: string, rt_p95: number, count: integer } },
        },
      },
    },
  },
} as const

/** GET /fields (docs/api.md section 7.6). */
export const fieldsSchema = {
  type: 'object',
  required: ['fields', 'sampled', 'total'],
  properties: {
    fields: {
      type: 'array',
      items: {
        type: 'object',
        required: ['name', 'kind', 'type', 'count', 'top'],
        properties: {
          name: { type: 'string', description: 'The name `q`, `by=` and `same=` read the field by: an attribute whose path is also a column\'s name is `attrs.<path>`' },
          kind: { type: 'string', enum: ['column', 'attribute'] },
          type: { type: 'string', enum: ['string', 'number', 'boolean'], description: 'An attribute is `number` when every value is a number as `q`\'s comparisons read one, `boolean` when every value is true or false' },
          count: integer,
          top: counted('value', { type: ['string', 'number'] }),
        },
      },
    },
    sampled: { type: 'boolean', description: 'true when counted over slices of the range and scaled up' },
    total: { ...integer, description: 'Matching events over the range (exact)' },
  },
} as const
