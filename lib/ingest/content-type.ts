// Which bodies the ingest endpoint reads: NDJSON (application/x-ndjson) and, for real
// shippers, application/jsonl, application/x-jsonlines and application/json (docs/api.md section 6.2).
// Parameters such as charset=utf-8 are ignored.
import { SluiceError } from '../errors.ts'

export const acceptedContentTypes = [
  'application/x-ndjson', 'application/jsonl', 'application/x-jsonlines', 'application/json',
] as const

export function checkContentType (header: string | undefined): void {
  const type = (header ?? '').split(';')[0].trim().toLowerCase()
  if ((acceptedContentTypes as readonly string[]).includes(type)) return
  const hint = type === 'application/msgpack' || type === 'application/x-msgpack'
    ? ' MessagePack is not accepted: set the shipper\'s format to json_lines.'
    : ''
  throw new SluiceError('unsupported_content_type',
    `${type === '' ? 'Content-Type is missing' : `Content-Type ${type} is not accepted`}: send application/x-ndjson (or ${acceptedContentTypes.slice(1).join(', ')}).${hint}`)
}
