// Loki push (docs/api.md section 9.2): POST /loki/api/v1/push, the path Loki clients (Promtail,
// Grafana Alloy, pino-loki, winston-loki) append to their host setting, and
// /api/loki/api/v1/push under Sluice's API prefix. The target is the ingest token's stream
// (Bearer, or Basic with the token as the password, which is what Loki clients configure).
//
// Bodies: application/json (optionally gzip'd, or any encoding /api/ingest takes), or
// application/x-protobuf: a logproto.PushRequest in a snappy block, as Loki reads it; through the
// ingest pipeline with the whole body as one worker task. Answers as Loki does: 204 when every
// entry is stored; 400 entries_rejected (with the ingest summary) when entries failed, the
// others being stored, as Loki stores the valid entries of a push it answers 400; 400
// undecodable_body when the body is not a push request; 429 and 503 with Retry-After, which Loki
// clients retry.
import type { Router } from '../../http/router.ts'
import { SluiceError } from '../../errors.ts'
import type { IngestRouteDeps } from '../../ingest/ingest-route.ts'
import type { IngestAnswer, IngestOutcome } from '../../ingest/ingest-pipeline.ts'
import { describeFailures, refuseBodyError, registerWholeBodyRoutes } from '../input-route.ts'

export const lokiPushPaths = ['/loki/api/v1/push', '/api/loki/api/v1/push'] as const

export function registerLokiRoutes (router: Router, deps: IngestRouteDeps): void {
  registerWholeBodyRoutes(router, deps, {
    paths: lokiPushPaths,
    accepted: ['application/json', 'application/x-protobuf'],
    kinds: { proto: 'loki-proto', json: 'loki-json' },
    answer: lokiAnswer,
  })
}

function lokiAnswer (outcome: IngestOutcome): IngestAnswer {
  refuseBodyError(outcome, false)
  if (outcome.failed > 0) {
    throw new SluiceError('entries_rejected', describeFailures(outcome.failed, outcome.failures, 'entry', 'entries'), {
      details: {
        ingested: outcome.ingested,
        failed: outcome.failed,
        failures: outcome.failures,
        failures_truncated: outcome.failuresTruncated,
        bytes: outcome.bytes,
      },
    })
  }
  return { status: 204, body: null }
}
