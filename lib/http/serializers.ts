// The read API's JSON answers written by serializers that fast-json-stringify compiles from the
// schemas the OpenAPI document publishes (read-schemas.ts): one schema, one wire format. A
// compiled serializer writes the known members straight (no walk of the object's keys), and
// sends nothing the schema lacks.
import fastJson from 'fast-json-stringify'
import { fieldsSchema, statsSchema } from './read-schemas.ts'
import type { RequestContext } from './reply.ts'

type Schema = Parameters<typeof fastJson>[0]

/** A serializer of `schema` (a plain JSON schema object; fast-json-stringify's types want its own shape). */
function compile (schema: object): (value: unknown) => string {
  return fastJson(schema as Schema) as (value: unknown) => string
}

export const serializeStats = compile(statsSchema)
export const serializeFields = compile(fieldsSchema)

/** Answers with JSON text a serializer wrote. */
export function sendSerialized (ctx: RequestContext, status: number, serialize: (value: unknown) => string, body: unknown): void {
  const { res } = ctx
  if (res.headersSent) return
  const payload = serialize(body)
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(payload),
  })
  res.end(payload)
}
