// POST /api/ingest/{streamId} (docs/api.md section 6).
//
// Before the body is read: auth (401/403) → stream exists (404) → org rate, org concurrency,
// server queue (429) → content type and encoding (400). A request refused there stores nothing.
// Then one pipeline per request: wire bytes are counted (413), decoded, counted again (413, the
// zip-bomb guard; an identity body is counted once, against both limits), split into lines,
// batched, and parsed by the worker pool. All of the request's
// rows go to the batch writer in one write, and the 200 is sent only once the insert holding them
// has succeeded. A request that fails or is cut off before that point stores nothing.
//
// Slow and departed clients: the body must arrive at ingest.minBytesPerSecond (MinDataRate; 408
// request_timeout, and the connection is closed). A client that leaves (its connection closes
// before the answer: it gave up, or a timeout destroyed the socket) aborts the request's signal:
// a wait for a reading slot ends, and rows not yet in an insert are dropped by the writer, so a
// request whose client was told nothing, or 408, is not stored and then stored again on retry.
import { pipeline } from 'node:stream/promises'
import type { Duplex } from 'node:stream'
import type { Piscina } from 'piscina'
import type { Router } from '../http/router.ts'
import type { RequestContext } from '../http/reply.ts'
import { sendJson } from '../http/reply.ts'
import { SluiceError } from '../errors.ts'
import type { Config } from '../config.ts'
import type { Authenticator } from '../auth/authenticate.ts'
import type { MetadataStore } from '../storage/metadata-store.ts'
import type { BatchWriter } from '../storage/batch-writer.ts'
import type { SluiceMetrics } from '../metrics/metrics.ts'
import { checkContentType } from './content-type.ts'
import { findStream } from '../streams/streams-route.ts'
import { ByteLimit } from './byte-limit.ts'
import { createDecoder } from './decoder.ts'
import { createLineSplitter } from './line-splitter.ts'
import { LineBatcher } from './line-batcher.ts'
import { WorkerDispatch } from './worker-dispatch.ts'
import { MinDataRate } from '../limits/min-data-rate.ts'
import { IngestSummary } from './ingest-summary.ts'
import { randomSeqBase } from './parse-task.ts'
import { IdempotencyCache } from './idempotency.ts'
import type { StoredAnswer } from './idempotency.ts'
import type { Admission, AdmissionTicket } from './admission.ts'
import type { TailHub } from '../live/tail-hub.ts'
import type { ParseTask } from './parse-task.ts'
import type { StreamRecord } from '../storage/metadata-store.ts'
import type { IngestPrincipal } from '../auth/authenticate.ts'

export interface IngestRouteDeps {
  config: Config['ingest']
  auth: Authenticator
  store: MetadataStore
  admission: Admission
  pool: Piscina
  writer: BatchWriter
  metrics: SluiceMetrics
  idempotency: IdempotencyCache
  /** The live tail, fed as requests commit. */
  tailHub: TailHub
}

/** Events may be this far in the future (clock skew between shippers and us): two days, in ms. */
const maxFutureMs = 2 * 86_400_000

export function registerIngestRoute (router: Router, deps: IngestRouteDeps): void {
  router.add('POST', '/api/ingest/:streamId', (ctx) => handleIngest(ctx, deps))
}

/**
 * What an input built on this pipeline (lib/inputs/*) changes: its content types, its task kind,
 * its summary, and its answer. Sluice's own NDJSON route uses the defaults.
 */
export interface IngestInput {
  /** Throws the 400 for a Content-Type the input does not read. */
  checkContentType: (header: string | undefined) => void
  /** ParseTask.kind of the request's tasks. */
  kind?: ParseTask['kind']
  /** Whether Idempotency-Key is read (docs/api.md section 6.7); default true. */
  idempotency?: boolean
  /** The request's summary (a subclass may keep more of the workers' results). */
  summary: () => IngestSummary
  /**
   * Answers once the body is parsed (a 400 thrown here stores nothing); `commit()` writes the
   * request's rows and resolves once they are committed (the 200 must wait for it).
   */
  answer: (ctx: RequestContext, run: IngestRun) => Promise<StoredAnswer>
}

