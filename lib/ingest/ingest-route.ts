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
//
// Whole-body inputs (OTLP, Loki: lib/inputs/) enter through ingestBody(): the same admission,
// limits, decoder and writer, with the decoded body parsed by one worker task instead of lines.
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
import type { OrgRecord, StreamRecord } from '../storage/metadata-store.ts'
import type { BodyFormat } from '../inputs/body-task.ts'
import { WholeBody } from '../inputs/whole-body.ts'

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

async function handleIngest (ctx: RequestContext, deps: IngestRouteDeps): Promise<void> {
  const { req, res } = ctx
  const streamId = ctx.params.streamId
  const { org, token } = deps.auth.requireIngest(req, streamId)
  const stream = findStream(deps.store, org.id, streamId)
  await admitted(ctx, deps, org, () => { checkContentType(req.headers['content-type']) }, async (ticket, decoder) => {
    const key = req.headers['idempotency-key']
    if (typeof key === 'string') {
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
          stored = await ingestLines(ctx, deps, ticket, decoder, stream, org.id)
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
    await ingestLines(ctx, deps, ticket, decoder, stream, org.id)
  })
}

/** What a whole-body input's request stored: its summary, once its rows are committed. */
export interface BodyOutcome {
  summary: IngestSummary
  /** Decoded bytes of the body. */
  bytes: number
}

/**
 * A whole-body input's request (OTLP, Loki: lib/inputs/body-task.ts) to `stream`, the caller
 * having authenticated it: the same admission, limits, decoder and writer as the line path, with
 * the body parsed by one worker task. Resolves once the rows are committed (nothing to commit
 * when every record failed); the caller answers in its protocol's shape. `checkContent` throws
 * the 400 for a content type the input does not take.
 */
export async function ingestBody (
  ctx: RequestContext, deps: IngestRouteDeps, org: OrgRecord, stream: StreamRecord,
  format: BodyFormat, checkContent: () => void,
): Promise<BodyOutcome> {
  let outcome: BodyOutcome | undefined
  await admitted(ctx, deps, org, checkContent, async (ticket, decoder) => {
    outcome = await whileConnected(ctx, (signal) => readAndStore(ctx, deps, ticket, decoder, stream.retentionDays, org.id, stream.name, signal, format))
  })
  return outcome!
}

/**
 * Admission (429s with Retry-After), the content check and encoding (400), the wire-size check
 * (413), then `run` with the request's ticket and decoder; the ticket is released after.
 */
async function admitted (
  ctx: RequestContext, deps: IngestRouteDeps, org: OrgRecord, checkContent: () => void,
  run: (ticket: AdmissionTicket, decoder: Duplex | null) => Promise<void>,
): Promise<void> {
  const { req, res } = ctx
  // The declared size is reserved at admission; a body over the wire limit gets its 413 below, so
  // it reserves no more than the limit. A refused request's body is drained by the server, not cut
  // off: a client still uploading would otherwise see a reset instead of the 429's Retry-After.
  const declared = Number(req.headers['content-length'])
  const reserve = Number.isSafeInteger(declared) && declared > 0 ? Math.min(declared, deps.config.maxRawBytes) : 0
  const ticket = deps.admission.admit(org.id, org.name, reserve)
  try {
    for (const [name, value] of Object.entries(ticket.headers)) res.setHeader(name, value)
    checkContent()
    const decoder = createDecoder(req.headers['content-encoding'])
    const length = Number(req.headers['content-length'])
    if (length > deps.config.maxRawBytes) {
      decoder?.destroy() // a zlib decoder holds its state from creation
      res.setHeader('connection', 'close')
      throw new SluiceError('payload_too_large', `The body is ${length} bytes; at most ${deps.config.maxRawBytes} are accepted`)
    }
    await run(ticket, decoder)
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

/** The line path: stores the body's lines and answers with the ingest summary (docs/api.md section 6.6). */
async function ingestLines (
  ctx: RequestContext, deps: IngestRouteDeps, ticket: AdmissionTicket, decoder: Duplex | null,
  stream: StreamRecord, orgId: string,
): Promise<StoredAnswer> {
  const { summary, bytes } = await whileConnected(ctx, (signal) => readAndStore(ctx, deps, ticket, decoder, stream.retentionDays, orgId, stream.name, signal, null))
  const body = summary.toJson(bytes, ctx.requestId)
  sendJson(ctx, 200, body)
  return { status: 200, body }
}

/** Runs `work` with a signal that aborts when the client leaves before its answer. */
async function whileConnected<T> (ctx: RequestContext, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const { res } = ctx
  const left = new AbortController()
  const onClose = (): void => {
    if (!res.writableFinished) left.abort(new ClientLeftError())
  }
  res.once('close', onClose)
  try {
    return await work(left.signal)
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
  retentionDays: number, orgId: string, streamName: string, signal: AbortSignal, format: BodyFormat | null,
): Promise<BodyOutcome> {
  const { req } = ctx
  const { config, metrics } = deps
  try {
    await ticket.startReading(signal)
  } catch (err) {
    decoder?.destroy()
    throw err
  }
  const summary = new IngestSummary()
  // Decoded bytes count into the ticket as they pass (accepted, not yet committed). Without a
  // decoder the wire bytes are the decoded bytes: one stage counts them against both limits.
  const countBytes = (n: number): Promise<void> | undefined => ticket.addBytes(n)
  const rawIsLower = config.maxRawBytes <= config.maxDecodedBytes
  const decoded = decoder || !rawIsLower
    ? new ByteLimit(config.maxDecodedBytes, 'decoded', countBytes)
    : new ByteLimit(config.maxRawBytes, 'raw', countBytes)
  const receivedAt = ctx.receivedAt
  const live = deps.tailHub.liveRequestFor(orgId, streamName)
  const seqBase = randomSeqBase()
  const taskContext = {
    orgId, stream: streamName, receivedAt,
    minTs: receivedAt - retentionDays * 86_400_000,
    maxTs: receivedAt + maxFutureMs,
    seqBase,
    live,
  }
  const stages: Duplex[] = []
  if (config.minBytesPerSecond > 0) {
    const rate = new MinDataRate({
      minBytesPerSecond: config.minBytesPerSecond, graceMs: config.minRateGraceMs, onBehind: () => { ticket.reportBehind() },
    })
    ticket.setRateProbe({ isBehind: () => rate.budget.isBehind, cut: () => { rate.cut() } })
    stages.push(rate)
  }
  if (decoder) stages.push(new ByteLimit(config.maxRawBytes, 'raw'), decoder)
  if (format === null) {
    const batcher = new LineBatcher({ taskBytes: config.taskBytes, onFailure: (f) => { summary.addFailure(f) } })
    const [framer, splitter, lastBatch] = createLineSplitter({ batcher, maxLineBytes: config.maxLineBytes })
    await pipeline([req, ...stages, decoded, framer, splitter, lastBatch, new WorkerDispatch(deps.pool, summary, taskContext)])
    if (!batcher.sawLine) throw new SluiceError('empty_body', 'The body holds no lines: send one JSON object per line')
  } else {
    // A whole-body input: one worker task for the body, in place of lines and batches.
    await pipeline([req, ...stages, decoded, new WholeBody(deps.pool, summary, taskContext, format, config.maxDecodedBytes)])
  }
  for (const [code, n] of summary.failedByCode) metrics.linesFailed.inc({ code }, n)
  if (summary.ingested === 0) {
    if (format !== null) return { summary, bytes: decoded.bytes } // the input answers in its protocol's shape
    throw new SluiceError('all_lines_failed', 'Every line of the request failed; see failures', { details: summary.toJson(decoded.bytes, ctx.requestId) })
  }

  const chunks = summary.rowChunks()
  ticket.releaseBytes() // from here the writer counts them
  // The identity lets the writer find the rows again after an insert whose outcome is unknown.
  await deps.writer.write(chunks, summary.ingested, { arrivedAt: ctx.startedAt, signal, identity: { orgId, stream: streamName, seqBase } })
  metrics.linesIngested.inc(undefined, summary.ingested)
  metrics.bytesIngested.inc(undefined, decoded.bytes)
  if (live) deps.tailHub.publish(orgId, streamName, live, summary.live.filter((x) => x !== undefined))
  return { summary, bytes: decoded.bytes }
}
