// POST /api/elastic/_bulk and /api/elastic/{index}/_bulk (docs/api.md section 6.10): the
// Elasticsearch bulk API on Sluice's ingest pipeline. The ingest token's stream is the target; the
// path's `{index}` and each action's `_index` only come back in the answer. The body goes through
// the same admission, limits, decoding, framing and parse workers as POST /api/ingest (its tasks
// carry kind 'elastic-bulk', classified line by line in bulk-lines.ts); the answer is
// Elasticsearch's `{"took", "errors", "items"}` (bulk-answer.ts), sent once the request's rows
// are committed. Storage stays all or nothing per request: a 200 means every item answered 201
// is committed; a 200 whose items are 429 (bulk-rejection.ts: refused by admission, storage
// unavailable), or a 429 or 503, means none is. Every 429 or 503, and a 200 of 429 items, carries
// Retry-After.
import type { Router } from '../../http/router.ts'
import type { RequestContext } from '../../http/reply.ts'
import { SluiceError } from '../../errors.ts'
import { findStream } from '../../streams/streams.ts'
import { runIngest } from '../../ingest/ingest-pipeline.ts'
import type { IngestAnswer, IngestOutcome, IngestRequest } from '../../ingest/ingest-pipeline.ts'
import type { IngestRouteDeps } from '../../ingest/ingest-route.ts'
import { BulkSummary, answerBytesPerItem, checkItemCount, pairItems, renderBulkAnswer } from './bulk-answer.ts'
import type { BulkItem } from './bulk-answer.ts'
import { BulkRejections, rejectionHeaders } from './bulk-rejection.ts'
import { elasticBulkKind } from './bulk-lines.ts'
import { elasticHandler } from './elastic-request.ts'

/** What the official clients send (the vendored types carry `compatible-with=8` or `=9`), and plain NDJSON or JSON. */
const bulkContentTypes = [
  'application/x-ndjson', 'application/json', 'application/vnd.elasticsearch+x-ndjson', 'application/vnd.elasticsearch+json',
  'application/jsonl', 'application/x-jsonlines',
]

export function registerElasticBulkRoutes (router: Router, deps: IngestRouteDeps): void {
  const rejections = new BulkRejections()
  const handler = elasticHandler((ctx) => handleBulk(ctx, deps, rejections))
  router.add('POST', '/api/elastic/_bulk', handler)
  router.add('PUT', '/api/elastic/_bulk', handler)
  router.add('POST', '/api/elastic/:index/_bulk', handler)
  router.add('PUT', '/api/elastic/:index/_bulk', handler)
}

async function handleBulk (ctx: RequestContext, deps: IngestRouteDeps, rejections: BulkRejections): Promise<void> {
  const { org, token } = deps.auth.requireIngestToken(ctx.req)
  const stream = findStream(deps.store, org.id, token.stream)
  const defaultIndex = ctx.params.index ?? stream.name
  const { config } = deps
  let parsed: BulkItem[] | null = null
  try {
    await runIngest(ctx, deps, bulkRequest(ctx, org, token, stream, defaultIndex, config.maxDecodedBytes, (items) => { parsed = items }))
  } catch (err) {
    const limits = { ...config, maxLines: Math.floor(config.maxDecodedBytes / answerBytesPerItem) }
    let items: BulkItem[] | null
    try {
      items = await rejections.rejectedItems(err, ctx.req, parsed, limits, checkBulkContentType)
    } catch (scanErr) {
      // The refused body was not one Sluice would take (400, 413): that answer, not the 429.
      if (!ctx.req.complete) ctx.res.setHeader('connection', 'close')
      throw scanErr
    }
    if (items === null) throw err
    for (const [name, value] of Object.entries(rejectionHeaders(err as SluiceError))) ctx.res.setHeader(name, value)
    sendBulkAnswer(ctx, items, defaultIndex)
  }
}

function bulkRequest (
  ctx: RequestContext, org: IngestRequest['org'], token: IngestRequest['token'], stream: IngestRequest['stream'], defaultIndex: string,
  maxAnswerBytes: number, onPaired: (items: BulkItem[]) => void,
): IngestRequest {
  let items: BulkItem[] = []
  return {
    org, token, stream,
    inputKind: elasticBulkKind,
    checkContentType: checkBulkContentType,
    summary: () => new BulkSummary(),
    // Pairing may refuse the body whole (400): before the commit, so that it stores nothing.
    // The answer lists every item: bounded like a body (ingest.maxDecodedBytes), checked before the items are built.
    beforeCommit: (outcome) => {
      checkItemCount(outcome.summary as BulkSummary, maxAnswerBytes)
      items = pairItems(outcome.summary as BulkSummary)
      onPaired(items)
    },
    answer: (outcome) => answerBulk(ctx, outcome, items, defaultIndex),
  }
}

function checkBulkContentType (header: string | undefined): void {
  const type = (header ?? '').split(';')[0].trim().toLowerCase()
  if (bulkContentTypes.includes(type)) return
  throw new SluiceError('unsupported_content_type',
    `${type === '' ? 'Content-Type is missing' : `Content-Type ${type} is not accepted`}: send application/x-ndjson (or application/json)`)
}

/** Elasticsearch's answer, as bytes built from pieces (never one string however many items). */
function answerBulk (ctx: RequestContext, outcome: IngestOutcome, items: BulkItem[], defaultIndex: string): IngestAnswer {
  if (!outcome.sawInput) throw new SluiceError('empty_body', 'The body holds no lines: send action and document lines')
  return { status: 200, body: renderBulkBytes(ctx, items, defaultIndex), contentType: 'application/json; charset=utf-8' }
}

function renderBulkBytes (ctx: RequestContext, items: BulkItem[], defaultIndex: string): Buffer {
  const pieces: Buffer[] = []
  for (const piece of renderBulkAnswer(items, { took: performance.now() - ctx.startedAt, defaultIndex })) {
    pieces.push(Buffer.from(piece))
  }
  return Buffer.concat(pieces)
}

/** The answer of a request that stored nothing: its items, 429 (bulk-rejection.ts). */
function sendBulkAnswer (ctx: RequestContext, items: BulkItem[], defaultIndex: string): void {
  const { res } = ctx
  if (res.headersSent) return
  const body = renderBulkBytes(ctx, items, defaultIndex)
  res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': body.byteLength })
  res.end(body)
}
