// GET /api/streams/{stream}/stats?from&to&step&q&top: series, totals and top lists for a stream
// (shape in docs/api.md section 7.4; which table answers is planned in stats-plan.ts).
import type { Router } from '../http/router.ts'
import { sendJson } from '../http/reply.ts'
import type { Authenticator } from '../auth/authenticate.ts'
import type { Accounts } from '../accounts/accounts.ts'
import type { ClickHouse } from '../storage/clickhouse.ts'
import { filterToSql } from './filter-sql.ts'
import { readRequest } from './read-request.ts'
import { integerParam } from '../http/query-params.ts'
import { queryStats } from './stats-query.ts'
import { defaultTopN, maxTopN, parseStep } from './stats-plan.ts'

export function registerStatsRoute (router: Router, deps: { auth: Authenticator, accounts: Accounts, clickhouse: ClickHouse }): void {
  const { auth, accounts, clickhouse } = deps
  router.add('GET', '/api/streams/:stream/stats', async (ctx) => {
    const { orgId, stream, range, filter, params } = readRequest(ctx, auth, accounts)
    const step = params.get('step')
    const result = await queryStats(clickhouse, {
      orgId,
      stream: stream.name,
      from: range.from,
      to: range.to,
      stepMs: step === null ? undefined : parseStep(step),
      filter: filter === null ? undefined : filterToSql(filter),
      topN: integerParam(params, 'top', 1, maxTopN, defaultTopN),
      hiddenBefore: accounts.store.hiddenBefore(orgId, stream.name),
      rollupsPurged: accounts.store.rollupsPurged(orgId, stream.name),
    })
    sendJson(ctx, 200, result)
  })
}
