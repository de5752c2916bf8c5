// Seeded generator of realistic ingest lines for the benchmarks: the same seed gives the same
// lines (timestamps aside, which follow `nowMs` so that a live server accepts them). About 200
// bytes a line, the mix a web fleet behind Docker or Kubernetes produces:
// - 50% format 1: an access-log object (ts in ms, RFC 3339 or fractional seconds);
// - 25% format 2: a plain-text `log` line with `filename` and shipper keys (kept in attrs);
// - 25% format 2 whose `log` holds a JSON access-log object (fields extracted from it).

/** mulberry32: tiny, fast and good enough to vary a payload; not for anything secret. */
export function createRandom (seed: number): () => number {
  let state = seed >>> 0
  return function next (): number {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const hosts = ['web-01.prod.eu-west-1', 'web-02.prod.eu-west-1', 'web-03.prod.us-east-1', 'api-1.prod.internal', 'api-2.prod.internal', 'edge-fra-7', 'edge-iad-2']
const methods = ['GET', 'GET', 'GET', 'GET', 'POST', 'POST', 'PUT', 'DELETE', 'HEAD']
const paths = ['/', '/login', '/api/v1/users', '/api/v1/orders', '/api/v1/orders/search', '/static/app.3f9a1c.js', '/static/style.css', '/health', '/api/v2/invoices/export', '/images/logo.png']
const statuses = [200, 200, 200, 200, 200, 200, 201, 204, 301, 304, 400, 401, 403, 404, 404, 429, 500, 502, 503]
const userAgents = [
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) Chrome/131.0 Safari/537.36',
  'Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 Mobile/15E148',
  'curl/8.5.0',
  'Go-http-client/2.0',
  'python-requests/2.32.3',
  'kube-probe/1.30',
]
const levels = ['INFO', 'INFO', 'INFO', 'WARN', 'ERROR', 'DEBUG']
const words = ['request', 'completed', 'user', 'cache', 'miss', 'retrying', 'connection', 'pool', 'timeout', 'order', 'created', 'queue', 'depth', 'worker', 'started', 'token', 'refreshed', 'upstream']
const filenames = ['/var/log/containers/api-7d9f.log', '/var/log/app/worker.log', '/var/log/nginx/error.log']

/**
 * `count` lines without their '\n', ~200 bytes each, deterministic for a given seed. Timestamps
 * fall in the minute before `nowMs` (ms since the epoch).
 */
export function generateLines (count: number, seed: number, nowMs: number = Date.now()): string[] {
  const random = createRandom(seed)
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]
  const lines: string[] = new Array(count)
  for (let i = 0; i < count; i++) {
    const ts = nowMs - Math.floor(random() * 60_000)
    const access = {
      host: pick(hosts),
      method: pick(methods),
      path: pick(paths) + (random() < 0.3 ? `/${Math.floor(random() * 1e6)}` : ''),
      status: pick(statuses),
      rt: Math.round(random() * random() * 2_000_000) / 1e6,
      bytes: Math.floor(random() * 50_000),
      src: `10.${Math.floor(random() * 256)}.${Math.floor(random() * 256)}.${Math.floor(random() * 256)}`,
    }
    const kind = random()
    if (kind < 0.5) {
      const style = random()
      const time = style < 0.7 ? ts : style < 0.9 ? new Date(ts).toISOString() : ts / 1000
      lines[i] = JSON.stringify({ ts: time, ...access, user_agent: pick(userAgents) })
    } else if (kind < 0.75) {
      let text = `${new Date(ts).toISOString()} ${pick(levels)}`
      while (text.length < 100) text += ' ' + pick(words)
      lines[i] = JSON.stringify({ log: text, filename: pick(filenames), stream: 'stdout', pod: `api-${Math.floor(random() * 9)}` })
    } else {
      const log = JSON.stringify({ ts: new Date(ts).toISOString(), ...access, level: pick(levels) })
      lines[i] = JSON.stringify({ log, stream: 'stdout' })
    }
  }
  return lines
}
