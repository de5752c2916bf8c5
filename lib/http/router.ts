// A small router: routes are `METHOD /literal/:param/...`, matched segment by segment. Few routes,
// so a linear scan over pre-split patterns is as fast as a tree and easier to read.
import type { RequestContext } from './reply.ts'

export type Handler = (ctx: RequestContext) => Promise<void> | void

interface Route {
  method: string
  segments: string[]
  handler: Handler
}

export type RouteMatch =
  | { kind: 'found', handler: Handler, params: Record<string, string>, pattern: string }
  | { kind: 'method_not_allowed', allowed: string[] }
  | { kind: 'not_found' }

export class Router {
  #routes: Route[] = []

  add (method: string, pattern: string, handler: Handler): this {
    this.#routes.push({ method, segments: pattern.split('/').filter(Boolean), handler })
    return this
  }

  find (method: string, pathname: string): RouteMatch {
    const parts = pathname.split('/').filter(Boolean)
    const allowed: string[] = []
    for (const route of this.#routes) {
      const params = matchSegments(route.segments, parts)
      if (!params) continue
      if (route.method === method || (method === 'HEAD' && route.method === 'GET')) {
        return { kind: 'found', handler: route.handler, params, pattern: '/' + route.segments.join('/') }
      }
      allowed.push(route.method)
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
