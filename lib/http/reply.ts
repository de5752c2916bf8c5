// Writing responses. Every JSON answer goes through sendJson; every error through sendError, which
// gives the one error shape {"error", "message", "request_id"} (plus details such as an ingest
// summary) and the Retry-After header a 429 or 503 must carry.
import type { IncomingMessage, ServerResponse } from 'node:http'
import { SluiceError, toHttpError } from '../errors.ts'
import type { ErrorCode } from '../errors.ts'
import type { Logger } from '../logger.ts'

export interface RequestContext {
  req: IncomingMessage
  res: ServerResponse
  requestId: string
  /** The request target's path as sent (no query, not decoded; router.ts parseRequestTarget); '' when not origin-form. */
  path: string
  /** Path parameters from the route pattern. */
  params: Record<string, string>
  /** The query (`url.searchParams`); its pathname is always '/': the path is `path`. */
  url: URL
  log: Logger
  /** ms since the epoch when the request arrived. */
  receivedAt: number
  /** performance.now() when the request arrived: for durations, which the wall clock may skew. */
  startedAt: number
}

export function sendJson (ctx: RequestContext, status: number, body: unknown, headers?: Record<string, string | number>): void {
  const { res } = ctx
  if (res.headersSent) return
  const payload = JSON.stringify(body)
  if (headers) for (const name of Object.keys(headers)) res.setHeader(name, headers[name])
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(payload),
  })
  res.end(payload)
}

/** A JSON answer whose UTF-8 text is already written (the events API's pages, lib/events/event-json.ts). */
export function sendJsonBytes (ctx: RequestContext, status: number, body: Uint8Array): void {
  const { res } = ctx
  if (res.headersSent) return
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': body.byteLength,
  })
  res.end(body)
}

export function sendEmpty (ctx: RequestContext, status: number): void {
  if (ctx.res.headersSent) return
  ctx.res.writeHead(status)
  ctx.res.end()
}

/**
 * 503s that say the server is deliberately not serving (draining for shutdown, not ready yet):
 * expected during every restart, so they are no failure worth an error line each (an outage
 * logged 73 of them), hence debug: a load balancer polls /readyz every second. Real failures (storage_unavailable, internal_error) stay at error level.
 */
const expectedUnavailable: ReadonlySet<ErrorCode> = new Set<ErrorCode>(['shutting_down', 'not_ready'])
/**
 * A read past its limits (docs/api.md section 7.9) is the limits working, not a failure: one warn
 * line, without a stack, for 504 and 422 alike (a 504 logged as an error with its stack made a
 * dashboard's narrowing searches look like bugs: explore34d J6).
 */
const readLimits: ReadonlySet<ErrorCode> = new Set<ErrorCode>(['query_timeout', 'query_too_expensive'])

/** Answers with any error: our own as they are, anything else through toHttpError. */
export function sendError (ctx: RequestContext, err: unknown): void {
  const { res } = ctx
  const socket = res.socket ?? ctx.req.socket
  if (socket?.destroyed === true) {
    // The client closed the connection before its answer (it gave up, or was cut off): there is
    // no one to answer, and its own 'aborted' error is no failure of ours (the server's metrics
    // count the request as 499, "client closed request").
    if (err instanceof SluiceError && err.status >= 500) ctx.log.warn('request failed after the client left', { err, code: err.code })
    else ctx.log.debug('client closed the connection before the answer', { err })
    res.destroy()
    return
  }
  const e = toHttpError(err)
  if (expectedUnavailable.has(e.code)) ctx.log.debug('request refused: not serving now', { code: e.code, status: e.status, reason: e.message })
  else if (readLimits.has(e.code)) ctx.log.warn('read past its limits', { code: e.code, status: e.status, reason: e.message })
  else if (e.status >= 500) ctx.log.error('request failed', { err, code: e.code, status: e.status })
  if (res.headersSent) {
    res.destroy()
    return
  }
  if (e.headers) for (const name of Object.keys(e.headers)) res.setHeader(name, e.headers[name])
  if (e.retryAfter !== undefined) res.setHeader('retry-after', String(Math.max(1, Math.ceil(e.retryAfter))))
  if (e.status === 401) res.setHeader('www-authenticate', 'Bearer')
  // A request cut for being slow is not read on: node destroys the socket once the answer is out.
  if (e.code === 'request_timeout') res.setHeader('connection', 'close')
  sendJson(ctx, e.status, { error: e.code, message: e.message, ...e.details, request_id: ctx.requestId })
}

/** RFC 3339 UTC for a ms timestamp; null stays null. */
export function toRfc3339 (ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString()
}