/** A parsed request, handed to IngestInput.answer. */
export interface IngestRun {
  summary: IngestSummary
  /** Decompressed bytes of the body. */
  bytes: number
  /** Base of the rows' seq (parse-task.ts). */
  seqBase: number
  /** Writes the rows (none: nothing to write) and publishes them to the tail; resolves once committed. */
  commit: () => Promise<void>
}

const ndjsonInput: IngestInput = {
  checkContentType,
  summary: () => new IngestSummary(),
  answer: async (ctx, run) => {
    const body = run.summary.toJson(run.bytes, ctx.requestId)
    if (run.summary.ingested === 0) {
      throw new SluiceError('all_lines_failed', 'Every line of the request failed; see failures', { details: body })
    }
    await run.commit()
    sendJson(ctx, 200, body)
    return { status: 200, body }
  },
}

async function handleIngest (ctx: RequestContext, deps: IngestRouteDeps): Promise<void> {
  const streamId = ctx.params.streamId
  const principal = deps.auth.requireIngest(ctx.req, streamId)
  const stream = findStream(deps.store, principal.org.id, streamId)
  await ingestRequest(ctx, deps, principal, stream, ndjsonInput)
}

/** From admission to the answer, for an authenticated request to `stream` (docs/api.md section 6.1). */
export async function ingestRequest (ctx: RequestContext, deps: IngestRouteDeps, principal: IngestPrincipal, stream: StreamRecord, input: IngestInput): Promise<void> {
  const { req, res } = ctx
  const { org, token } = principal

  // The declared size is reserved at admission; a body over the wire limit gets its 413 below, so
  // it reserves no more than the limit. A refused request's body is drained by the server, not cut
  // off: a client still uploading would otherwise see a reset instead of the 429's Retry-After.
  const declared = Number(req.headers['content-length'])
  const reserve = Number.isSafeInteger(declared) && declared > 0 ? Math.min(declared, deps.config.maxRawBytes) : 0
  const ticket = deps.admission.admit(org.id, org.name, reserve)
  try {
    for (const [name, value] of Object.entries(ticket.headers)) res.setHeader(name, value)
    input.checkContentType(req.headers['content-type'])
    const decoder = createDecoder(req.headers['content-encoding'])
    const length = Number(req.headers['content-length'])
    if (length > deps.config.maxRawBytes) {
      decoder?.destroy() // a zlib decoder holds its state from creation
      res.setHeader('connection', 'close')
      throw new SluiceError('payload_too_large', `The body is ${length} bytes; at most ${deps.config.maxRawBytes} are accepted`)
    }

    const key = req.headers['idempotency-key']
    if (typeof key === 'string' && input.idempotency !== false) {
      IdempotencyCache.validateKey(key)
      const scope = `${org.id}/${stream.name}/${token.id}`
      for (;;) {
        const claim = deps.idempotency.claim(scope, key)
        if (claim.kind === 'replay') {
          const answer = await claim.answer
          if (answer === null) continue // the first attempt ended retryable: run this one
          res.setHeader('idempotent-replayed', 'true')
          decoder?.destroy()
          req.resume()
          sendJson(ctx, answer.status, answer.body)
          return
        }
        let stored: StoredAnswer | null = null
        try {
          stored = await ingestBody(ctx, deps, ticket, decoder, stream.retentionDays, org.id, stream.name, input)
        } catch (err) {
          const e = err as SluiceError
          // Client errors are final answers too; retryable ones (429, 5xx) are not kept.
          if (e instanceof SluiceError && e.status < 500 && e.status !== 429) {
            stored = { status: e.status, body: { error: e.code, message: e.message, ...e.details, request_id: ctx.requestId } }
          }
          throw err
        } finally {
          claim.settle(stored)
        }
        return
      }
    }
    await ingestBody(ctx, deps, ticket, decoder, stream.retentionDays, org.id, stream.name, input)
  } catch (err) {
    // A body abandoned part-way is not worth reading on: the connection closes. One refused
    // before its first byte was read (a bad content type, the wait for a reading slot) is left
    // to the server, which drains it like any unread body so the client reads the answer.
    if (!req.complete && req.readableDidRead) res.setHeader('connection', 'close')
    throw err
  } finally {
    ticket.release()
  }
}

