// POST /api/elastic/_bulk and /api/elastic/{index}/_bulk (docs/api.md section 6.9): the
// Elasticsearch bulk API on Sluice's ingest pipeline. The ingest token's stream is the target; the
// path's `{index}` and each action's `_index` only come back in the answer. The body goes through
// the same admission, limits, decoding, framing and parse workers as POST /api/ingest (its tasks
// carry kind 'elastic-bulk', classified line by line in bulk-lines.ts); the answer is
// Elasticsearch's `{"took", "errors", "items"}` (bulk-answer.ts), sent once the request's rows
// are committed. Storage stays all or nothing per request: a 200 means every item answered 201
// is committed; a 429 or 503 (with Retry-After) means none is.
import type { Router } from '../../http/router.ts'
import type { RequestContext } from '../../http/reply.ts'
import { SluiceError } from '../../errors.ts'
import { findStream } from '../../streams/streams-route.ts'
import { ingestRequest } from '../../ingest/ingest-route.ts'
import type { IngestInput, IngestRouteDeps, IngestRun } from '../../ingest/ingest-route.ts'
import { BulkSummary, pairItems, renderBulkAnswer } from './bulk-answer.ts'
import { elasticBulkKind } from './bulk-lines.ts'
import { elasticHandler } from './elastic-request.ts'

/** What the official clients send (the vendored types carry `compatible-with=8` or `=9`), and plain NDJSON or JSON. */
const bulkContentTypes = [
  'application/x-ndjson', 'application/json', 'application/vnd.elasticsearch+x-ndjson', 'application/vnd.elasticsearch+json',
  'application/jsonl', 'application/x-jsonlines',
]

/** An answer up to this size (characters) is sent with Content-Length; a larger one is streamed in chunks. */
const bufferedAnswerChars = 4 * 1024 * 1024

export function registerElasticBulkRoutes (router: Router, deps: IngestRouteDeps): void {
  const handler = elasticHandler((ctx) => handleBulk(ctx, deps))
  router.add('POST', '/api/elastic/_bulk', handler)
  router.add('PUT', '/api/elastic/_bulk', handler)
  router.add('POST', '/api/elastic/:index/_bulk', handler)
  router.add('PUT', '/api/elastic/:index/_bulk', handler)
}

async function handleBulk (ctx: RequestContext, deps: IngestRouteDeps): Promise<void> {
  const principal = deps.auth.requireIngestToken(ctx.req)
  const stream = findStream(deps.store, principal.org.id, principal.token.stream)
  await ingestRequest(ctx, deps, principal, stream, bulkInput(ctx.params.index ?? stream.name))
}

function bulkInput (defaultIndex: string): IngestInput {
  return {
    checkContentType: checkBulkContentType,
    kind: elasticBulkKind,
    idempotency: false,
    summary: () => new BulkSummary(),
    answer: (ctx, run) => answerBulk(ctx, run, defaultIndex),
  }
}

function checkBulkContentType (header: string | undefined): void {
  const type = (header ?? '').split(';')[0].trim().toLowerCase()
  if (bulkContentTypes.includes(type)) return
  throw new SluiceError('unsupported_content_type',
    `${type === '' ? 'Content-Type is missing' : `Content-Type ${type} is not accepted`}: send application/x-ndjson (or application/json)`)
}

async function answerBulk (ctx: RequestContext, run: IngestRun, defaultIndex: string): Promise<{ status: number, body: unknown }> {
  const items = pairItems(run.summary as BulkSummary) // a 400 here stores nothing
  await run.commit()
  const pieces = renderBulkAnswer(items, { took: performance.now() - ctx.startedAt, defaultIndex, seqBase: run.seqBase })
  await sendPieces(ctx, pieces)
  return { status: 200, body: null }
}

/** Writes the answer: with Content-Length when it is small, else chunked, waiting for the socket to drain. */
async function sendPieces (ctx: RequestContext, pieces: Generator<string>): Promise<void> {
  const { res } = ctx
  const head: string[] = []
  let chars = 0
  let next = pieces.next()
  while (!next.done && chars < bufferedAnswerChars) {
    head.push(next.value)
    chars += next.value.length
    next = pieces.next()
  }
  const headers = { 'content-type': 'application/json; charset=utf-8' }
  if (next.done) {
    const text = head.join('')
    res.writeHead(200, { ...headers, 'content-length': Buffer.byteLength(text) })
    res.end(text)
    return
  }
  res.writeHead(200, headers)
  for (const piece of head) await write(ctx, piece)
  for (; !next.done && !res.destroyed; next = pieces.next()) await write(ctx, next.value)
  res.end()
}

function write (ctx: RequestContext, piece: string): Promise<void> | undefined {
  if (ctx.res.write(piece) || ctx.res.destroyed) return undefined
  return new Promise((resolve) => {
    const done = (): void => {
      ctx.res.off('drain', done)
      ctx.res.off('close', done)
      resolve()
    }
    ctx.res.on('drain', done)
    ctx.res.on('close', done)
  })
}
