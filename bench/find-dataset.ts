// The data set of the find benchmark (find.bench.ts, issue 22): `totalRows` events of one stream
// over 24 h, a mix of access logs and application logs with about ten attributes each, generated
// in this process as TabSeparated and inserted in time order straight into `events` (migrated, so
// the rollup views fill as on ingest). Seeded: the same row count and batch size give the same
// rows, so a database kept by one run (`--keep`) is measured again by the next (`--database NAME`).
//
// - 45% access logs: host, path, method, status, rt, bytes, src, user_agent (as query-dataset.ts),
//   message `GET /path 200`, no level; attrs user_id, route, region, http.{version,scheme,referer},
//   upstream.{addr,ms}.
// - 55% application logs: host (a pod of its service), message from ~30 templates, level (debug
//   15%, info 66%, warn 12%, error 6%, fatal 1%), filename on half; attrs user_id, route, region,
//   env, version, duration_ms, k8s.{pod,namespace}, and on checkout/payments/orders/billing lines
//   order.{id,total,currency} (total a JSON number).
// - Every app line and 80% of access lines carry trace_id (32 hex) and span_id (16 hex), unique:
//   the first 8 hex digits of each are a bijective mix of the row number.
// - service: one of 20, skewed (squared uniform: low indexes hot); user_id: 1..1,000,000, skewed
//   the same way (a JSON number, so `user_id:42` matches the value text "42").
// - Needles at fixed row intervals (so they spread evenly over the 24 h): user_id 4242424 on 1 row
//   in 400,009 (75 in 30 M), and the phrase "card issuer unreachable" (which no other message
//   holds) in 1 app message in 350,003 (about 86 in 30 M).
//
// attrs is the text JSON.stringify writes, and attr_keys/attr_values are that text flattened by
// the walker ingest runs (lib/events/attr-flatten.ts AttrPairs), so the arrays are exactly what
// ingest would store for these lines. received_at is the time of the load, not ts: a row received
// before migration 11 was applied counts as a legacy row (lib/storage/legacy-attrs.ts), and reads
// over a range holding such rows carry the legacy branch, which a database created since never
// does.
import { Buffer } from 'node:buffer'
import { Worker } from 'node:worker_threads'
import { AttrPairs } from '../lib/events/attr-flatten.ts'
import type { ClickHouse } from '../lib/storage/clickhouse.ts'
import { createRandom } from './payload.ts'

export const stream = 'find'
/** 2025-11-20T00:37:00Z, as query-dataset.ts: fixed, and off the hour. */
export const startMs = 1_763_596_800_000 + 37 * 60_000
export const spanMs = 86_400_000
export const endMs = startMs + spanMs

export const services = ['checkout', 'cart', 'payments', 'auth', 'search', 'catalog', 'inventory', 'shipping', 'orders', 'users',
  'notifications', 'recommendations', 'pricing', 'gateway', 'billing', 'reviews', 'media', 'analytics', 'email', 'fraud']
const orderServices = new Set(['checkout', 'payments', 'orders', 'billing'])
const regions = ['eu-west-1', 'eu-west-1', 'eu-west-1', 'eu-central-1', 'us-east-1', 'us-east-1', 'us-west-2', 'ap-southeast-1']
const accessHosts = Array.from({ length: 12 }, (_, i) => `web-${String(i + 1).padStart(2, '0')}.prod.eu-west-1`)
const pods = services.map((s, k) => Array.from({ length: 5 }, (_, i) => `${s}-${(0x7d9f + k * 97).toString(16)}-${'abcde'[i]}${k}x${i}`))
const hotPaths = ['/', '/login', '/logout', '/health', '/api/v1/orders', '/api/v1/orders/search', '/api/v1/users/me',
  '/api/v2/invoices/export', '/static/app.3f9a1c.js', '/static/style.8e1b.css', '/images/logo.png', '/favicon.ico']