async function ingestBody (
  ctx: RequestContext, deps: IngestRouteDeps, ticket: AdmissionTicket, decoder: Duplex | null,
  retentionDays: number, orgId: string, streamName: string, input: IngestInput,
): Promise<StoredAnswer> {
  const { res } = ctx
  const left = new AbortController()
  const onClose = (): void => {
    if (!res.writableFinished) left.abort(new ClientLeftError())
  }
  res.once('close', onClose)
  try {
    return await readAndStore(ctx, deps, ticket, decoder, retentionDays, orgId, streamName, left.signal, input)
  } finally {
    res.off('close', onClose)
  }
}

/** The reason a request's signal aborts when its client has gone: no one to answer, nothing to store. */
class ClientLeftError extends Error {
  constructor () {
    super('the client closed the connection before its answer')
    this.name = 'AbortError'
  }
}

async function readAndStore (
  ctx: RequestContext, deps: IngestRouteDeps, ticket: AdmissionTicket, decoder: Duplex | null,
  retentionDays: number, orgId: string, streamName: string, signal: AbortSignal, input: IngestInput,
): Promise<StoredAnswer> {
  const { req } = ctx
  const { config, metrics } = deps
  try {
    await ticket.startReading(signal)
  } catch (err) {
    decoder?.destroy()
    throw err
  }
  const summary = input.summary()
  // Decoded bytes count into the ticket as they pass (accepted, not yet committed). Without a
  // decoder the wire bytes are the decoded bytes: one stage counts them against both limits.
  const countBytes = (n: number): Promise<void> | undefined => ticket.addBytes(n)
  const rawIsLower = config.maxRawBytes <= config.maxDecodedBytes
  const decoded = decoder || !rawIsLower
    ? new ByteLimit(config.maxDecodedBytes, 'decoded', countBytes)
    : new ByteLimit(config.maxRawBytes, 'raw', countBytes)
  const batcher = new LineBatcher({ taskBytes: config.taskBytes, onFailure: (f) => { summary.addFailure(f) } })
  const receivedAt = ctx.receivedAt
  const live = deps.tailHub.liveRequestFor(orgId, streamName)
  const seqBase = randomSeqBase()
  const dispatch = new WorkerDispatch(deps.pool, summary, {
    orgId, stream: streamName, receivedAt,
    minTs: receivedAt - retentionDays * 86_400_000,
    maxTs: receivedAt + maxFutureMs,
    seqBase,
    live,
    ...(input.kind === undefined ? {} : { kind: input.kind }),
  })
  const [framer, splitter, lastBatch] = createLineSplitter({ batcher, maxLineBytes: config.maxLineBytes })
  const stages: Duplex[] = []
  if (config.minBytesPerSecond > 0) {
    const rate = new MinDataRate({
      minBytesPerSecond: config.minBytesPerSecond, graceMs: config.minRateGraceMs, onBehind: () => { ticket.reportBehind() },
    })
    ticket.setRateProbe({ isBehind: () => rate.budget.isBehind, cut: () => { rate.cut() } })
    stages.push(rate)
  }
  if (decoder) stages.push(new ByteLimit(config.maxRawBytes, 'raw'), decoder)
  await pipeline([req, ...stages, decoded, framer, splitter, lastBatch, dispatch])

  if (!batcher.sawLine) throw new SluiceError('empty_body', 'The body holds no lines: send one JSON object per line')
  for (const [code, n] of summary.failedByCode) metrics.linesFailed.inc({ code }, n)
  const commit = async (): Promise<void> => {
    const chunks = summary.rowChunks()
    ticket.releaseBytes() // from here the writer counts them
    if (summary.ingested > 0) {
      // The identity lets the writer find the rows again after an insert whose outcome is unknown.
      await deps.writer.write(chunks, summary.ingested, { arrivedAt: ctx.startedAt, signal, identity: { orgId, stream: streamName, seqBase } })
    }
    metrics.linesIngested.inc(undefined, summary.ingested)
    metrics.bytesIngested.inc(undefined, decoded.bytes)
    if (live) deps.tailHub.publish(orgId, streamName, live, summary.live.filter((x) => x !== undefined))
  }
  return await input.answer(ctx, { summary, bytes: decoded.bytes, seqBase, commit })
}
