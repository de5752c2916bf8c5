// Loki push (docs/api.md section 9.2): POST /loki/api/v1/push, the path Loki clients (Promtail,
// Grafana Alloy, pino-loki, winston-loki) append to their host setting, and
// /api/loki/api/v1/push under Sluice's API prefix. The target is the ingest token's stream
// (Bearer, or Basic with the token as the password, which is what Loki clients configure).
//
// Bodies: application/json (optionally gzip'd, or any encoding /api/ingest takes), or
// application/x-protobuf: a logproto.PushRequest in a snappy block, as Loki reads it. Answers as
// Loki does: 204 when every entry is stored; 400 entries_rejected (with the ingest summary) when
// some failed, the others being stored, as Loki stores the valid entries of a push it answers
// 400; 400 undecodable_body when the body is not a push request; 429 and 503 with Retry-After,
// which Loki clients retry.
import type { Router } from '../../http/router.ts'
import type { RequestContext } from '../../http/reply.ts'
import { sendEmpty } from '../../http/reply.ts'
import { SluiceError } from '../../errors.ts'
import type { IngestRouteDeps } from '../../ingest/ingest-route.ts'
import { ingestBody } from '../../ingest/ingest-route.ts'
import { describeFailures, mediaType, tokenTarget, unsupportedType } from '../input-route.ts'

export const lokiPushPaths = ['/loki/api/v1/push', '/api/loki/api/v1/push'] as const

export function registerLokiRoutes (router: Router, deps: IngestRouteDeps): void {
  for (const path of lokiPushPaths) router.add('POST', path, (ctx) => handleLokiPush(ctx, deps))
}

async function handleLokiPush (ctx: RequestContext, deps: IngestRouteDeps): Promise<void> {
  const { org, stream } = tokenTarget(ctx.req, deps)
  const type = mediaType(ctx.req.headers['content-type'])
  const proto = type === 'application/x-protobuf'
  const { summary, bytes } = await ingestBody(ctx, deps, org, stream, proto ? 'loki-proto' : 'loki-json', () => {
    if (!proto && type !== 'application/json') throw unsupportedType(type, 'application/json or application/x-protobuf (snappy-compressed), as Loki clients do')
  })
  if (summary.failed > 0) {
    throw new SluiceError('entries_rejected', describeFailures(summary.failed, summary.failures, 'entry'), { details: summary.toJson(bytes, ctx.requestId) })
  }
  sendEmpty(ctx, 204)
}