const hotRoutes = ['/', '/login', '/logout', '/health', '/api/v1/orders', '/api/v1/orders/search', '/api/v1/users/me',
  '/api/v2/invoices/export', '/static/*', '/static/*', '/images/*', '/favicon.ico']
const itemCount = 5000
const statuses = [200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 201, 204, 301, 304, 400, 401, 404, 404, 429, 500, 502, 503]
const methods = ['GET', 'GET', 'GET', 'GET', 'POST', 'POST', 'PUT', 'DELETE']
const sources = Array.from({ length: 20_000 }, (_, i) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`)
const userAgents = Array.from({ length: 30 }, (_, i) => i % 3 === 0 ? `curl/8.${i}.0` : `Mozilla/5.0 (X11; Linux x86_64) Chrome/${100 + i}.0 Safari/537.36`)
const referers = ['https://www.example.com/', 'https://www.example.com/cart', 'https://search.example.net/?q=shoes', '-']
const appRoutes = ['POST /api/v1/checkout', 'GET /api/v1/cart', 'POST /api/v1/payments', 'GET /api/v1/search', 'GET /api/v1/items/:id',
  'POST /api/v1/orders', 'GET /api/v1/users/me', 'POST /internal/jobs/reindex', 'GET /api/v1/recommendations', 'POST /api/v1/login']
const versions = ['1.4.2', '1.4.3', '1.5.0', '2.0.0-rc.1']
/** [level, cumulative share]. */
const levels: Array<[string, number]> = [['debug', 0.15], ['info', 0.81], ['warn', 0.93], ['error', 0.99], ['fatal', 1]]
const messages = [
  'request completed in # ms', 'cache miss for key user:#', 'cache hit for key item:#', 'payment declined for order #',
  'payment authorized for order #', 'order # created', 'order # shipped', 'retrying upstream call, attempt #',
  'connection pool exhausted, waited # ms', 'slow query took # ms', 'user # logged in', 'user # logged out',
  'token refreshed for session #', 'inventory reserved # units', 'inventory released # units', 'search returned # results',
  'recommendation model scored # items', 'email queued for user #', 'webhook delivered in # ms', 'rate limit hit for client #',
  'validation failed on field # of form', 'fraud score # above threshold', 'price recalculated for # items', 'job # finished',
  'job # failed, will retry', 'GC pause of # ms', 'config reloaded, version #', 'deadline exceeded after # ms',
  'upstream returned status #', 'message # acknowledged',
]

/** The rare user: 1 row in `every` carries user_id `id` (no other row does: generated ids are <= 1,000,000). */
export const needleUser = { every: 400_009, id: 4_242_424 }
/** The rare phrase, in the message of 1 app row in `every`. */
export const needlePhrase = { every: 350_003, text: 'card issuer unreachable' }
/** The service of `service:x level:error`: the hottest one. */
export const hotService = services[0]

const columns = ['org_id', 'stream', 'ts', 'received_at', 'host', 'path', 'method', 'status', 'rt', 'bytes', 'src', 'user_agent',
  'message', 'filename', 'level', 'service', 'trace_id', 'span_id', 'attrs', 'attr_keys', 'attr_values', 'seq', 'size']
export const insertStatement = `INSERT INTO events (${columns.join(', ')}) FORMAT TabSeparated`

/** A bijection of 32-bit integers (murmur3's finalizer): unique hex for every row number. */
function mix32 (x: number): number {
  x = Math.imul(x ^ (x >>> 16), 0x85ebca6b)
  x = Math.imul(x ^ (x >>> 13), 0xc2b2ae35)
  return (x ^ (x >>> 16)) >>> 0
}
const hex8 = (n: number): string => (n >>> 0).toString(16).padStart(8, '0')

/** Text that needs no escaping in a TSV field nor in a quoted array element (what the generator writes). */
const unsafe = /[\t\n\\']/

const pairs = new AttrPairs()

/** The TSV array literal of attr_keys and attr_values for an attrs text, as ingest flattens it. */
function flattenedArrays (attrs: string): [string, string] {
  const bytes = Buffer.from(attrs)
  pairs.flatten(bytes, bytes.length)
  const keys: string[] = new Array(pairs.count)
  const values: string[] = new Array(pairs.count)
  for (let i = 0; i < pairs.count; i++) {
    keys[i] = `'${pairs.key(i)}'`
    values[i] = `'${pairs.value(i)}'`
  }
  return [`[${keys.join(',')}]`, `[${values.join(',')}]`]
}

/**
 * Rows `first` to `first + count - 1` of a data set of `totalRows` as TabSeparated in `columns`
 * order; row i at startMs + i * spanMs / totalRows.
 */
export function generateBatch (orgId: string, first: number, count: number, totalRows: number, receivedAt: number): Buffer {
  const random = createRandom(mix32(first + 1))
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]
  const skewed = <T>(list: readonly T[]): T => list[Math.floor(random() * random() * list.length)]
  const parts: string[] = new Array(count)
  const prefix = `${orgId}\t${stream}\t`
  for (let k = 0; k < count; k++) {
    const i = first + k
    const ts = startMs + Math.floor(i * spanMs / totalRows)
    const serviceIndex = Math.floor(random() * random() * services.length)
    const service = services[serviceIndex]
    const userId = i % needleUser.every === 0 ? needleUser.id : 1 + Math.floor(random() * random() * 1_000_000)
    const region = pick(regions)
    const isAccess = random() < 0.45 && i % needlePhrase.every !== 1 // a phrase row is an app row
    const hasTrace = !isAccess || random() < 0.8
    const traceId = hasTrace ? hex8(mix32(i)) + hex8(random() * 2 ** 32) + hex8(random() * 2 ** 32) + hex8(random() * 2 ** 32) : '\\N'
    const spanId = hasTrace ? hex8(mix32(i ^ 0x5bd1e995)) + hex8(random() * 2 ** 32) : '\\N'
    let row: string
    let attrs: string
    if (isAccess) {
      const hot = random() < 0.6
      const hotIndex = Math.floor(random() * random() * hotPaths.length)
      const item = Math.floor(random() * itemCount)
      const path = hot ? hotPaths[hotIndex] : `/api/v1/items/${item}`
      const route = hot ? hotRoutes[hotIndex] : '/api/v1/items/:id'
      const status = pick(statuses)
      const method = pick(methods)
      const rt = random() < 0.05 ? '\\N' : (Math.round(1000 * 0.02 / (0.01 + random())) / 1000).toString()
      const bytes = random() < 0.02 ? '\\N' : String(Math.floor(random() * 50_000))
      const upstreamMs = Math.floor(random() * 400)
      attrs = JSON.stringify({
        user_id: userId,
        route,
        region,
        http: { version: random() < 0.7 ? '2' : '1.1', scheme: 'https', referer: pick(referers) },
        upstream: { addr: `10.1.${serviceIndex}.${Math.floor(random() * 8) + 10}:8080`, ms: upstreamMs },
      })
      row = `${skewed(accessHosts)}\t${path}\t${method}\t${status}\t${rt}\t${bytes}\t${skewed(sources)}\t${skewed(userAgents)}\t` +
        `${method} ${path} ${status}\t/var/log/nginx/access.log\t\\N\t`
    } else {
      const draw = random()
      let level = 'fatal'
      for (const [name, upTo] of levels) {
        if (draw < upTo) {
          level = name
          break
        }
      }
      const template = pick(messages)
      let message = template.replace('#', String(Math.floor(random() * 100_000)))
      if (i % needlePhrase.every === 1) message = `payment failed: ${needlePhrase.text}, order ${Math.floor(random() * 100_000)}`
      const object: Record<string, unknown> = {
        user_id: userId,
        route: pick(appRoutes),
        region,
        env: 'prod',
        version: pick(versions),
        duration_ms: Math.floor(random() * 2000),
        k8s: { pod: pods[serviceIndex][Math.floor(random() * 5)], namespace: 'prod' },
      }
      if (orderServices.has(service)) {
        object.order = { id: `o-${Math.floor(random() * 10_000_000)}`, total: Math.round(random() * 50_000) / 100, currency: random() < 0.7 ? 'EUR' : 'USD' }
      }
      attrs = JSON.stringify(object)
      row = `${pods[serviceIndex][Math.floor(random() * 5)]}\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t${message}\t` +
        `${random() < 0.5 ? `/var/log/containers/${service}.log` : '\\N'}\t${level}\t`
    }
    if (unsafe.test(attrs)) throw new Error(`attrs needs escaping: ${attrs}`)
    const [keys, values] = flattenedArrays(attrs)
    parts[k] = `${prefix}${ts}\t${receivedAt}\t${row}${service}\t${traceId}\t${spanId}\t${attrs}\t${keys}\t${values}\t${i + 1}\t${row.length + attrs.length + 120}\n`
  }
  return Buffer.from(parts.join(''))
}

/** One insert of a whole batch makes one block, as the batch writer's large batches do. */
export function insertSettings (batchRows: number): Record<string, string> {
  return { max_insert_block_size: String(Math.max(batchRows, 1_048_576)) }
}

/**
 * Loads the data set into `events` (migrated already) in `batchRows`-row inserts, from row
 * `startAt`, generating the next batches in worker threads while ClickHouse inserts one.
 */
export async function loadFindEvents (clickhouse: ClickHouse, orgId: string, totalRows: number, batchRows: number,
  progress: (text: string) => void = () => {}, startAt = 0, generators = 2): Promise<{ totalS: number, insertS: number }> {
  const started = performance.now()
  let insertMs = 0
  let pending: Promise<void> | null = null
  // A connection ClickHouse closed while idle (its keep_alive_timeout, 3 s on 18.16, is shorter
  // than a batch's generation) fails the write before any row is sent: that insert is retried.
  const insert = async (body: Buffer): Promise<void> => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await clickhouse.insertRaw(insertStatement, body, undefined, insertSettings(batchRows))
      } catch (err) {
        if (attempt >= 3 || !/EPIPE|ECONNRESET|socket hang up/.test(String(err))) throw err
        progress(`insert failed (${String(err).slice(0, 80)}), retrying`)
      }
    }
  }
  // Batches are generated by `generators` worker threads, `generators` batches ahead of the inserts.
  const workers = Array.from({ length: generators }, () => new Worker(new URL('./find-dataset-worker.ts', import.meta.url)))
  const firsts: number[] = []
  for (let first = startAt; first < totalRows; first += batchRows) firsts.push(first)
  const ordered = new Map<number, Promise<Buffer>>()
  const order = (k: number): void => {
    if (k >= firsts.length) return
    const worker = workers[k % workers.length]
    const first = firsts[k]
    ordered.set(k, new Promise((resolve) => {
      // One order at a time per worker (the next is sent once this one is taken), so answers come in order.
      worker.once('message', (bytes: Uint8Array) => resolve(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)))
    }))
    worker.postMessage({ orgId, first, count: Math.min(batchRows, totalRows - first), totalRows, receivedAt: Date.now() })
  }
  for (let k = 0; k < workers.length; k++) order(k)
  try {
    for (let k = 0; k < firsts.length; k++) {
      const first = firsts[k]
      const body = await ordered.get(k)!
      ordered.delete(k)
      order(k + workers.length)
      if (pending) await pending
      const insertStarted = performance.now()
      pending = insert(body).then(() => {
        insertMs += performance.now() - insertStarted
      })
      if ((first / batchRows) % 10 === 0) progress(`${first.toLocaleString('en-US')} rows sent, ${((performance.now() - started) / 1000).toFixed(0)} s`)
    }
    if (pending) await pending
  } finally {
    await Promise.all(workers.map((w) => w.terminate()))
  }
  return { totalS: (performance.now() - started) / 1000, insertS: insertMs / 1000 }
}
