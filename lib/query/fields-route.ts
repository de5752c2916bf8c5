// GET /api/streams/{stream}/fields?from&to&q&top: the fields present in the matching events, with
// counts and top values (fields-query.ts; docs/api.md section 7.6).
import type { Router } from '../http/router.ts'
import { sendSerialized, serializeFields } from '../http/serializers.ts'
import { readRequest } from './read-request.ts'
import type { ReadDeps } from './read-request.ts'
import { integerParam } from '../http/query-params.ts'
import { defaultFieldsTop, maxFieldsTop, maxSampleRows, minSampleRows, queryFields, sampleRows } from './fields-query.ts'
import { isScan } from './read-limits.ts'

export function registerFieldsRoute (router: Router, deps: ReadDeps): void {
  const { clickhouse, reads } = deps
  router.add('GET', '/api/streams/:stream/fields', async (ctx) => {
    const read = readRequest(ctx, deps)
    const result = await reads.run(ctx, read.orgId, clickhouse, async (ch) => await queryFields(ch, {
      orgId: read.orgId,
      stream: read.stream.name,
      from: read.range.from,
      to: read.range.to,
      where: read.where,
      prewhere: read.prewhere,
      scope: read.scope,
      hiddenBefore: read.hiddenBefore,
      top: integerParam(read.params, 'top', 1, maxFieldsTop, defaultFieldsTop),
      rollupsPurged: deps.accounts.store.rollupsPurged(read.orgId, read.stream.name),
      sampleRows: integerParam(read.params, 'sample', minSampleRows, maxSampleRows, sampleRows),
      maxGroupKeys: Number(reads.settings.max_rows_to_group_by),
    }), isScan(read.range.from, read.range.to, read.where !== undefined))
    sendSerialized(ctx, 200, serializeFields, result)
  })
}
