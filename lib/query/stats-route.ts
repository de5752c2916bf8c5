// GET /api/streams/{stream}/stats?from&to&step&q&top&by&sample: series, totals and top lists for a
// stream, and with `by` the top values of any field (shape in docs/api.md section 7.4; which
// table answers is planned in stats-plan.ts).
import type { Router } from '../http/router.ts'
import { sendSerialized, serializeStats } from '../http/serializers.ts'
import { readRequest } from './read-request.ts'
import type { ReadDeps } from './read-request.ts'
import { integerParam } from '../http/query-params.ts'
import { queryStats } from './stats-query.ts'
import { defaultTopN, groupSampleRows, levelRollupMinRangeMs, maxGroupSampleRows, maxTopN, parseStep } from './stats-plan.ts'
import { isScan } from './read-limits.ts'
import { SluiceError } from '../errors.ts'
import { fieldPresentSql, fieldTextSql, quotedName, resolveField } from './field-ref.ts'

export function registerStatsRoute (router: Router, deps: ReadDeps): void {
  const { clickhouse, reads } = deps
  router.add('GET', '/api/streams/:stream/stats', async (ctx) => {
    const read = readRequest(ctx, deps)
    const step = read.params.get('step')
    const byName = read.params.get('by')
    // One name, bare or quoted as q writes it (`by="odd key"`).
    const by = byName === null ? undefined : resolveField(quotedName(byName), 'by')
    const isLevel = by !== undefined && by.kind === 'column' && by.name === 'level'
    // Raw rows: a q, or groups of a field no rollup holds (level's over a day or more is one).
    const rawRows = read.where !== undefined || (by !== undefined && !(isLevel && read.range.to - read.range.from >= levelRollupMinRangeMs))
    const result = await reads.run(ctx, read.orgId, clickhouse, async (ch) => await queryStats(ch, {
      orgId: read.orgId,
      stream: read.stream.name,
      from: read.range.from,
      to: read.range.to,
      stepMs: step === null ? undefined : parseStep(step),
      filter: read.where,
      prewhere: read.prewhere,
      topN: integerParam(read.params, 'top', 1, maxTopN, defaultTopN),
      hiddenBefore: read.hiddenBefore,
      rollupsPurged: deps.accounts.store.rollupsPurged(read.orgId, read.stream.name),
      groupSample: read.params.has('sample') ? integerParam(read.params, 'sample', 0, maxGroupSampleRows, groupSampleRows) : undefined,
      by: by === undefined ? undefined : { text: fieldTextSql(by, read.scope), present: fieldPresentSql(by, read.scope), isLevel, isAttribute: by.kind === 'attribute' },
      lists: listsParam(read.params),
    }), isScan(read.range.from, read.range.to, rawRows))
    sendSerialized(ctx, 200, serializeStats, result)
  })
}

/** `lists`: `all` (the default) or `none` (no top lists: docs/api.md section 7.4). */
function listsParam (params: URLSearchParams): boolean {
  const value = params.get('lists')
  if (value === null || value === 'all') return true
  if (value === 'none') return false
  throw new SluiceError('invalid_query', 'lists must be all or none', { details: { parameter: 'lists' } })
}
