// POST /api/ingest/{streamId} (docs/api.md section 6): NDJSON bodies through the ingest pipeline.
//
// Before the body is read: auth (401/403) → stream exists (404), here; then admission, content
// type, limits, parsing and the commit in ingest-pipeline.ts, which sends this route's answer: the
// summary (200) once the rows are committed. A body with no line is 400 empty_body; one whose
// every line failed is 422 all_lines_failed with the summary, and stores nothing.
import type { Router } from '../http/router.ts'
import type { RequestContext } from '../http/reply.ts'
import { SluiceError } from '../errors.ts'
import type { Authenticator } from '../auth/authenticate.ts'
import type { MetadataStore } from '../storage/metadata-store.ts'
import { findStream } from '../streams/streams.ts'
import { runIngest } from './ingest-pipeline.ts'
import type { IngestAnswer, IngestDeps, IngestOutcome } from './ingest-pipeline.ts'

export interface IngestRouteDeps extends IngestDeps {
  auth: Authenticator
  store: MetadataStore
}

export function registerIngestRoute (router: Router, deps: IngestRouteDeps): void {
  router.add('POST', '/api/ingest/:streamId', (ctx) => handleIngest(ctx, deps))
}

async function handleIngest (ctx: RequestContext, deps: IngestRouteDeps): Promise<void> {
  const streamId = ctx.params.streamId
  const { org, token } = deps.auth.requireIngest(ctx.req, streamId)
  const stream = findStream(deps.store, org.id, streamId)
  await runIngest(ctx, deps, { org, token, stream, answer: ndjsonAnswer })
}

/** The ingest summary (docs/api.md section 6.4), or the refusal of a body that stored nothing. */
export function ndjsonAnswer (outcome: IngestOutcome): IngestAnswer {
  if (!outcome.sawInput) throw new SluiceError('empty_body', 'The body holds no lines: send one JSON object per line')
  const body = {
    ingested: outcome.ingested,
    failed: outcome.failed,
    failures: outcome.failures,
    failures_truncated: outcome.failuresTruncated,
    bytes: outcome.bytes,
    request_id: outcome.requestId,
  }
  if (outcome.ingested === 0) {
    throw new SluiceError('all_lines_failed', 'Every line of the request failed; see failures', { details: body })
  }
  return { status: 200, body }
}
