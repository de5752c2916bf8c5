// GET /api/openapi.json: the OpenAPI 3.1 document of the API (lib/http/openapi.ts). No token: it
// describes the API, it holds no data. The body is serialized once, at registration, and carries a
// strong ETag (a content hash) and `Cache-Control: public, max-age=3600`: it only changes with a
// new Sluice version, and a client that asks again with If-None-Match gets 304.
import { createHash } from 'node:crypto'
import type { Router } from './router.ts'
import { openApiDocument } from './openapi.ts'

/** Seconds a client or proxy may reuse the document without asking again. */
const maxAgeS = 3600

export function registerOpenApiRoute (router: Router, document: unknown = openApiDocument): void {
  const body = Buffer.from(JSON.stringify(document))
  const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`
  router.add('GET', '/api/openapi.json', (ctx) => {
    const { req, res } = ctx
    res.setHeader('cache-control', `public, max-age=${maxAgeS}`)
    res.setHeader('etag', etag)
    const match = req.headers['if-none-match']
    if (typeof match === 'string' && match.split(',').some((t) => { const tag = t.trim(); return tag === '*' || tag === etag || tag === 'W/' + etag })) {
      res.writeHead(304)
      res.end()
      return
    }
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': body.length })
    res.end(req.method === 'HEAD' ? undefined : body)
  })
}
