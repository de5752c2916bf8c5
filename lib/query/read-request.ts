// What every read of a stream's data starts with: a PAT with data:read, the stream in the
// caller's org, the time range and the parsed `q`, plus bounded integer parameters. Shared by the
// events and stats routes so both answer bad input with the same 400 invalid_query.
import type { RequestContext } from '../http/reply.ts'
import type { Authenticator } from '../auth/authenticate.ts'
import type { Accounts } from '../accounts/accounts.ts'
import type { StreamRecord } from '../storage/metadata-store.ts'
import { findStream } from '../streams/streams.ts'
import { parseFilter } from './filter-parser.ts'
import type { FilterNode } from './filter-parser.ts'
import { parseTimeRange } from './time-range.ts'
import type { TimeRange } from './time-range.ts'

export interface ReadRequest {
  orgId: string
  stream: StreamRecord
  range: TimeRange
  /** The parsed q; null when it is empty (every event). */
  filter: FilterNode | null
  params: URLSearchParams
}

export function readRequest (ctx: RequestContext, auth: Authenticator, accounts: Accounts): ReadRequest {
  const { org } = auth.requirePat(ctx.req, 'data:read')
  const stream = findStream(accounts.store, org.id, ctx.params.stream)
  const params = ctx.url.searchParams
  return {
    orgId: org.id,
    stream,
    range: parseTimeRange({ from: params.get('from'), to: params.get('to') }, Date.now()),
    filter: parseFilter(params.get('q') ?? ''),
    params,
  }
}
