// POST /internal/live (docs/api.md section 10): a peer's forwarded tail frames and stats for
// this node's tail clients (cluster-live.ts). Registered only in cluster mode with
// cluster.nodeUrl and cluster.secret set; the caller must send the secret in
// x-sluice-cluster-secret (401 unauthorized without it, 403 invalid_token when it differs,
// compared in constant time). 204 once the frames are handed to the clients.
import { createHash, timingSafeEqual } from 'node:crypto'
import type { Router } from '../http/router.ts'
import { SluiceError } from '../errors.ts'
import { decodeForward } from './forward-codec.ts'
import { clusterSecretHeader } from './peer-link.ts'
import { maxForwardBytes } from './cluster-live.ts'
import type { TailHub } from './tail-hub.ts'
import { continueBody } from '../http/expect-continue.ts'

function digest (s: string): Buffer { return createHash('sha256').update(s).digest() }

export function registerForwardRoute (router: Router, deps: { secret: string, hub: TailHub }): void {
  const expected = digest(deps.secret)
  router.add('POST', '/internal/live', async (ctx) => {
    const sent = ctx.req.headers[clusterSecretHeader]
    if (typeof sent !== 'string' || sent === '') throw new SluiceError('unauthorized', `Send the cluster secret in ${clusterSecretHeader}`)
    if (!timingSafeEqual(digest(sent), expected)) throw new SluiceError('invalid_token', 'The cluster secret differs')
    const chunks: Buffer[] = []
    let size = 0
    continueBody(ctx.req)
    for await (const chunk of ctx.req) {
      size += (chunk as Buffer).length
      if (size > maxForwardBytes) throw new SluiceError('payload_too_large', `Forwarded bodies are limited to ${maxForwardBytes} bytes`)
      chunks.push(chunk as Buffer)
    }
    for (const m of decodeForward(Buffer.concat(chunks, size))) deps.hub.publishForwarded(m.orgId, m.stream, m.stats, m.parts)
    ctx.res.writeHead(204)
    ctx.res.end()
  })
}
