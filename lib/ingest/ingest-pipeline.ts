// The ingest pipeline: every stage a request body goes through, wired here in the order of the
// README's "How it works", for every input route (NDJSON, and protocol inputs that reuse it).
// The route authenticates and finds the stream, then calls runIngest with its own answer.
//
//   admission (rate, concurrency, uncommitted bytes: 429)  ─ content type, encoding, declared
//   size (400, 413)  ─ Idempotency-Key (a replay answers here, once its body's fingerprint
//   matches the first attempt's: else 422)                                 before the body is read
//   ─ reading slot (limits.maxReadingRequests)
//   ─ min data rate (408) ─ byte limit, wire (413) ─ decoder ─ byte limit, decoded (413)
//   ─ framing: line framer ─ splitter ─ batcher (NDJSON), or the whole body as one task
//   ─ worker dispatch (parse workers) ─ summary
//   ─ batch writer (the commit) ─ live tail publish ─ the route's answer
//
// Guarantees: a request refused before the writer stores nothing; the answer is sent only once
// the insert holding the request's rows has succeeded. Slow and departed clients: the body must
// arrive at ingest.minBytesPerSecond (MinDataRate; 408 request_timeout, and the connection is
// closed). A client that leaves (its connection closes before the answer: it gave up, or a
// timeout destroyed the socket) aborts the request's signal: a wait for a reading slot ends, and
// rows not yet in an insert are dropped by the writer, so a request whose client was told
// nothing, or 408, is not stored and then stored again on retry.
import { pipeline } from 'node:stream/promises'
import type { Duplex, Transform } from 'node:stream'
import type { Piscina } from 'piscina'
import type { RequestContext } from '../http/reply.ts'
import { sendEmpty, sendJson } from '../http/reply.ts'
import { SluiceError } from '../errors.ts'
import type { Config } from '../config.ts'
import type { BatchWriter } from '../storage/batch-writer.ts'
import { randomSeqBase } from '../storage/row-seq.ts'
import type { SluiceMetrics } from '../metrics/metrics.ts'
import type { TailHub } from '../live/tail-hub.ts'
import { MinDataRate } from '../limits/min-data-rate.ts'
import type { Admission, AdmissionTicket } from './admission.ts'
import { checkContentType } from './content-type.ts'
import { createDecoder } from './decoder.ts'
import { ByteLimit } from './byte-limit.ts'
import { createLineSplitter } from './line-splitter.ts'
import { LineBatcher } from './line-batcher.ts'
import { BodyCollector } from './body-collector.ts'
import { RequestBody } from './request-body.ts'
import { WorkerDispatch } from './worker-dispatch.ts'
import { IngestSummary } from './ingest-summary.ts'
import { IdempotencyCache, finalErrorAnswer } from './idempotency.ts'
import { BodyFingerprint, checkRetryBody } from './body-fingerprint.ts'
import type { KeyedCommit, StoredAnswer } from './idempotency.ts'
import type { InputKind, LineFailure } from './parse-task.ts'

/** What every input route shares: built once in lib/app.ts. */
export interface IngestDeps {
  config: Config['ingest']
  admission: Admission
  pool: Piscina
  writer: BatchWriter
  metrics: SluiceMetrics
  idempotency: IdempotencyCache
  /**
   * Shippers' retries recognised by their bodies (config.dedupeRetries): keys of their own, in a
   * smaller memory (most unkeyed bodies are never sent again); default: `idempotency`.
   */
  retries?: IdempotencyCache
  /** The live tail, fed as requests commit. */
  tailHub: TailHub
}

/** A request's answer: a JSON value, or bytes sent as they are with `contentType`. */
export type IngestAnswer = StoredAnswer

/** What a request produced, once its rows are committed (or there were none to commit). */
export interface IngestOutcome {
  /** Rows committed. 0: nothing was stored, and the writer was not called. */
  ingested: number
  /** Records that failed (each alone, with its code). */
  failed: number
  /** The first failures in body order, at most maxListedFailures (parse-task.ts). */
  failures: LineFailure[]
  /** More failed than are listed. */
  failuresTruncated: boolean
  /** Decoded body bytes. */
  bytes: number
  /** Whether the body held anything: a non-blank line ('lines' framing), a byte ('body' framing). */
  sawInput: boolean
  requestId: string
  /** Everything the workers sent back (per-task results), for an input's own answer. */
  summary: IngestSummary
}

