// Liveness and readiness, unauthenticated. /healthz: the process answers. /readyz: ClickHouse
// answers and the schema is migrated; otherwise 503 not_ready with Retry-After, so a load
// balancer keeps traffic away until the node can take it.
//
// /readyz answers within timeoutMs (800 ms by default, under the 1 s that probes commonly allow)
// whatever ClickHouse does: the check gets an AbortSignal that fires then (so a hung ClickHouse
// holds no pooled socket past it), and a check that ignores it is not waited for. Concurrent
// probes share one check.
import type { Router } from './router.ts'
import { sendJson } from './reply.ts'
import { SluiceError } from '../errors.ts'

export interface Readiness { ready: boolean, reason?: string }

export interface HealthOptions {
  /** ms /readyz waits for the check before answering not_ready; default 800. */
  timeoutMs?: number
}

const defaultTimeoutMs = 800

export function registerHealthRoutes (router: Router, isReady: (signal: AbortSignal) => Promise<Readiness>, options: HealthOptions = {}): void {
  const timeoutMs = options.timeoutMs ?? defaultTimeoutMs
  let inFlight: Promise<Readiness> | null = null

  function check (): Promise<Readiness> {
    inFlight ??= (async () => {
      const controller = new AbortController()
      let timer: NodeJS.Timeout | undefined
      const late = new Promise<Readiness>((resolve) => {
        timer = setTimeout(() => {
          controller.abort(new Error('readiness check timed out'))
          resolve({ ready: false, reason: `ClickHouse did not answer within ${timeoutMs} ms` })
        }, timeoutMs)
      })
      const checked = isReady(controller.signal).catch((): Readiness => ({ ready: false, reason: 'ClickHouse unreachable' }))
      try {
        return await Promise.race([checked, late])
      } finally {
        clearTimeout(timer)
        inFlight = null
      }
    })()
    return inFlight
  }

  router.add('GET', '/healthz', (ctx) => { sendJson(ctx, 200, { status: 'ok' }) })
  router.add('GET', '/readyz', async (ctx) => {
    const { ready, reason } = await check()
    if (!ready) throw new SluiceError('not_ready', `Not ready: ${reason ?? 'starting'}`, { retryAfter: 1 })
    sendJson(ctx, 200, { status: 'ready' })
  })
}
