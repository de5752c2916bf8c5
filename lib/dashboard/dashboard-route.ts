// The dashboard: GET / answers index.html and GET /assets/<file> the other files of public/ plus
// uPlot from node_modules (as uplot.js and uplot.css). No authentication: the page itself asks for
// a PAT and sends it on its API calls (docs/api.md sections 4 and 5).
//
// Contract: every file is read once, when the routes are registered, and served from memory; a
// name that is not in that table is a 404, so no request path ever reaches the file system (a
// `..` in the name cannot escape). Each file carries a strong ETag (a content hash) and
// `Cache-Control: no-cache`: browsers revalidate on every load and get 304 when nothing changed,
// so an upgraded Sluice never runs a stale script against a new page. A gzip copy is kept when it
// is smaller and sent to clients that accept it. Every answer carries a Content-Security-Policy
// that allows scripts, styles and connections to this origin only (no inline code, no CDN).
import { readdirSync, readFileSync } from 'node:fs'
import { createHash } from 'node:crypto'
import { createRequire } from 'node:module'
import { dirname, extname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { gzipSync } from 'node:zlib'
import type { Router } from '../http/router.ts'
import type { RequestContext } from '../http/reply.ts'
import { SluiceError } from '../errors.ts'

export interface DashboardOptions {
  /** Folder of index.html and the page's assets; default: public/ next to this file. */
  publicDir?: string
}

interface Asset {
  body: Buffer
  /** gzip of body, when smaller. */
  gzipped: Buffer | null
  type: string
  etag: string
}

const contentTypes: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.json': 'application/json; charset=utf-8',
}

/**
 * Only this origin: scripts, styles, fetch/SSE. uPlot sizes its canvas through CSSOM
 * (element.style), which style-src does not restrict; img-src allows data: for canvas exports.
 */
export const contentSecurityPolicy = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "manifest-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ')

const securityHeaders: Record<string, string> = {
  'content-security-policy': contentSecurityPolicy,
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
}

function toAsset (body: Buffer, name: string): Asset {
  const type = contentTypes[extname(name)] ?? 'application/octet-stream'
  const hash = createHash('sha256').update(body).digest('base64url').slice(0, 22)
  const gz = type.startsWith('image/png') ? null : gzipSync(body, { level: 9 })
  return { body, gzipped: gz && gz.length < body.length ? gz : null, type, etag: `"${hash}"` }
}

/** Reads public/ (flat, no subfolders) and uPlot's dist files into memory. */
export function loadDashboardAssets (publicDir: string): Map<string, Asset> {
  const assets = new Map<string, Asset>()
  for (const entry of readdirSync(publicDir, { withFileTypes: true })) {
    if (!entry.isFile() || entry.name.startsWith('.')) continue
    assets.set(entry.name, toAsset(readFileSync(join(publicDir, entry.name)), entry.name))
  }
  const uplotDir = join(dirname(createRequire(import.meta.url).resolve('uplot/package.json')), 'dist')
  assets.set('uplot.js', toAsset(readFileSync(join(uplotDir, 'uPlot.iife.min.js')), 'uplot.js'))
  assets.set('uplot.css', toAsset(readFileSync(join(uplotDir, 'uPlot.min.css')), 'uplot.css'))
  return assets
}

/** Whether Accept-Encoding lists gzip (or *) with a weight above zero. */
function acceptsGzip (ctx: RequestContext): boolean {
  const header = ctx.req.headers['accept-encoding']
  if (typeof header !== 'string') return false
  return header.split(',').some((part) => {
    const [coding, ...params] = part.trim().toLowerCase().split(';')
    if (coding.trim() !== 'gzip' && coding.trim() !== '*') return false
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='))
    return q === undefined || Number(q.slice(2)) > 0
  })
}

function isFresh (ctx: RequestContext, etag: string): boolean {
  const header = ctx.req.headers['if-none-match']
  if (typeof header !== 'string') return false
  return header.split(',').some((tag) => {
    const t = tag.trim()
    return t === '*' || t === etag || t === 'W/' + etag
  })
}

function sendAsset (ctx: RequestContext, asset: Asset): void {
  const { res } = ctx
  for (const name of Object.keys(securityHeaders)) res.setHeader(name, securityHeaders[name])
  res.setHeader('cache-control', 'no-cache')
  res.setHeader('etag', asset.etag)
  res.setHeader('vary', 'Accept-Encoding')
  if (isFresh(ctx, asset.etag)) {
    res.writeHead(304)
    res.end()
    return
  }
  const gzip = asset.gzipped !== null && acceptsGzip(ctx)
  const body = gzip ? asset.gzipped! : asset.body
  res.writeHead(200, {
    'content-type': asset.type,
    'content-length': body.length,
    ...(gzip ? { 'content-encoding': 'gzip' } : {}),
  })
  res.end(ctx.req.method === 'HEAD' ? undefined : body)
}

export function registerDashboardRoutes (router: Router, options: DashboardOptions = {}): void {
  const publicDir = options.publicDir ?? join(dirname(fileURLToPath(import.meta.url)), 'public')
  const assets = loadDashboardAssets(publicDir)
  const index = assets.get('index.html')
  if (!index) throw new Error(`dashboard: ${join(publicDir, 'index.html')} is missing`)
  assets.delete('index.html')

  router.add('GET', '/', (ctx) => { sendAsset(ctx, index) })
  router.add('GET', '/assets/:file', (ctx) => {
    const asset = assets.get(ctx.params.file)
    if (!asset) throw new SluiceError('not_found', 'No such dashboard asset')
    sendAsset(ctx, asset)
  })
}
