// What the protocol inputs' routes share: the target (an ingest token's own stream) and the
// content type check. The request itself runs through the ingest route's ingestBody().
import type { IncomingMessage } from 'node:http'
import { SluiceError } from '../errors.ts'
import type { IngestRouteDeps } from '../ingest/ingest-route.ts'
import type { OrgRecord, StreamRecord } from '../storage/metadata-store.ts'
import { findStream } from '../streams/streams-route.ts'
import type { LineFailure } from '../ingest/parse-task.ts'

/** The org and stream of the request's ingest token (401/403 of docs/api.md section 4; 404). */
export function tokenTarget (req: IncomingMessage, deps: IngestRouteDeps): { org: OrgRecord, stream: StreamRecord } {
  const { org, token } = deps.auth.requireIngestToken(req)
  return { org, stream: findStream(deps.store, org.id, token.stream) }
}

/** The media type of a Content-Type header, lowercase, without parameters ('' when none). */
export function mediaType (header: string | undefined): string {
  return (header ?? '').split(';')[0].trim().toLowerCase()
}

export function unsupportedType (type: string, accepted: string): SluiceError {
  return new SluiceError('unsupported_content_type', `${type === '' ? 'Content-Type is missing' : `Content-Type ${type} is not accepted here`}: send ${accepted}`)
}

/** The first failures as one line of text, for protocols that answer with a message only. */
export function describeFailures (failed: number, failures: LineFailure[], what: string): string {
  const listed = failures.slice(0, 5).map((f) => `${what} ${f.line}: ${f.code}: ${f.message}`)
  return `${failed} ${what}${failed === 1 ? '' : 's'} rejected (${listed.join('; ')}${failed > listed.length ? '; ...' : ''})`
}
