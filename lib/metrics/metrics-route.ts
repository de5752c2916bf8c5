// GET /metrics: Prometheus text exposition, unauthenticated (bind Sluice to a private interface
// or filter /metrics at the proxy if that matters).
import type { Router } from '../http/router.ts'
import type { SluiceMetrics } from './metrics.ts'

export function registerMetricsRoute (router: Router, metrics: SluiceMetrics): void {
  router.add('GET', '/metrics', (ctx) => {
    const body = metrics.registry.render()
    ctx.res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8', 'content-length': Buffer.byteLength(body) })
    ctx.res.end(body)
  })
}
