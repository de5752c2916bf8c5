// Backpressure on `_bulk` that Elasticsearch clients resend without loss (docs/api.md section
// 6.10, "Backpressure"). A `_bulk` that stored nothing because Sluice could not take it now is
// answered as Elasticsearch answers rejected documents: `200`, `errors: true`, every item
// `status: 429` with `es_rejected_execution_exception` (sluice_code: the reason), and the
// Retry-After and X-RateLimit-* headers the whole-request 429 or 503 would have carried.
//
// Why not the whole-request 429/503 of the other routes (measured, issue 21 and
// test/shippers/): rsyslog 8.2302's omelasticsearch drops a bulk answered with an HTTP error
// (95.6% lost under 429s) but hands per-item failures to its `retryfailures` ruleset; the Python
// helpers' streaming_bulk(max_retries) retries per-item 429s; Fluent Bit's es output retries the
// whole chunk on any item error; the JS helpers.bulk retries per-item 429s only.
//
// When it applies:
// - admission refused the request (rate_limited, too_many_concurrent_requests, server_busy)
//   before its body was read: the body is then read here to its end to list its items
//   (bulk-scan.ts: action lines parsed, documents skipped), at most `maxScans` at once server-wide;
// - storage failed past its retries (storage_unavailable) after the body was parsed: the items
//   that would have been stored become 429s, those that failed on their own keep their 400.
// Otherwise the error stands as it is: a 429 during the body (the server's reading bytes full),
// a bad content type or encoding behind a refusal, more than `maxScans` refused bodies being
// read, and 503 storage_outcome_unknown (an insert cut off mid-way may have stored the rows: a
// per-item 429 would invite a second copy).
import type { IncomingMessage } from 'node:http'
import type { Duplex } from 'node:stream'
import { SluiceError } from '../../errors.ts'
import type { ErrorCode } from '../../errors.ts'
import { createDecoder } from '../../ingest/decoder.ts'
import { rejectItems } from './bulk-answer.ts'
import type { BulkItem } from './bulk-answer.ts'
import { scanBulkItems } from './bulk-scan.ts'
import type { ScanLimits } from './bulk-scan.ts'

const admissionCodes: ReadonlySet<ErrorCode> = new Set(['rate_limited', 'too_many_concurrent_requests', 'server_busy'])

/** Refused bodies read at once to answer their items, server-wide: each is a main-thread scan, and a refusal should stay cheap. */
export const maxScans = 16

/** The per-item answer's headers: the refusal's own (X-RateLimit-*) and its Retry-After. */
export function rejectionHeaders (err: SluiceError): Record<string, string> {
  const headers: Record<string, string> = { ...err.headers }
  headers['retry-after'] = String(Math.max(1, Math.ceil(err.retryAfter ?? 1)))
  return headers
}

export class BulkRejections {
  #scans = 0

  /**
   * The items to answer 429 for `err`, or null when the error stands. `parsed`: the request's
   * items when its body was read and paired (null before).
   */
  async rejectedItems (
    err: unknown, req: IncomingMessage, parsed: BulkItem[] | null, limits: ScanLimits,
    checkContentType: (header: string | undefined) => void,
  ): Promise<BulkItem[] | null> {
    if (!(err instanceof SluiceError)) return null
    if (err.code === 'storage_unavailable') {
      return parsed === null ? null : rejectItems(parsed, err.code, err.message)
    }
    if (!admissionCodes.has(err.code) || req.readableDidRead || this.#scans >= maxScans) return null
    let decoder: Duplex | null
    try {
      checkContentType(req.headers['content-type'])
      decoder = createDecoder(req.headers['content-encoding'])
    } catch {
      return null // the refusal stands; the retry gets the 400
    }
    const declared = Number(req.headers['content-length'])
    if (declared > limits.maxRawBytes) {
      decoder?.destroy()
      return null
    }
    this.#scans++
    try {
      return rejectItems(await scanBulkItems(req, decoder, limits), err.code, err.message)
    } finally {
      this.#scans--
    }
  }
}
