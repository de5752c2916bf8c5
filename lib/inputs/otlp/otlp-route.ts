// OTLP/HTTP logs (docs/api.md section 9.1): POST /v1/logs, the path every OpenTelemetry SDK and
// the Collector's otlphttp exporter append to their endpoint, and /api/otlp/v1/logs under Sluice's
// API prefix. The target is the ingest token's stream.
//
// Bodies: application/x-protobuf (ExportLogsServiceRequest) or application/json (OTLP/JSON),
// optionally Content-Encoding gzip (or any encoding /api/ingest takes), through the ingest
// pipeline with the whole body as one worker task. Answers, per the OTLP/HTTP specification:
// 200 with an ExportLogsServiceResponse in the request's encoding, holding partialSuccess
// {rejectedLogRecords, errorMessage} when records were rejected (every record rejected is still a
// 200 with all of them counted: a retry would be rejected the same way); 400 undecodable_body for
// a body that is not a request at all; 429 and 503 with Retry-After (admission, storage), which
// the exporters retry. Errors are Sluice's JSON error shape, not google.rpc.Status: exporters act
// on the status code.
import type { Router } from '../../http/router.ts'
import type { IngestRouteDeps } from '../../ingest/ingest-route.ts'
import type { IngestAnswer, IngestOutcome } from '../../ingest/ingest-pipeline.ts'
import { describeFailures, refuseBodyError, registerWholeBodyRoutes } from '../input-route.ts'
import { encodeOtlpResponse } from './otlp-proto.ts'

export const otlpLogsPaths = ['/v1/logs', '/api/otlp/v1/logs'] as const

export function registerOtlpRoutes (router: Router, deps: IngestRouteDeps): void {
  registerWholeBodyRoutes(router, deps, {
    paths: otlpLogsPaths,
    accepted: ['application/x-protobuf', 'application/json'],
    kinds: { proto: 'otlp-proto', json: 'otlp-json' },
    answer: otlpAnswer,
  })
}

function otlpAnswer (outcome: IngestOutcome, proto: boolean): IngestAnswer {
  refuseBodyError(outcome, proto)
  const message = outcome.failed > 0 ? describeFailures(outcome.failed, outcome.failures, 'log record') : ''
  if (proto) return { status: 200, body: encodeOtlpResponse(outcome.failed, message), contentType: 'application/x-protobuf' }
  // int64 as a decimal string, as OTLP/JSON writes it.
  return { status: 200, body: outcome.failed > 0 ? { partialSuccess: { rejectedLogRecords: String(outcome.failed), errorMessage: message } } : {} }
}
