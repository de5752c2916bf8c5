// The data set of the query benchmarks (stats.bench.ts, events.bench.ts): `totalRows` events of
// one stream spanning 24 h, generated in this process as TabSeparated and inserted in time order,
// the way ingest sends them. Seeded: the same row count gives the same rows, so a database kept
// by one benchmark (`--keep`) can be measured by the other (`--database NAME`).
//
// Cardinalities of a busy web service: a dozen hosts, ~5,000 paths (a few hot ones, then
// /items/<id>), ~20,000 client addresses, a few dozen user agents. Skew comes from squaring a
// uniform number, so low indexes are hot. On top of that, a few rare events at fixed row
// intervals (so that they spread evenly over the 24 h, and the other rows stay as they were before
// these were added), for the selective filters of the events benchmark:
// - 1 row in 5,003 has status 507 (about 2,000 in 10 M, 83 an hour);
// - 1 row in 4,001 has " upstream timeout" at the end of its message (about 2,500 in 10 M, 104 an
//   hour).
import type { ClickHouse } from '../lib/storage/clickhouse.ts'
import { createRandom } from './payload.ts'

export const orgId = 'org_bench'
export const stream = 'web'
/**
 * 2025-11-20T00:37:00Z, fixed so every run stores and reads the same rows, and off the hour so
 * ranges ending at the newest event ("now") have partial hours, as a dashboard's do.
 */
export const startMs = 1_763_596_800_000 + 37 * 60_000
export const spanMs = 86_400_000 // 24 h of events
/** The newest event is just before this: "now" for the benchmarks' ranges. */
export const endMs = startMs + spanMs

export const hosts = Array.from({ length: 12 }, (_, i) => `web-${String(i + 1).padStart(2, '0')}.prod.eu-west-1`)
const hotPaths = ['/', '/login', '/logout', '/health', '/api/v1/orders', '/api/v1/orders/search', '/api/v1/users/me',
  '/api/v2/invoices/export', '/static/app.3f9a1c.js', '/static/style.8e1b.css', '/images/logo.png', '/favicon.ico']
const itemPaths = Array.from({ length: 5000 }, (_, i) => `/api/v1/items/${i}`)
const statuses = [200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 201, 204, 301, 304, 400, 401, 404, 404, 429, 500, 502, 503]
const methods = ['GET', 'GET', 'GET', 'GET', 'POST', 'POST', 'PUT', 'DELETE']
const sources = Array.from({ length: 20_000 }, (_, i) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`)
const userAgents = Array.from({ length: 30 }, (_, i) => i % 3 === 0 ? `curl/8.${i}.0` : `Mozilla/5.0 (X11; Linux x86_64) Chrome/${100 + i}.0 Safari/537.36`)
const filenames = ['/var/log/nginx/access.log', '/var/log/containers/web-7d9f.log']

/** Rows with a rare status (see the top of this file). */
export const rareStatus = { every: 5003, status: 507 }
/** Rows with a rare word at the end of their message. */
export const rareWord = { every: 4001, suffix: ' upstream timeout' }

/** The columns the loader fills; the others take their defaults. */
const columns = ['org_id', 'stream', 'ts', 'received_at', 'host', 'path', 'method', 'status', 'rt', 'bytes', 'src',
  'user_agent', 'message', 'filename', 'attrs']

/**
 * Rows `first` to `first + count - 1` of a data set of `totalRows` as TabSeparated in `columns`
 * order. Row i is at startMs + i * spanMs / totalRows, so the rows come in time order as ingest
 * sends them; absent fields are \N (5% of rt, 2% of bytes, half the filenames).
 */
export function generateBatch (first: number, count: number, totalRows: number): Buffer {
  const random = createRandom(first + 1)
  const skewed = <T>(list: readonly T[]): T => list[Math.floor(random() * random() * list.length)]
  const parts: string[] = new Array(count)
  for (let k = 0; k < count; k++) {
    const i = first + k
    const ts = startMs + Math.floor(i * spanMs / totalRows)
    const path = random() < 0.6 ? skewed(hotPaths) : itemPaths[Math.floor(random() * itemPaths.length)]
    let status = statuses[Math.floor(random() * statuses.length)]
    if (i % rareStatus.every === 0) status = rareStatus.status
    const method = methods[Math.floor(random() * methods.length)]
    // Milliseconds with a long tail: mostly tens of ms, now and then seconds.
    const rt = random() < 0.05 ? '\\N' : (Math.round(1000 * 0.02 / (0.01 + random())) / 1000).toString()
    const bytes = random() < 0.02 ? '\\N' : String(Math.floor(random() * 50_000))
    const filename = random() < 0.5 ? '\\N' : filenames[k & 1]
    const message = `${method} ${path} ${status}` + (i % rareWord.every === 0 ? rareWord.suffix : '')
    parts[k] = `${orgId}\t${stream}\t${ts}\t${ts + 150}\t${skewed(hosts)}\t${path}\t${method}\t${status}\t${rt}\t${bytes}\t` +
      `${skewed(sources)}\t${skewed(userAgents)}\t${message}\t${filename}\t{}\n`
  }
  return Buffer.from(parts.join(''))
}

export const insertStatement = `INSERT INTO events (${columns.join(', ')}) FORMAT TabSeparated`

/** One insert of a whole batch makes one block, as the batch writer's large batches do. */
export function insertSettings (batchRows: number): Record<string, string> {
  return { max_insert_block_size: String(Math.max(batchRows, 1_048_576)) }
}

/** Loads the data set into `events` (migrated already) in `batchRows`-row inserts. */
export async function loadEvents (clickhouse: ClickHouse, totalRows: number, batchRows: number): Promise<{ totalS: number, insertS: number }> {
  let insertMs = 0
  const started = performance.now()
  for (let first = 0; first < totalRows; first += batchRows) {
    const body = generateBatch(first, Math.min(batchRows, totalRows - first), totalRows)
    const insertStarted = performance.now()
    await clickhouse.insertRaw(insertStatement, body, undefined, insertSettings(batchRows))
    insertMs += performance.now() - insertStarted
  }
  return { totalS: (performance.now() - started) / 1000, insertS: insertMs / 1000 }
}

/** After a benchmark: keeps the database (`--keep`, or one it was given) or drops it, and closes the client. */
export async function releaseDatabase (clickhouse: ClickHouse, database: string, keep: boolean): Promise<void> {
  if (keep) {
    console.log(`\nkept database ${database}`)
  } else {
    await clickhouse.command(`DROP DATABASE IF EXISTS \`${database}\``)
  }
  await clickhouse.close()
}
