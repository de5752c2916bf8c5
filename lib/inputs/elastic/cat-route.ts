// The `_cat` probes Elasticsearch shippers make (docs/api.md section 6.10), answered as
// Elasticsearch 8 does: plain text columns by default (a header line with `v`), an array of
// objects with string values with `format=json`. Why they matter: since 8.2606, rsyslog's
// omelasticsearch suspends on a 429 or 5xx and resumes only once `GET <server>/_cat/health`
// answers 2xx (every version calls it when it resumes after a failed connection); a 404 there
// stopped it for good (issue 21: 19,157 of 20,000 records lost under 429s).
//
// - `GET|HEAD _cat/health`: one green cluster of one node;
// - `GET|HEAD _cat/nodes`: that node (no address: client sniffing must stay off, as for _nodes).
// Each takes an ingest token, like every route under /api/elastic, and changes nothing. The
// numbers are Sluice's view, not measurements of a JVM: the node is always up when it answers.
import type { Router } from '../../http/router.ts'
import type { RequestContext } from '../../http/reply.ts'
import { sendJson } from '../../http/reply.ts'
import type { Authenticator } from '../../auth/authenticate.ts'
import { elasticHandler } from './elastic-request.ts'

type Row = Record<string, string>

/** One `_cat` API: its columns, in Elasticsearch's order, and its rows at a time (ms). */
interface CatTable {
  columns: readonly string[]
  rows: (now: number, clusterName: string) => Row[]
}

const health: CatTable = {
  columns: ['epoch', 'timestamp', 'cluster', 'status', 'node.total', 'node.data', 'shards', 'pri', 'relo', 'init',
    'unassign', 'unassign.pri', 'pending_tasks', 'max_task_wait_time', 'active_shards_percent'],
  rows: (now, cluster) => [{
    epoch: String(Math.floor(now / 1000)),
    timestamp: new Date(now).toISOString().slice(11, 19),
    cluster,
    status: 'green',
    'node.total': '1',
    'node.data': '1',
    shards: '1',
    pri: '1',
    relo: '0',
    init: '0',
    unassign: '0',
    'unassign.pri': '0',
    pending_tasks: '0',
    max_task_wait_time: '-',
    active_shards_percent: '100.0%',
  }],
}

const nodes: CatTable = {
  columns: ['ip', 'heap.percent', 'ram.percent', 'cpu', 'load_1m', 'load_5m', 'load_15m', 'node.role', 'master', 'name'],
  rows: (_now, cluster) => [{
    ip: '-', 'heap.percent': '0', 'ram.percent': '0', cpu: '0', load_1m: '0.00', load_5m: '0.00', load_15m: '0.00',
    'node.role': 'dim', master: '*', name: cluster,
  }],
}

export interface CatDeps {
  auth: Authenticator
  clusterName: string
  /** Clock (ms), for `epoch` and `timestamp`. */
  now?: () => number
}

export function registerElasticCatRoutes (router: Router, deps: CatDeps): void {
  const now = deps.now ?? Date.now
  for (const [name, table] of [['health', health], ['nodes', nodes]] as const) {
    router.add('GET', `/api/elastic/_cat/${name}`, elasticHandler((ctx) => {
      deps.auth.requireIngestToken(ctx.req)
      sendCat(ctx, table, table.rows(now(), deps.clusterName))
    }))
  }
}

/** `format=json`: the rows as JSON; otherwise text columns padded to their widest cell, `v` adds the header. */
function sendCat (ctx: RequestContext, table: CatTable, rows: Row[]): void {
  const query = ctx.url.searchParams
  if (query.get('format') === 'json') {
    sendJson(ctx, 200, rows)
    return
  }
  const verbose = query.has('v') && query.get('v') !== 'false'
  const lines = rows.map((row) => table.columns.map((c) => row[c]))
  if (verbose) lines.unshift([...table.columns])
  const widths = table.columns.map((_c, i) => Math.max(...lines.map((cells) => cells[i].length)))
  const text = lines.map((cells) => cells.map((cell, i) => cell.padEnd(widths[i])).join(' ').trimEnd() + '\n').join('')
  ctx.res.writeHead(200, { 'content-type': 'text/plain; charset=UTF-8', 'content-length': Buffer.byteLength(text) })
  ctx.res.end(text) // node:http sends no body to a HEAD
}