export interface IngestRequest {
  /** The authenticated caller's org (admission is per org). */
  org: { id: string, name: string }
  /** The ingest token used: an Idempotency-Key is scoped to org, stream and token. */
  token: { id: string }
  stream: { name: string, retentionDays: number }
  /** What the workers do with each task; default 'ndjson'. */
  inputKind?: InputKind
  /**
   * How the decoded body becomes worker tasks: 'lines' (default: NDJSON framing, ~120 KiB tasks of
   * lines) or 'body' (the whole body as one task, for inputs whose body is one message).
   */
  framing?: 'lines' | 'body'
  /** Refuses a Content-Type the input does not read (400); default: the NDJSON types. */
  checkContentType?: (header: string | undefined) => void
  /** The request's summary: a subclass may keep more of each task's result (default IngestSummary). */
  summary?: () => IngestSummary
  /** Checks the parsed request before anything is stored: a SluiceError thrown here stores nothing. */
  beforeCommit?: (outcome: IngestOutcome) => void
  /**
   * The answer to send once the rows are committed. May throw a SluiceError instead (a 4xx is
   * kept for an Idempotency-Key replay like any answer). Called after the commit, or with
   * ingested 0 when nothing was stored.
   */
  answer: (outcome: IngestOutcome) => IngestAnswer
}

/** Events may be this far in the future (clock skew between shippers and us): two days, in ms. */
const maxFutureMs = 2 * 86_400_000

/**
 * Reads, parses and stores one request's body and sends the route's answer (or the first
 * attempt's, replayed for a repeated Idempotency-Key). Throws a SluiceError for the route's error
 * answer: the server's sendError words it.
 */
export async function runIngest (ctx: RequestContext, deps: IngestDeps, request: IngestRequest): Promise<void> {
  const { req, res } = ctx
  const { config } = deps
  const { org, stream } = request
  // The declared size is reserved at admission; a body over the wire limit gets its 413 below, so
  // it reserves no more than the limit. A refused request's body is drained by the server, not cut
  // off: a client still uploading would otherwise see a reset instead of the 429's Retry-After.
  const declared = Number(req.headers['content-length'])
  const reserve = Number.isSafeInteger(declared) && declared > 0 ? Math.min(declared, config.maxRawBytes) : 0
  const ticket = deps.admission.admit(org.id, org.name, reserve)
  try {
    for (const [name, value] of Object.entries(ticket.headers)) res.setHeader(name, value)
    const decoder = acceptBody(ctx, config, request.checkContentType ?? checkContentType)
    const key = req.headers['idempotency-key']
    if (typeof key !== 'string') {
      sendAnswer(ctx, await ingestBody(ctx, deps, request, ticket, decoder))
      return
    }
    IdempotencyCache.validateKey(key)
    const scope = `${org.id}/${stream.name}/${request.token.id}`
    // The request's fingerprint tells a retry from another request under the same key (6.7).
    const path = ctx.path
    const print = new BodyFingerprint(path)
    const { answer, replayed } = await deps.idempotency.once(scope, key, ctx.requestId,
      (commit) => ingestBody(ctx, deps, request, ticket, decoder, print, commit), {
        fingerprint: () => print.fingerprint(),
        check: async (first) => {
          decoder?.destroy()
          await checkRetryBody(new RequestBody(req), path, config.maxRawBytes, first)
        },
      })
    if (replayed) {
      res.setHeader('idempotent-replayed', 'true')
      decoder?.destroy()
      req.resume()
    }
    sendAnswer(ctx, answer)
  } finally {
    ticket.release()
  }
}

/** Content type (400), encoding (400) and declared size (413), before the body is read: its decoder. */
function acceptBody (ctx: RequestContext, config: Config['ingest'], check: (header: string | undefined) => void): Duplex | null {
  const { req } = ctx
  check(req.headers['content-type'])
  const decoder = createDecoder(req.headers['content-encoding'])
  const length = Number(req.headers['content-length'])
  if (length > config.maxRawBytes) {
    // Not read; the server drops it after the answer, or cuts the connection if it is very large
    // (lib/http/server.ts, lingerOnUnread).
    decoder?.destroy() // a zlib decoder holds its state from creation
    throw new SluiceError('payload_too_large', `The body is ${length} bytes; at most ${config.maxRawBytes} are accepted`)
  }
  return decoder
}

