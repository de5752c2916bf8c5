// The OpenAPI document (lib/http/openapi.ts) against the app's real router and lib/errors.ts: every
// registered route is documented and every documented operation is a route; every error code is
// in the Error schema's enum; the document's structure holds (3.1.0, responses everywhere, every
// $ref resolves); GET /api/openapi.json serves it without a token, cacheable, with 304 on its ETag.
import t from 'tap'
import { startServer } from '../helpers/server.ts'
import type { TestServer } from '../helpers/server.ts'
import { openApiDocument } from '../../lib/http/openapi.ts'
import { errorCodes } from '../../lib/errors.ts'

/** Documented routes not registered yet, and error codes not in the catalogue yet: none. */
const pendingRoutes: ReadonlySet<string> = new Set<string>()
const pendingErrorCodes: ReadonlySet<string> = new Set<string>()

const httpMethods = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']
type Json = Record<string, any>
const doc = JSON.parse(JSON.stringify(openApiDocument)) as Json

/** `METHOD /path/{param}` of every operation in the document. */
function documentedOperations (): string[] {
  const out: string[] = []
  for (const [path, item] of Object.entries(doc.paths as Json)) {
    for (const method of Object.keys(item)) if (httpMethods.includes(method)) out.push(`${method.toUpperCase()} ${path}`)
  }
  return out
}

let s: TestServer
t.before(async () => { s = await startServer(t) })

t.test('every registered route is documented, and every documented operation is a route', async (t) => {
  const routes = s.app.router.routes().map((r) => `${r.method} ${r.pattern.replace(/:([^/]+)/g, '{$1}')}`)
  const documented = new Set(documentedOperations())
  const registered = new Set(routes)
  t.ok(routes.length >= 20, `the router lists its routes (${routes.length})`)
  t.same(routes.filter((r) => !documented.has(r)), [], 'routes missing from the document')
  // HEAD works on every GET route (docs/api.md section 1): a documented HEAD stands for its GET.
  const missing = [...documented].filter((op) => {
    const asRegistered = op.startsWith('HEAD ') ? 'GET ' + op.slice(5) : op
    return !registered.has(asRegistered) && !pendingRoutes.has(op)
  })
  t.same(missing, [], 'documented operations no route answers (other than pendingRoutes)')
  const pendingButRegistered = [...pendingRoutes].filter((op) => registered.has(op.startsWith('HEAD ') ? 'GET ' + op.slice(5) : op))
  t.same(pendingButRegistered, [], 'pendingRoutes lists only routes not registered yet (delete them from it once merged)')
  t.same([...pendingRoutes].filter((op) => !documented.has(op)), [], 'every pending route is documented')
})

t.test('every error code of the catalogue is in the Error schema\'s enum, and no other', async (t) => {
  const documented: string[] = doc.components.schemas.Error.properties.error.enum
  t.same(errorCodes.filter((code) => !documented.includes(code)), [], 'codes missing from the document')
  t.same(documented.filter((code) => !(errorCodes as string[]).includes(code) && !pendingErrorCodes.has(code)), [], 'documented codes the catalogue does not have')
  t.same([...pendingErrorCodes].filter((code) => (errorCodes as string[]).includes(code)), [], 'pendingErrorCodes lists only codes not in the catalogue yet')
})

t.test('the document\'s structure', async (t) => {
  t.equal(doc.openapi, '3.1.0')
  t.type(doc.info?.title, 'string')
  t.type(doc.info?.version, 'string')
  const operationIds = new Set<string>()
  for (const [path, item] of Object.entries(doc.paths as Json)) {
    t.ok(path.startsWith('/'), `${path} starts with /`)
    const templated = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]).sort()
    for (const [method, op] of Object.entries(item as Json)) {
      t.ok(httpMethods.includes(method), `${path}: ${method} is an HTTP method`)
      const name = `${method.toUpperCase()} ${path}`
      t.ok(op.responses && Object.keys(op.responses).length > 0, `${name} has responses`)
      for (const [status, response] of Object.entries(op.responses as Json)) {
        t.match(status, /^[1-5]\d\d$/, `${name}: status ${status}`)
        t.type((response as Json).description, 'string', `${name} ${status} has a description`)
      }
      t.type(op.operationId, 'string', `${name} has an operationId`)
      t.notOk(operationIds.has(op.operationId), `${name}: operationId ${op.operationId} is unique`)
      operationIds.add(op.operationId)
      const pathParams = (op.parameters ?? []).filter((p: Json) => p.in === 'path').map((p: Json) => p.name).sort()
      t.same(pathParams, templated, `${name} declares exactly its path parameters`)
      for (const p of op.parameters ?? []) if (p.in === 'path') t.equal(p.required, true, `${name}: path parameter ${p.name} is required`)
      for (const requirement of op.security ?? []) {
        for (const scheme of Object.keys(requirement)) t.ok(doc.components.securitySchemes[scheme], `${name}: security scheme ${scheme} exists`)
      }
    }
  }
  // Every read of events takes q (docs/api.md section 7.2; the context parses it too: explore34 F7).
  for (const [path, item] of Object.entries(doc.paths as Json)) {
    const op = (item as Json).get
    if (op?.tags?.includes('read') !== true) continue
    t.ok((op.parameters ?? []).some((p: Json) => p.in === 'query' && p.name === 'q'), `GET ${path} documents q`)
  }
  // Every $ref is local and resolves.
  const refs: string[] = []
  const walk = (value: unknown): void => {
    if (Array.isArray(value)) { value.forEach(walk); return }
    if (value === null || typeof value !== 'object') return
    for (const [key, v] of Object.entries(value)) {
      if (key === '$ref') refs.push(v as string)
      else walk(v)
    }
  }
  walk(doc)
  t.ok(refs.length > 10, `the document uses $refs (${refs.length})`)
  for (const r of new Set(refs)) {
    t.match(r, /^#\//, `${r} is local`)
    let target: unknown = doc
    for (const part of r.slice(2).split('/')) target = (target as Json | undefined)?.[part.replace(/~1/g, '/').replace(/~0/g, '~')]
    t.ok(target !== undefined && typeof target === 'object', `${r} resolves`)
  }
})

t.test('GET /api/openapi.json: no token, cacheable, 304 on its ETag', async (t) => {
  const res = await fetch(`${s.url}/api/openapi.json`)
  t.equal(res.status, 200)
  t.match(res.headers.get('content-type'), /^application\/json/)
  t.match(res.headers.get('cache-control'), /public, max-age=\d+/)
  const etag = res.headers.get('etag')
  t.match(etag, /^"[\w-]+"$/)
  t.same(await res.json(), doc, 'the document itself')
  const again = await fetch(`${s.url}/api/openapi.json`, { headers: { 'if-none-match': etag! } })
  t.equal(again.status, 304)
  t.equal((await again.arrayBuffer()).byteLength, 0)
  const head = await fetch(`${s.url}/api/openapi.json`, { method: 'HEAD' })
  t.equal(head.status, 200)
  t.equal(head.headers.get('etag'), etag)
})
