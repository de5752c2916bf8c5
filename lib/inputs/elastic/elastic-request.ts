// What every route under /api/elastic does first (docs/api.md section 6.10): the
// `X-Elastic-Product: Elasticsearch` header that the official clients check on every answer
// (@elastic/elasticsearch refuses a 2xx without it), and `Authorization: ApiKey` read as the
// ingest token, for clients configured with an API key (Filebeat's and Logstash's `api_key`,
// Fluent Bit's `HTTP_API_Key`, the JS client's `auth.apiKey`).
import type { IncomingMessage } from 'node:http'
import type { Handler } from '../../http/router.ts'
import type { RequestContext } from '../../http/reply.ts'

/** Version Sluice answers as: an 8.x, which every shipper's version detection accepts. */
export const elasticVersion = { number: '8.17.0', lucene: '9.12.0', minimumWire: '7.17.0', minimumIndex: '7.0.0' } as const

// RFC 7235 token68 after a case-insensitive "ApiKey".
const apiKeyPattern = /^apikey +([A-Za-z0-9\-._~+/]+=*) *$/i
const tokenShape = /^sl[ip]_[A-Za-z0-9]{36}$/

/**
 * `ApiKey <token>` or `ApiKey base64(<id>:<token>)` (any id) becomes `Bearer <token>` for the
 * authenticator; anything else is left for it to judge (401 for a malformed header).
 */
export function acceptApiKey (req: IncomingMessage): void {
  const header = req.headers.authorization
  if (typeof header !== 'string') return
  const m = apiKeyPattern.exec(header)
  if (m === null) return
  let token = m[1]
  if (!tokenShape.test(token)) {
    const decoded = Buffer.from(token, 'base64').toString('latin1')
    const colon = decoded.indexOf(':')
    token = colon < 0 ? decoded : decoded.slice(colon + 1)
  }
  req.headers.authorization = `Bearer ${token}`
}

/** A handler under /api/elastic: the product header on every answer (errors included), API keys read. */
export function elasticHandler (handler: (ctx: RequestContext) => Promise<void> | void): Handler {
  return (ctx) => {
    ctx.res.setHeader('x-elastic-product', 'Elasticsearch')
    acceptApiKey(ctx.req)
    return handler(ctx)
  }
}
