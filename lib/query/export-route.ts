// GET /api/streams/{stream}/export?from&to&q: every matching event as NDJSON, oldest first, as a
// download (export-query.ts; docs/api.md section 7.8). The answer streams with backpressure: the
// next chunk is read from ClickHouse only once the client took the last, so memory stays flat
// however large the range. The read holds one of the org's read slots until it ends; a client
// that goes away aborts it. A failure after the first bytes cuts the response (the download is
// then incomplete, which a client sees as a connection closed before the end of the chunked body),
// and so does the stream's deletion while it ran, and a client that takes nothing for
// query.exportStallMs: it would otherwise hold the org's read slot and a ClickHouse query for as
// long as it keeps the connection (four such downloads locked their org out of every read:
// explore34d J2).
import { once } from 'node:events'
import type { ServerResponse } from 'node:http'
import type { Router } from '../http/router.ts'
import { readRequest } from './read-request.ts'
import type { ReadDeps } from './read-request.ts'
import { exportEvents } from './export-query.ts'
import { isScan } from './read-limits.ts'
import { isCurrentStream } from '../streams/streams.ts'

export function registerExportRoute (router: Router, deps: ReadDeps): void {
  const { clickhouse, reads } = deps
  const stallMs = deps.exportStallMs ?? 60_000
  router.add('GET', '/api/streams/:stream/export', async (ctx) => {
    const read = readRequest(ctx, deps)
    const { res } = ctx
    const name = `${read.stream.name}-${new Date(read.range.from).toISOString()}-${new Date(read.range.to).toISOString()}.ndjson`.replace(/:/g, '')
    await reads.run(ctx, read.orgId, clickhouse, async (ch) => {
      const chunks = exportEvents(ch, {
        orgId: read.orgId,
        stream: read.stream.name,
        from: read.range.from,
        to: read.range.to,
        where: read.where,
        prewhere: read.prewhere,
        hiddenBefore: read.hiddenBefore,
      })
      // The first chunk before the headers: a bad query or an unavailable ClickHouse is still a
      // plain error answer.
      const first = await chunks.next()
      res.writeHead(200, {
        'content-type': 'application/x-ndjson; charset=utf-8',
        'content-disposition': `attachment; filename="${name}"`,
        'cache-control': 'no-store',
      })
      if (ctx.req.method === 'HEAD') {
        res.end()
        await chunks.return(undefined)
        return
      }
      if (first.done !== true) {
        const onStall = (): void => { ctx.log.warn('export cut: its client took nothing for query.exportStallMs', { stall_ms: stallMs }) }
        if (!res.write(first.value)) await drained(res, stallMs, onStall)
        for await (const chunk of chunks) {
          if (res.destroyed) break
          if (!res.write(chunk)) await drained(res, stallMs, onStall)
        }
      }
      // A stream deleted (or deleted and made again) while it was exported: the statement may
      // have read part of it before the delete and nothing after (the embedded engine's
      // lightweight DELETE hid 40-60% of 100,000 events from a running export, explore26c).
      // Not every matching event was sent, so the download is cut, not completed.
      if (!isCurrentStream(deps.accounts.store, read.stream)) {
        ctx.log.warn('export cut: its stream was deleted while it ran', { stream: read.stream.name })
        res.destroy()
        return
      }
      res.end()
    }, isScan(read.range.from, read.range.to, true))
  })
}

/**
 * Resolves when `res` can take more, or rejects when it closed first; past `stallMs` without,
 * destroys it (its 'close' then stops the read: read-limits.ts) and rejects.
 */
export async function drained (res: ServerResponse, stallMs = Infinity, onStall?: () => void): Promise<void> {
  // The waits of a race that is over are removed (an export waits for thousands of drains; each
  // left listening added a 'close' and an 'error' listener to the response).
  const over = new AbortController()
  const stalled = Number.isFinite(stallMs) ? setTimeout(() => { onStall?.(); res.destroy() }, stallMs) : undefined
  try {
    await Promise.race([
      once(res, 'drain', { signal: over.signal }),
      once(res, 'close', { signal: over.signal }).then(() => { throw new Error('client closed the export') }),
    ])
  } finally {
    clearTimeout(stalled)
    over.abort()
  }
}
