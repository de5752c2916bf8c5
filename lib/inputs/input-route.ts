// What the protocol inputs' routes share: the target (an ingest token's own stream), the content
// type check, and the refusal of a body a worker could not read. The request itself runs through
// the ingest pipeline (lib/ingest/ingest-pipeline.ts runIngest, framing 'body').
import type { IncomingMessage } from 'node:http'
import { SluiceError } from '../errors.ts'
import type { IngestRouteDeps } from '../ingest/ingest-route.ts'
import type { IngestOutcome } from '../ingest/ingest-pipeline.ts'
import type { IngestTokenRecord, OrgRecord, StreamRecord } from '../storage/metadata-store.ts'
import { findStream } from '../streams/streams.ts'
import type { LineFailure } from '../ingest/parse-task.ts'

/** The org, token and stream of the request's ingest token (401/403 of docs/api.md section 4; 404). */
export function tokenTarget (req: IncomingMessage, deps: IngestRouteDeps): { org: OrgRecord, token: IngestTokenRecord, stream: StreamRecord } {
  const { org, token } = deps.auth.requireIngestToken(req)
  return { org, token, stream: findStream(deps.store, org.id, token.stream) }
}

/** The media type of a Content-Type header, lowercase, without parameters ('' when none). */
export function mediaType (header: string | undefined): string {
  return (header ?? '').split(';')[0].trim().toLowerCase()
}

/** A check for runIngest: the header's media type must be one of `accepted`. */
export function contentTypeCheck (accepted: readonly string[]): (header: string | undefined) => void {
  return (header) => {
    const type = mediaType(header)
    if (accepted.includes(type)) return
    throw new SluiceError('unsupported_content_type',
      `${type === '' ? 'Content-Type is missing' : `Content-Type ${type} is not accepted here`}: send ${accepted.join(' or ')}`)
  }
}

/**
 * Throws the refusal of a body the worker could not read (400 undecodable_body, 413), or of an
 * empty body where the format has no empty message (JSON; an empty protobuf is a valid one).
 */
export function refuseBodyError (outcome: IngestOutcome, emptyIsValid: boolean): void {
  const error = outcome.summary.bodyError
  if (error !== null) throw new SluiceError(error.code, error.message)
  if (!outcome.sawInput && !emptyIsValid) throw new SluiceError('undecodable_body', 'The body is empty')
}

/** The first failures as one line of text, for protocols that answer with a message only. */
export function describeFailures (failed: number, failures: LineFailure[], what: string): string {
  const listed = failures.slice(0, 5).map((f) => `${what} ${f.line}: ${f.code}: ${f.message}`)
  return `${failed} ${what}${failed === 1 ? '' : 's'} rejected (${listed.join('; ')}${failed > listed.length ? '; ...' : ''})`
}
