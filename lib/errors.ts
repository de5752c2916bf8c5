// The error catalogue: every API error code Sluice answers with, its HTTP status and its default
// message. Routes throw SluiceError; the server turns any error into the JSON body
// {"error": code, "message": text, "request_id": id} through toHttpError(). The README's error
// table is checked against this list by test/errors.test.ts.

export const errorCatalogue = {
  bad_request: { status: 400, message: 'The request is malformed' },
  unsupported_content_type: { status: 400, message: 'Send Content-Type: application/x-ndjson' },
  unsupported_content_encoding: { status: 400, message: 'Content-Encoding must be gzip, deflate, br, zstd or identity' },
  malformed_body: { status: 400, message: 'The compressed body is corrupt or truncated' },
  empty_body: { status: 400, message: 'The request body holds no lines' },
  undecodable_body: { status: 400, message: 'The body is not a message of the format this route takes' },
  entries_rejected: { status: 400, message: 'Some entries of the push were rejected; the others are stored' },
  wrapped_body: { status: 400, message: 'The body wraps many records in one object (an export or push format); send it to the endpoint that reads it' },
  invalid_query: { status: 400, message: 'The query is not valid' },
  unauthorized: { status: 401, message: 'Send Authorization: Bearer <token>' },
  invalid_token: { status: 403, message: 'The token is unknown, expired or revoked' },
  wrong_token_kind: { status: 403, message: 'This token kind cannot be used on this route' },
  insufficient_ability: { status: 403, message: 'The token lacks the ability this route needs' },
  forbidden_stream: { status: 403, message: 'This ingest token writes to another stream' },
  not_found: { status: 404, message: 'Not found' },
  method_not_allowed: { status: 405, message: 'Method not allowed on this path' },
  conflict: { status: 409, message: 'The resource exists already' },
  payload_too_large: { status: 413, message: 'The request body is over the size limit' },
  validation_failed: { status: 422, message: 'The request body failed validation' },
  all_lines_failed: { status: 422, message: 'Every line of the request failed' },
  idempotency_key_reused: { status: 422, message: 'This Idempotency-Key was used for another request' },
  query_too_expensive: { status: 422, message: 'The read needs more memory or more groups than a read may use; narrow the range or the query' },
  rate_limited: { status: 429, message: 'Request rate limit exceeded' },
  too_many_concurrent_requests: { status: 429, message: 'Too many concurrent requests for this organization' },
  server_busy: { status: 429, message: 'The server queue is full' },
  too_many_tails: { status: 429, message: 'Too many live tails for this organization' },
  too_many_reads: { status: 429, message: 'Too many reads running for this organization' },
  internal_error: { status: 500, message: 'Internal server error' },
  storage_unavailable: { status: 503, message: 'Storage is unavailable; retry later' },
  storage_outcome_unknown: { status: 503, message: 'Storage did not answer in time: the rows may or may not be stored; a retry with the same Idempotency-Key (or the same bytes, every event timestamped) stores them once, another may store them twice' },
  not_ready: { status: 503, message: 'Not ready' },
  shutting_down: { status: 503, message: 'The server is shutting down' },
  request_timeout: { status: 408, message: 'The request took too long to arrive' },
  query_timeout: { status: 504, message: 'The read ran out of time; narrow the range or the query' },
  expectation_failed: { status: 417, message: 'Only Expect: 100-continue is supported' },
  headers_too_large: { status: 431, message: 'The request line and headers are over 16 KiB' },
} as const satisfies Record<string, { status: number; message: string }>

export type ErrorCode = keyof typeof errorCatalogue

export const errorCodes = Object.keys(errorCatalogue) as ErrorCode[]

export interface SluiceErrorOptions {
  /** Seconds, sent as Retry-After; required in practice on every 429 and 503. */
  retryAfter?: number
  cause?: unknown
  /** Extra fields merged into the JSON error body (for example an ingest summary on 422). */
  details?: Record<string, unknown>
  headers?: Record<string, string>
}

