// What every read of a stream's data starts with: a PAT with data:read, the stream in the
// caller's org, the time range and the parsed `q` compiled to SQL, plus bounded integer
// parameters. Shared by every read route (events, stats, fields, context, export) so all answer
// bad input with the same 400 invalid_query and run under the same limits (read-limits.ts).
import type { RequestContext } from '../http/reply.ts'
import type { Authenticator } from '../auth/authenticate.ts'
import type { Accounts } from '../accounts/accounts.ts'
import type { ClickHouse } from '../storage/clickhouse.ts'
import type { SqlFragment } from '../storage/sql.ts'
import type { StreamRecord } from '../storage/metadata-store.ts'
import { findStream } from '../streams/streams.ts'
import { textParam } from '../http/query-params.ts'
import { parseFilter } from './filter-parser.ts'
import type { FilterNode } from './filter-parser.ts'
import { filterToSql, valuesPrefilterSql } from './filter-sql.ts'
import type { FoldMode } from './filter-sql.ts'
import { parseTimeRange } from './time-range.ts'
import type { TimeRange } from './time-range.ts'
import { attrScopeFor } from './attr-sql.ts'
import type { AttrScope } from './attr-sql.ts'
import type { ReadLimits } from './read-limits.ts'

/** What the read routes share. */
export interface ReadDeps {
  auth: Authenticator
  accounts: Accounts
  clickhouse: ClickHouse
  reads: ReadLimits
  /** received_at bound of rows stored before migration 11 (lib/storage/legacy-attrs.ts); 0: none. */
  legacyAttrsBefore: number
  /** The events table has the skip indexes `q` pre-filters use (lib/storage/event-schema.ts; docs/schema-versions.md). */
  indexes?: boolean
  /** How the server folds text for word and phrase search (filter-sql.ts detectFold); default lowerUTF8. */
  fold?: FoldMode
  /** ms an export waits for its client to take more before it cuts the download (config query.exportStallMs); default 60 s. */
  exportStallMs?: number
}

export interface ReadRequest {
  orgId: string
  stream: StreamRecord
  range: TimeRange
  /** The parsed q; null when it is empty (every event). */
  filter: FilterNode | null
  /** The filter as a WHERE fragment, attributes read over `scope`; undefined for an empty q. */
  where: SqlFragment | undefined
  /**
   * A pre-filter for PREWHERE, with `where` then in WHERE (filter-sql.ts valuesPrefilterSql: on
   * servers without skip indexes); undefined when there is none.
   */
  prewhere: SqlFragment | undefined
  /** How attributes are read over this range (rows from before migration 11 or not). */
  scope: AttrScope
  /** Rows received at or before this time (ms) belong to a deleted stream of the same name. */
  hiddenBefore: number
  params: URLSearchParams
}

export function readRequest (ctx: RequestContext, deps: Pick<ReadDeps, 'auth' | 'accounts' | 'legacyAttrsBefore' | 'indexes' | 'fold'>): ReadRequest {
  const { org } = deps.auth.requirePat(ctx.req, 'data:read')
  const stream = findStream(deps.accounts.store, org.id, ctx.params.stream)
  const params = ctx.url.searchParams
  const range = parseTimeRange({ from: params.get('from'), to: params.get('to') }, Date.now())
  const filter = parseFilter(textParam(ctx.url, 'q') ?? '')
  const scope = attrScopeFor(deps.legacyAttrsBefore, range.from)
  return {
    orgId: org.id,
    stream,
    range,
    filter,
    where: filter === null ? undefined : filterToSql(filter, scope, { indexes: deps.indexes, fold: deps.fold }),
    prewhere: valuesPrefilterSql(filter, scope, { indexes: deps.indexes }) ?? undefined,
    scope,
    hiddenBefore: deps.accounts.store.hiddenBefore(org.id, stream.name),
    params,
  }
}