/** One attempt at the body, with a signal that aborts when the client leaves. */
async function ingestBody (
  ctx: RequestContext, deps: IngestDeps, request: IngestRequest, ticket: AdmissionTicket, decoder: Duplex | null,
  print?: BodyFingerprint, commit?: KeyedCommit,
): Promise<IngestAnswer> {
  const { res } = ctx
  const left = new AbortController()
  const onClose = (): void => {
    if (!res.writableFinished) left.abort(new ClientLeftError())
  }
  res.once('close', onClose)
  try {
    return await readAndStore(ctx, deps, request, ticket, decoder, left.signal, print, commit)
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
  ctx: RequestContext, deps: IngestDeps, request: IngestRequest, ticket: AdmissionTicket, decoder: Duplex | null,
  signal: AbortSignal, keyPrint?: BodyFingerprint, commit?: KeyedCommit,
): Promise<IngestAnswer> {
  const { config, metrics } = deps
  const { org, stream } = request
  try {
    await ticket.startReading(signal)
  } catch (err) {
    decoder?.destroy()
    throw err
  }

  const summary = request.summary?.() ?? new IngestSummary()
  const { stages: limits, decoded } = byteStages(config, ticket, decoder)
  const framing = frame(config, request.framing ?? 'lines', summary)
  const live = deps.tailHub.liveRequestFor(org.id, stream.name)
  const seqBase = randomSeqBase()
  const receivedAt = ctx.receivedAt
  const dispatch = new WorkerDispatch(deps.pool, summary, {
    orgId: org.id, stream: stream.name, receivedAt,
    minTs: receivedAt - stream.retentionDays * 86_400_000,
    maxTs: receivedAt + maxFutureMs,
    seqBase,
    live,
    ...(request.inputKind !== undefined && request.inputKind !== 'ndjson' ? { inputKind: request.inputKind } : {}),
  })
  // Without a key, the body's fingerprint may still tell a shipper's retry (dedupeRetries).
  const print = keyPrint ?? (config.dedupeRetries === 'on' ? new BodyFingerprint(ctx.path) : undefined)
  await pipeline([new RequestBody(ctx.req), ...(print ? [print] : []), ...limits, ...framing.stages, dispatch])

  for (const [code, n] of summary.failedByCode) metrics.linesFailed.inc({ code }, n)
  const outcome: IngestOutcome = {
    ingested: summary.ingested,
    failed: summary.failed,
    failures: summary.failures,
    failuresTruncated: summary.failed > summary.failures.length,
    bytes: decoded.bytes,
    sawInput: framing.sawInput(),
    requestId: ctx.requestId,
    summary,
  }
  request.beforeCommit?.(outcome)
  if (summary.ingested === 0) return request.answer(outcome)

  // The storage phase (a body key's lookup, a pending key's record, the writer) is held to the
  // writer's budget from here as a whole (README "Guarantees": within what clients wait). A
  // retry that first waited for an earlier attempt's pending record to be settled absent
  // (another node's: up to holdMs, docs/api.md section 6.7) gets the budget from the end of that
  // wait: counted from here, its rows would be refused 503 unsent, and the client's next retry
  // would only repeat it.
  const parsedAt = performance.now()
  const store = async (keyed: KeyedCommit | undefined): Promise<IngestAnswer> => {
    const heldSince = keyed?.afterSettling === true ? performance.now() : parsedAt
    // Computed before the commit: a keyed attempt records it as the answer its stored rows get.
    // An answer may be a client error given after the commit (Loki's 400 entries_rejected when
    // some entries failed): thrown once the rows are stored, as before.
    let answer: IngestAnswer | undefined
    let refusal: unknown
    try {
      answer = request.answer(outcome)
    } catch (err) {
      refusal = err
    }
    const recorded = answer ?? finalErrorAnswer(refusal, ctx.requestId)
    if (recorded === null) throw refusal // not an answer to keep (a bug): nothing stored
    await keyed?.beforeWrite({ orgId: org.id, stream: stream.name, seqBase, rows: summary.ingested, answer: recorded })
    ticket.releaseBytes() // from here the writer counts them
    // The identity lets the writer find the rows again after an insert whose outcome is unknown.
    await deps.writer.write(summary.rowChunks(), summary.ingested, {
      arrivedAt: ctx.startedAt, heldSince, signal, identity: { orgId: org.id, stream: stream.name, seqBase },
    })
    metrics.linesIngested.inc(undefined, summary.ingested)
    metrics.bytesIngested.inc(undefined, decoded.bytes)
    if (live) deps.tailHub.publish(org.id, stream.name, live, summary.live.filter((x) => x !== undefined))
    if (answer === undefined) throw refusal
    return answer
  }
  if (keyPrint !== undefined || print === undefined || summary.untimed > 0) return store(commit)
  // A shipper's retry (docs/api.md section 6.7, "Retries without a key"): the same bytes from the
  // same token to the same stream, every event with its own timestamp, are the same events sent
  // again. The body's fingerprint is the key; a replay stores nothing.
  const { answer, replayed } = await (deps.retries ?? deps.idempotency).once(`${org.id}/${stream.name}/${request.token.id}`,
    bodyKey(print.fingerprint()), ctx.requestId, store)
  if (replayed) {
    ctx.res.setHeader('idempotent-replayed', 'true')
    metrics.retriesRecognised.inc()
  }
  return answer
}

/** The key of a body's fingerprint: with a space, which no Idempotency-Key holds (printable ASCII without space). */
export function bodyKey (fingerprint: string): string {
  return `body ${fingerprint}`
}

/**
 * Min data rate, then the byte limits around the decoder. Decoded bytes count into the ticket as
 * they pass (accepted, not yet committed). Without a decoder the wire bytes are the decoded bytes:
 * one stage counts them against both limits.
 */
function byteStages (config: Config['ingest'], ticket: AdmissionTicket, decoder: Duplex | null) {
  const countBytes = (n: number): Promise<void> | undefined => ticket.addBytes(n)
  const rawIsLower = config.maxRawBytes <= config.maxDecodedBytes
  const decoded = decoder || !rawIsLower
    ? new ByteLimit(config.maxDecodedBytes, 'decoded', countBytes)
    : new ByteLimit(config.maxRawBytes, 'raw', countBytes)
  const stages: Duplex[] = []
  if (config.minBytesPerSecond > 0) {
    const rate = new MinDataRate({
      minBytesPerSecond: config.minBytesPerSecond, graceMs: config.minRateGraceMs, onBehind: () => { ticket.reportBehind() },
    })
    ticket.setRateProbe({ isBehind: () => rate.budget.isBehind, cut: () => { rate.cut() } })
    stages.push(rate)
  }
  if (decoder) stages.push(new ByteLimit(config.maxRawBytes, 'raw'), decoder)
  stages.push(decoded)
  return { stages, decoded }
}

/** Decoded bytes to worker tasks (LineBatch objects): NDJSON lines, or the whole body. */
function frame (config: Config['ingest'], framing: 'lines' | 'body', summary: IngestSummary): { stages: Transform[], sawInput: () => boolean } {
  if (framing === 'body') {
    const body = new BodyCollector()
    return { stages: [body], sawInput: () => body.sawInput }
  }
  const batcher = new LineBatcher({ taskBytes: config.taskBytes, onFailure: (f) => { summary.addFailure(f) } })
  const [framer, splitter, lastBatch] = createLineSplitter({ batcher, maxLineBytes: config.maxLineBytes })
  return { stages: [framer, splitter, lastBatch], sawInput: () => batcher.sawLine }
}

/** Sends an answer: JSON, bytes with their content type, or none (body null). */
function sendAnswer (ctx: RequestContext, answer: IngestAnswer): void {
  const { body } = answer
  if (body === null) { // no content (a Loki push's 204)
    sendEmpty(ctx, answer.status)
    return
  }
  if (!(body instanceof Uint8Array)) {
    sendJson(ctx, answer.status, body)
    return
  }
  const { res } = ctx
  if (res.headersSent) return
  res.writeHead(answer.status, { 'content-type': answer.contentType ?? 'application/octet-stream', 'content-length': body.byteLength })
  res.end(body)
}
