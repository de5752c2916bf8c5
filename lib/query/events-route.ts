// GET /api/streams/{stream}/events: a stream's events over a time range, filtered by `q`, newest
// first, in pages (the query and its cursor: events-query.ts); and
// GET /api/streams/{stream}/events/{id}/context: the events around one (context-query.ts).
import type { Router } from '../http/router.ts'
import { sendJsonBytes } from '../http/reply.ts'
import { SluiceError } from '../errors.ts'
import { readRequest } from './read-request.ts'
import type { ReadDeps } from './read-request.ts'
import { integerParam } from '../http/query-params.ts'
import { defaultEventsLimit, maxEventsLimit, queryEventsJson } from './events-query.ts'
import { defaultContextLines, defaultContextSame, maxContextLines, queryContextJson } from './context-query.ts'
import { fieldNamesParam, resolveField } from './field-ref.ts'
import { isScan } from './read-limits.ts'

/** Fields `same=` may list at most. */
const maxSameFields = 8

export function registerEventsRoute (router: Router, deps: ReadDeps): void {
  const { clickhouse, reads } = deps

  router.add('GET', '/api/streams/:stream/events', async (ctx) => {
    const read = readRequest(ctx, deps)
    const limit = integerParam(read.params, 'limit', 1, maxEventsLimit, defaultEventsLimit)
    const page = await reads.run(ctx, read.orgId, clickhouse, async (ch) => await queryEventsJson(ch, {
      orgId: read.orgId,
      stream: read.stream.name,
      from: read.range.from,
      to: read.range.to,
      filter: read.where,
      prewhere: read.prewhere,
      limit,
      cursor: read.params.get('cursor'),
      hiddenBefore: read.hiddenBefore,
      // Servers with skip indexes also read in key order (19.14+): one statement finds the page.
      windowed: !deps.indexes,
    }), isScan(read.range.from, read.range.to, read.where !== undefined))
    sendJsonBytes(ctx, 200, page)
  })

  router.add('GET', '/api/streams/:stream/events/:id/context', async (ctx) => {
    const read = readRequest(ctx, deps)
    const sameText = read.params.get('same')
    const names = sameText === null ? defaultContextSame : fieldNamesParam(sameText)
    if (names.length > maxSameFields) {
      throw new SluiceError('invalid_query', `same lists at most ${maxSameFields} fields`, { details: { parameter: 'same' } })
    }
    const body = await reads.run(ctx, read.orgId, clickhouse, async (ch) => await queryContextJson(ch, {
      orgId: read.orgId,
      stream: read.stream.name,
      id: ctx.params.id,
      before: integerParam(read.params, 'before', 0, maxContextLines, defaultContextLines),
      after: integerParam(read.params, 'after', 0, maxContextLines, defaultContextLines),
      same: names.map((name) => resolveField(name, 'same')),
      scope: read.scope,
      hiddenBefore: read.hiddenBefore,
    }))
    sendJsonBytes(ctx, 200, body)
  })
}
