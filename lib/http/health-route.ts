// Liveness and readiness, unauthenticated. /healthz: the process answers. /readyz: ClickHouse
// answers and the schema is migrated; otherwise 503 not_ready with Retry-After, so a load
// balancer keeps traffic away until the node can take it.
import type { Router } from './router.ts'
import { sendJson } from './reply.ts'
import { SluiceError } from '../errors.ts'

export function registerHealthRoutes (router: Router, isReady: () => Promise<{ ready: boolean, reason?: string }>): void {
  router.add('GET', '/healthz', (ctx) => { sendJson(ctx, 200, { status: 'ok' }) })
  router.add('GET', '/readyz', async (ctx) => {
    const { ready, reason } = await isReady()
    if (!ready) throw new SluiceError('not_ready', `Not ready: ${reason ?? 'starting'}`, { retryAfter: 1 })
    sendJson(ctx, 200, { status: 'ready' })
  })
}