export class SluiceError extends Error {
  readonly code: ErrorCode
  readonly status: number
  readonly retryAfter: number | undefined
  readonly details: Record<string, unknown> | undefined
  readonly headers: Record<string, string> | undefined

  constructor (code: ErrorCode, message?: string, options: SluiceErrorOptions = {}) {
    super(message ?? errorCatalogue[code].message, { cause: options.cause })
    this.name = 'SluiceError'
    this.code = code
    this.status = errorCatalogue[code].status
    this.retryAfter = options.retryAfter
    this.details = options.details
    this.headers = options.headers
  }
}

export function isSluiceError (err: unknown): err is SluiceError {
  return err instanceof SluiceError
}

/** Seconds a client waits after 503 storage_unavailable before retrying. */
export const storageRetryAfterS = 5

/**
 * ClickHouse's codes for a statement it cannot run whatever its state (THERE_IS_NO_COLUMN,
 * NOT_FOUND_COLUMN_IN_BLOCK, BAD_ARGUMENTS, NUMBER_OF_ARGUMENTS_DOESNT_MATCH,
 * ILLEGAL_TYPE_OF_ARGUMENT, UNKNOWN_FUNCTION, NOT_IMPLEMENTED, TYPE_MISMATCH, SYNTAX_ERROR,
 * UNKNOWN_SETTING, ILLEGAL_AGGREGATION, NOT_AN_AGGREGATE, AMBIGUOUS_COLUMN_NAME, NO_COMMON_TYPE):
 * answered 500, not 503, so that a client does not retry a bug forever. An unknown table or
 * column (60, 16, 47) stays 503: in cluster mode a host can lag a schema change for a while.
 */
const wrongStatementCodes: ReadonlySet<number> = new Set([8, 10, 36, 42, 43, 46, 48, 53, 62, 115, 184, 215, 352, 386])

/**
 * Translates any error that reaches the HTTP layer into a SluiceError: our own pass through,
 * zlib's corrupt-data errors become malformed_body, ClickHouse and socket failures become
 * storage_unavailable (but a statement ClickHouse cannot run: internal_error), anything else
 * internal_error (its cause kept for the log).
 */
export function toHttpError (err: unknown): SluiceError {
  if (err instanceof SluiceError) return err
  const code = (err as { code?: unknown } | null)?.code
  if (typeof code === 'string') {
    // zlib (Z_*), brotli (ERR__ERROR_* from its error names) and zstd (ZSTD_error_*) corrupt data.
    if (code.startsWith('Z_') || code.startsWith('ERR__ERROR_') || code.startsWith('ZSTD_error_') ||
        code === 'ERR_BROTLI_DECOMPRESSION_FAILED' || code === 'ERR_ZSTD_DECOMPRESSION_FAILED' ||
        code === 'ERR_TRAILING_JUNK_AFTER_STREAM_END' || code === 'ERR_BUFFER_TOO_LARGE') {
      return new SluiceError('malformed_body', undefined, { cause: err })
    }
    if (code === 'ECONNREFUSED' || code === 'ECONNRESET' || code === 'ETIMEDOUT' || code === 'EPIPE' ||
        code === 'UND_ERR_SOCKET' || code === 'UND_ERR_CONNECT_TIMEOUT') {
      return new SluiceError('storage_unavailable', undefined, { cause: err, retryAfter: storageRetryAfterS })
    }
  }
  if ((err as { name?: unknown } | null)?.name === 'ClickHouseError') {
    // ClickHouse refused the statement itself: a bug of Sluice's that no retry gets past.
    if (wrongStatementCodes.has((err as { chCode?: unknown }).chCode as number)) return new SluiceError('internal_error', undefined, { cause: err })
    return new SluiceError('storage_unavailable', undefined, { cause: err, retryAfter: storageRetryAfterS })
  }
  return new SluiceError('internal_error', undefined, { cause: err })
}
