// The dashboard's static files: served from memory with the right types and security headers,
// revalidated by ETag, gzip on request, 404 for anything else, and no way out of the table (path
// traversal). Also checks the page itself keeps to the CSP: no inline code, only /assets/ URLs.
// No ClickHouse needed: a bare router and HTTP server.
import t from 'tap'
import { request as httpRequest } from 'node:http'
import type { IncomingHttpHeaders } from 'node:http'
import { readFileSync, readdirSync } from 'node:fs'
import { gunzipSync } from 'node:zlib'
import { fileURLToPath } from 'node:url'
import { Router } from '../../lib/http/router.ts'
import { createHttpServer } from '../../lib/http/server.ts'
import { loadConfig } from '../../lib/config.ts'
import { createLogger } from '../../lib/logger.ts'
import { contentSecurityPolicy, registerDashboardRoutes } from '../../lib/dashboard/dashboard-route.ts'

const publicDir = fileURLToPath(new URL('../../lib/dashboard/public/', import.meta.url))
let port = 0

interface Answer { status: number, headers: IncomingHttpHeaders, body: Buffer }

/** A request with the path sent exactly as given (URL parsing would resolve `..`). */
function get (path: string, headers: Record<string, string> = {}, method = 'GET'): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, method, headers }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }))
      res.on('error', reject)
    })
    req.on('error', reject)
    req.end()
  })
}

t.before(async () => {
  const router = new Router()
  registerDashboardRoutes(router)
  const http = createHttpServer({ config: loadConfig({ env: {} }).server, router, log: createLogger({ level: 'silent' }) })
  port = (await http.listen(0, '127.0.0.1')).port
  t.teardown(() => http.close())
})

t.test('GET / is the page, with a strict CSP and nosniff', async (t) => {
  const r = await get('/')
  t.equal(r.status, 200)
  t.equal(r.headers['content-type'], 'text/html; charset=utf-8')
  t.equal(r.headers['content-security-policy'], contentSecurityPolicy)
  t.match(r.headers['content-security-policy'], /default-src 'none'/)
  t.match(r.headers['content-security-policy'], /script-src 'self'(;|$)/)
  t.notMatch(r.headers['content-security-policy'], /unsafe-inline|unsafe-eval|\*|https?:/)
  t.equal(r.headers['x-content-type-options'], 'nosniff')
  t.equal(r.headers['x-frame-options'], 'DENY')
  t.equal(r.headers['cache-control'], 'no-cache')
  t.match(r.headers.etag, /^"[A-Za-z0-9_-]+"$/)
  t.equal(r.body.toString(), readFileSync(publicDir + 'index.html', 'utf8'))
})

t.test('assets: content types, uPlot from node_modules', async (t) => {
  const expected: Record<string, string> = {
    'app.js': 'text/javascript; charset=utf-8',
    'app.css': 'text/css; charset=utf-8',
    'favicon.svg': 'image/svg+xml',
    'uplot.js': 'text/javascript; charset=utf-8',
    'uplot.css': 'text/css; charset=utf-8',
  }
  for (const [name, type] of Object.entries(expected)) {
    const r = await get('/assets/' + name)
    t.equal(r.status, 200, name)
    t.equal(r.headers['content-type'], type, name)
    t.equal(r.headers['x-content-type-options'], 'nosniff', name)
    t.ok(r.headers['content-security-policy'], name)
    t.equal(Number(r.headers['content-length']), r.body.length, name)
  }
  t.match((await get('/assets/uplot.js')).body.toString(), /uPlot/)
  t.match((await get('/assets/uplot.css')).body.toString(), /\.uplot/)
})

t.test('every file of public/ but index.html is an asset', async (t) => {
  for (const name of readdirSync(publicDir)) {
    const r = await get(name === 'index.html' ? '/' : '/assets/' + name)
    t.equal(r.status, 200, name)
    t.same(r.body, readFileSync(publicDir + name), name)
  }
  t.equal((await get('/assets/index.html')).status, 404, 'the page lives at / only')
})

t.test('ETag revalidation answers 304 without a body', async (t) => {
  const first = await get('/assets/app.js')
  const again = await get('/assets/app.js', { 'if-none-match': first.headers.etag as string })
  t.equal(again.status, 304)
  t.equal(again.body.length, 0)
  t.equal(again.headers.etag, first.headers.etag)
  const weak = await get('/assets/app.js', { 'if-none-match': `"other", W/${first.headers.etag}` })
  t.equal(weak.status, 304)
  const changed = await get('/assets/app.js', { 'if-none-match': '"stale"' })
  t.equal(changed.status, 200)
  t.not((await get('/assets/app.css')).headers.etag, first.headers.etag, 'each file has its own tag')
})

