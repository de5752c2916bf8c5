// A small router: routes are `METHOD /literal/:param/...`, matched segment by segment. Few routes,
// so a linear scan over pre-split patterns is as fast as a tree and easier to read.
//
// Request targets are matched exactly as they arrived, never through URL parsing (which drops a
// `//host` prefix, reads `\` as `/` and resolves `..`): a proxy in front that allows or denies by
// path must see the same path Sluice routes on. parseRequestTarget() is the only way in:
// - origin-form only (`/path?query`); anything else (`http://host/path`, `*`, `host:443`) is 400
//   bad_request: Sluice is an origin server, and an absolute-form target would let a client name
//   a path a proxy never checked;
// - the path is split on `/` alone: `//evil.example/api/...`, `/api\ingest\x`, `/api/../api/x`,
//   `/api//streams` and `/api/streams/` are paths no route has, so 404 not_found;
// - literal segments compare byte for byte (no percent-decoding); `:param` segments are
//   percent-decoded once, and one that does not decode matches nothing;
// - of the patterns a path matches, those with the most literal segments decide its route, or
//   its 405 and Allow: a literal path is never taken by a parameter for a method it lacks.
import type { RequestContext } from './reply.ts'

export type Handler = (ctx: RequestContext) => Promise<void> | void

interface Route {
  method: string
  segments: string[]
  /** How many of the segments are literal: of the patterns a path matches, the most literal decide. */
  literals: number
  handler: Handler
}

export type RouteMatch =
  | { kind: 'found', handler: Handler, params: Record<string, string>, pattern: string }
  | { kind: 'method_not_allowed', allowed: string[] }
  | { kind: 'not_found' }

export interface RequestTarget {
  /** The path exactly as sent, from the leading `/` to before the `?`. */
  path: string
  /**
   * The query through URLSearchParams, on a dummy origin. Its pathname is always `/`: the path
   * above is the one to route on, since URL parsing would rewrite it.
   */
  url: URL
}

/** The path and query of an origin-form request target; null for any other form (400). */
export function parseRequestTarget (target: string): RequestTarget | null {
  if (target.charCodeAt(0) !== 0x2f) return null // '/'
  const q = target.indexOf('?')
  const url = new URL('http://localhost/')
  if (q === -1) return { path: target, url }
  url.search = target.slice(q + 1)
  return { path: target.slice(0, q), url }
}

export class Router {
  #routes: Route[] = []

  add (method: string, pattern: string, handler: Handler): this {
    const segments = pattern.split('/').filter(Boolean)
    // A pattern ending in '/' (other than '/') ends with an empty segment, matched by a path that
    // ends in '/': '/api/elastic/', the root Elasticsearch clients ask for below their base path.
    if (pattern.length > 1 && pattern.endsWith('/')) segments.push('')
    this.#routes.push({ method, segments, literals: segments.filter((seg) => !seg.startsWith(':')).length, handler })
    return this
  }

  /** Every registered route as `METHOD` and pattern (`/api/streams/:stream`), in registration order. */
  routes (): Array<{ method: string, pattern: string }> {
    return this.#routes.map((route) => ({ method: route.method, pattern: '/' + route.segments.join('/') }))
  }

  /** Matches `path` (from parseRequestTarget: starts with `/`) exactly; see the top of the file. */
  find (method: string, path: string): RouteMatch {
    if (path.charCodeAt(0) !== 0x2f) return { kind: 'not_found' }
    // '/' is the route with no segments; otherwise every segment counts, empty ones included.
    const parts = path === '/' ? [] : path.slice(1).split('/')
    // The patterns the path matches with the most literal segments decide: `/api/elastic/_bulk`
    // (POST, PUT) over `/api/elastic/:index` (GET, PUT), so a GET of it is 405, not the index.
    const matching: Array<{ route: Route, params: Record<string, string> }> = []
    let literals = -1
    for (const route of this.#routes) {
      if (route.literals < literals) continue
      const params = matchSegments(route.segments, parts)
      if (!params) continue
      if (route.literals > literals) { literals = route.literals; matching.length = 0 }
      matching.push({ route, params })
    }
    const allowed: string[] = []
    for (const { route, params } of matching) {
      if (route.method === method || (method === 'HEAD' && route.method === 'GET')) {
        return { kind: 'found', handler: route.handler, params, pattern: '/' + route.segments.join('/') }
      }
      if (!allowed.includes(route.method)) allowed.push(route.method)
      // HEAD is served by every GET route (above), so Allow names it too.
      if (route.method === 'GET' && !allowed.includes('HEAD')) allowed.push('HEAD')
    }
    return allowed.length > 0 ? { kind: 'method_not_allowed', allowed } : { kind: 'not_found' }
  }
}

function matchSegments (segments: string[], parts: string[]): Record<string, string> | null {
  if (segments.length !== parts.length) return null
  const params: Record<string, string> = {}
  for (let i = 0; i < segments.length; i++) {
    const seg = segments[i]
    if (seg.startsWith(':')) {
      // An empty parameter (`/api/streams//events`) is no value: no route.
      if (parts[i] === '') return null
      let value: string
      try {
        value = decodeURIComponent(parts[i])
      } catch {
        return null
      }
      params[seg.slice(1)] = value
    } else if (seg !== parts[i]) {
      return null
    }
  }
  return params
}
