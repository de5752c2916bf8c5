// GET /api/streams/{stream}/stats?from&to&step&q&top: series, totals and top lists for a stream
// (shape in SPEC.md section 7; which table answers is planned in stats-plan.ts).
import type { Router } from '../http/router.ts'
import { sendJson } from '../http/reply.ts'
import { SluiceError } from '../errors.ts'
import type { Authenticator } from '../auth/authenticate.ts'
import type { Accounts } from '../accounts/accounts.ts'
import type { ClickHouse } from '../storage/clickhouse.ts'
import { findStream } from '../streams/streams-route.ts'
import { parseFilter } from './filter-parser.ts'
import { filterToSql } from './filter-sql.ts'
import { parseTimeRange } from './time-range.ts'
import { queryStats } from './stats-query.ts'
import { maxTopN, parseStep } from './stats-plan.ts'

function parseTop (raw: string | null): number | undefined {
  if (raw === null) return undefined
  const n = Number(raw)
  if (!/^\d+$/.test(raw) || n < 1 || n > maxTopN) {
    throw new SluiceError('invalid_query', `top must be an integer 1-${maxTopN}`, { details: { parameter: 'top' } })
  }
  return n
}

export function registerStatsRoute (router: Router, deps: { auth: Authenticator, accounts: Accounts, clickhouse: ClickHouse }): void {
  const { auth, accounts, clickhouse } = deps
  router.add('GET', '/api/streams/:stream/stats', async (ctx) => {
    const { org } = auth.requirePat(ctx.req, 'data:read')
    const stream = findStream(accounts, org.id, ctx.params.stream)
    const params = ctx.url.searchParams
    const range = parseTimeRange({ from: params.get('from'), to: params.get('to') }, Date.now())
    const step = params.get('step')
    const nodes = parseFilter(params.get('q') ?? '')
    const result = await queryStats(clickhouse, {
      orgId: org.id,
      stream: stream.name,
      from: range.from,
      to: range.to,
      stepMs: step === null ? undefined : parseStep(step),
      filter: nodes.length > 0 ? filterToSql(nodes) : undefined,
      topN: parseTop(params.get('top')),
    })
    sendJson(ctx, 200, result)
  })
}
