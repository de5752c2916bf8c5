// POST /api/ingest/{streamId} (docs/api.md section 6): NDJSON bodies through the ingest pipeline.
//
// Before the body is read: auth (401/403) → stream exists (404), here; then admission, content
// type, limits, parsing and the commit in ingest-pipeline.ts, which sends this route's answer: the
// summary (200) once the rows are committed. A body with no line is 400 empty_body; one whose
// every line failed is 422 all_lines_failed with the summary, and stores nothing, unless a line
// was a wrapper of many records (wrapped-body.ts): then 400 wrapped_body, with the first such
// line's message naming the endpoint to use. So is a body whose first line is an Elasticsearch
// _bulk action line, whatever else it stored (refused before the commit: nothing stored).
import type { Router } from '../http/router.ts'
import type { RequestContext } from '../http/reply.ts'
import { SluiceError } from '../errors.ts'
import type { Authenticator } from '../auth/authenticate.ts'
import type { MetadataStore } from '../storage/metadata-store.ts'
import { findStream } from '../streams/streams.ts'
import { runIngest } from './ingest-pipeline.ts'
import { isBulkActionFailure } from './wrapped-body.ts'
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
  await runIngest(ctx, deps, { org, token, stream, beforeCommit: refuseWrappedBody, answer: ndjsonAnswer })
}

/** The summary fields of the answer: the 200's body, and the details of a refusal. */
function summaryBody (outcome: IngestOutcome) {
  return {
    ingested: outcome.ingested,
    failed: outcome.failed,
    failures: outcome.failures,
    failures_truncated: outcome.failuresTruncated,
    bytes: outcome.bytes,
    request_id: outcome.requestId,
  }
}

/**
 * Before the commit (docs/api.md section 6.6): 400 wrapped_body when every line failed and one
 * of them was a wrapped body, or when the first line is an Elasticsearch _bulk action line (a
 * bulk body: its documents stored as events would be stored again once sent to _bulk). The
 * message is the first listed wrapped line's, which names the endpoint; ingested is 0 since
 * nothing is stored.
 */
export function refuseWrappedBody (outcome: IngestOutcome): void {
  const wrapped = outcome.summary.failedByCode.get('wrapped_body') ?? 0
  if (wrapped === 0) return
  const first = outcome.failures[0]
  const bulkBody = first !== undefined && first.line === 1 && isBulkActionFailure(first)
  if (outcome.ingested > 0 && !bulkBody) return
  const failure = outcome.failures.find((f) => f.code === 'wrapped_body')
  const message = failure === undefined ? undefined : `Line ${failure.line}: ${failure.message}`
  throw new SluiceError('wrapped_body', message, { details: { ...summaryBody(outcome), ingested: 0 } })
}

/** The ingest summary (docs/api.md section 6.6), or the refusal of a body that stored nothing. */
export function ndjsonAnswer (outcome: IngestOutcome): IngestAnswer {
  if (!outcome.sawInput) throw new SluiceError('empty_body', 'The body holds no lines: send one JSON object per line')
  const body = summaryBody(outcome)
  if (outcome.ingested === 0) {
    throw new SluiceError('all_lines_failed', 'Every line of the request failed; see failures', { details: body })
  }
  return { status: 200, body }
}
