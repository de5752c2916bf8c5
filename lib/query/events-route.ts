// GET /api/streams/{stream}/events: a stream's events over a time range, filtered by `q`, newest
// first, in pages (the query and its cursor: events-query.ts).
import type { Router } from '../http/router.ts'
import { sendJsonBytes } from '../http/reply.ts'
import type { Authenticator } from '../auth/authenticate.ts'
import type { Accounts } from '../accounts/accounts.ts'
import type { ClickHouse } from '../storage/clickhouse.ts'
import { filterToSql } from './filter-sql.ts'
import { readRequest } from './read-request.ts'
import { integerParam } from '../http/query-params.ts'
import { defaultEventsLimit, maxEventsLimit, queryEventsJson } from './events-query.ts'

export function registerEventsRoute (router: Router, deps: { auth: Authenticator, accounts: Accounts, clickhouse: ClickHouse }): void {
  const { auth, accounts, clickhouse } = deps

  router.add('GET', '/api/streams/:stream/events', async (ctx) => {
    const { orgId, stream, range, filter, params } = readRequest(ctx, auth, accounts)
    const limit = integerParam(params, 'limit', 1, maxEventsLimit, defaultEventsLimit)
    const page = await queryEventsJson(clickhouse, {
      orgId,
      stream: stream.name,
      from: range.from,
      to: range.to,
      filter: filter === null ? undefined : filterToSql(filter),
      limit,
      cursor: params.get('cursor'),
      hiddenBefore: accounts.store.hiddenBefore(orgId, stream.name),
    })
    sendJsonBytes(ctx, 200, page)
  })
}
