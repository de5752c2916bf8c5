// OTLP/HTTP logs (docs/api.md section 9.1): POST /v1/logs, the path every OpenTelemetry SDK and
// the Collector's otlphttp exporter append to their endpoint, and /api/otlp/v1/logs under Sluice's
// API prefix. The target is the ingest token's stream.
//
// Bodies: application/x-protobuf (ExportLogsServiceRequest) or application/json (OTLP/JSON),
// optionally Content-Encoding gzip (or any encoding /api/ingest takes). Answers, per the OTLP/HTTP
// specification: 200 with an ExportLogsServiceResponse in the request's encoding, holding
// partialSuccess {rejectedLogRecords, errorMessage} when records were rejected (every record
// rejected is still a 200 with all of them counted: a retry would be rejected the same way);
// 400 undecodable_body for a body that is not a request at all; 429 and 503 with Retry-After
// (admission, storage), which the exporters retry. Errors are Sluice's JSON error shape, not
// google.rpc.Status: exporters act on the status code.
import type { Router } from '../../http/router.ts'
import type { RequestContext } from '../../http/reply.ts'
import { sendJson } from '../../http/reply.ts'
import type { IngestRouteDeps } from '../../ingest/ingest-route.ts'
import { ingestBody } from '../../ingest/ingest-route.ts'
import { describeFailures, mediaType, tokenTarget, unsupportedType } from '../input-route.ts'
import { encodeOtlpResponse } from './otlp-proto.ts'

export const otlpLogsPaths = ['/v1/logs', '/api/otlp/v1/logs'] as const

export function registerOtlpRoutes (router: Router, deps: IngestRouteDeps): void {
  for (const path of otlpLogsPaths) router.add('POST', path, (ctx) => handleOtlpLogs(ctx, deps))
}

async function handleOtlpLogs (ctx: RequestContext, deps: IngestRouteDeps): Promise<void> {
  const { org, stream } = tokenTarget(ctx.req, deps)
  const type = mediaType(ctx.req.headers['content-type'])
  const proto = type === 'application/x-protobuf'
  const { summary } = await ingestBody(ctx, deps, org, stream, proto ? 'otlp-proto' : 'otlp-json', () => {
    if (!proto && type !== 'application/json') throw unsupportedType(type, 'application/x-protobuf or application/json (OTLP/HTTP)')
  })
  const message = summary.failed > 0 ? describeFailures(summary.failed, summary.failures, 'log record') : ''
  if (proto) {
    const body = encodeOtlpResponse(summary.failed, message)
    ctx.res.writeHead(200, { 'content-type': 'application/x-protobuf', 'content-length': body.length })
    ctx.res.end(body)
    return
  }
  // int64 as a decimal string, as OTLP/JSON writes it.
  sendJson(ctx, 200, summary.failed > 0 ? { partialSuccess: { rejectedLogRecords: String(summary.failed), errorMessage: message } } : {})
}