t.test('gzip when accepted, identity otherwise', async (t) => {
  const plain = await get('/assets/uplot.js')
  t.notOk(plain.headers['content-encoding'])
  t.equal(plain.headers.vary, 'Accept-Encoding')
  const gz = await get('/assets/uplot.js', { 'accept-encoding': 'br, gzip' })
  t.equal(gz.headers['content-encoding'], 'gzip')
  t.ok(gz.body.length < plain.body.length)
  t.same(gunzipSync(gz.body), plain.body)
  const refused = await get('/assets/uplot.js', { 'accept-encoding': 'gzip;q=0, br' })
  t.notOk(refused.headers['content-encoding'])
})

t.test('HEAD has the headers and no body', async (t) => {
  const r = await get('/', {}, 'HEAD')
  t.equal(r.status, 200)
  t.equal(r.body.length, 0)
  t.ok(Number(r.headers['content-length']) > 0)
  t.equal(r.headers['content-type'], 'text/html; charset=utf-8')
})

t.test('unknown assets are 404 not_found', async (t) => {
  for (const path of ['/assets/nope.js', '/assets/', '/assets/app.js/x', '/assets/APP.JS', '/index.html']) {
    const r = await get(path)
    t.equal(r.status, 404, path)
    t.equal(JSON.parse(r.body.toString()).error, 'not_found', path)
  }
})

t.test('no path traversal', async (t) => {
  const pkg = readFileSync(new URL('../../package.json', import.meta.url), 'utf8')
  const paths = [
    '/assets/../../package.json',
    '/assets/..%2F..%2Fpackage.json',
    '/assets/%2e%2e%2f%2e%2e%2fpackage.json',
    '/assets/..%5C..%5Cpackage.json',
    '/assets/....//....//package.json',
    '/assets/%2E%2E/%2E%2E/package.json',
    '/assets/..%252F..%252Fpackage.json',
    '/assets/uplot%2Fpackage.json',
    '/assets/%2Fetc%2Fpasswd',
    '/assets/.',
  ]
  for (const path of paths) {
    const r = await get(path)
    t.equal(r.status, 404, path)
    t.notMatch(r.body.toString(), /"devDependencies"|root:/, path)
  }
  // Dot segments are not resolved (exact request-target routing, README "API"): a 404, never a file.
  const dots = await get('/assets/..')
  t.equal(dots.status, 404)
  t.equal(JSON.parse(dots.body.toString()).error, 'not_found')
  t.notMatch((await get('/../package.json')).body.toString(), pkg.slice(0, 40))
})

t.test('the page keeps to its CSP: no inline code, same-origin URLs only', async (t) => {
  const html = readFileSync(publicDir + 'index.html', 'utf8')
  t.notMatch(html, /<script(?![^>]*\bsrc=)[^>]*>/i, 'no inline <script>')
  t.notMatch(html, /<style/i, 'no <style> element')
  t.notMatch(html, /\sstyle=/i, 'no style attributes')
  t.notMatch(html, /\son[a-z]+=/i, 'no inline event handlers')
  const urls = [...html.matchAll(/\b(?:src|href)="([^"]*)"/g)].map((m) => m[1])
  t.ok(urls.length > 0)
  for (const url of urls) {
    t.ok(url === '/' || url.startsWith('/assets/'), `${url} is served here`)
    if (url !== '/') t.equal((await get(url)).status, 200, url)
  }
  for (const name of readdirSync(publicDir).filter((n) => n.endsWith('.js'))) {
    const js = readFileSync(publicDir + name, 'utf8')
    t.notMatch(js, /\.innerHTML\s*=|insertAdjacentHTML|outerHTML\s*=|document\.write|\beval\(|new Function\(/, `${name}: no HTML sinks or eval`)
    for (const [, target] of js.matchAll(/^import .* from '(.+)'$/gm)) {
      t.match(target, /^\.\/[a-z-]+\.js$/, `${name} imports ${target} from this folder`)
      t.equal((await get('/assets/' + target.slice(2))).status, 200, `${name} imports ${target}`)
    }
  }
})
