// What the protocol inputs' routes share: the target (an ingest token's own stream), the content
// type check, the refusal of a body a worker could not read, and the whole route of an input whose
// body is one protobuf or JSON message (OTLP, Loki push: registerWholeBodyRoutes). The request
// itself runs through the ingest pipeline (lib/ingest/ingest-pipeline.ts runIngest, framing 'body').
import type { IncomingMessage } from 'node:http'
import { SluiceError } from '../errors.ts'
import type { Router } from '../http/router.ts'
import type { RequestContext } from '../http/reply.ts'
import type { IngestRouteDeps } from '../ingest/ingest-route.ts'
import { runIngest } from '../ingest/ingest-pipeline.ts'
import type { IngestAnswer, IngestOutcome } from '../ingest/ingest-pipeline.ts'
import type { InputKind } from '../ingest/parse-task.ts'
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
export function describeFailures (failed: number, failures: LineFailure[], what: string, whats = what + 's'): string {
  const listed = failures.slice(0, 5).map((f) => `${what} ${f.line}: ${f.code}: ${f.message}`)
  return `${failed} ${failed === 1 ? what : whats} rejected (${listed.join('; ')}${failed > listed.length ? '; ...' : ''})`
}

/** A protocol input whose body is one message, protobuf or JSON by its Content-Type. */
export interface WholeBodyInput {
  paths: readonly string[]
  /** The two media types, in the order the 415's message names them. */
  accepted: readonly ['application/x-protobuf', 'application/json'] | readonly ['application/json', 'application/x-protobuf']
  /** The worker task kinds of a protobuf body and of a JSON one. */
  kinds: { proto: InputKind, json: InputKind }
  /** The answer once the rows are committed (or a SluiceError), in the request's encoding. */
  answer: (outcome: IngestOutcome, proto: boolean) => IngestAnswer
}

/** POST on each of the input's paths: the token's stream, the whole body as one worker task. */
export function registerWholeBodyRoutes (router: Router, deps: IngestRouteDeps, input: WholeBodyInput): void {
  const checkContentType = contentTypeCheck(input.accepted)
  const handle = async (ctx: RequestContext): Promise<void> => {
    const { org, token, stream } = tokenTarget(ctx.req, deps)
    const proto = mediaType(ctx.req.headers['content-type']) === 'application/x-protobuf'
    await runIngest(ctx, deps, {
      org, token, stream,
      inputKind: proto ? input.kinds.proto : input.kinds.json,
      framing: 'body',
      checkContentType,
      answer: (outcome) => input.answer(outcome, proto),
    })
  }
  for (const path of input.paths) router.add('POST', path, handle)
}
