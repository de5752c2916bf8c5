// Wires the service together from its parts in lib/app/: the storage (ClickHouse, managed or
// given; migrations; the metadata cache), the accounts and the bootstrap, ingest (workers, batch
// writer, admission), live tails, the routes and the HTTP server. createApp() brings it all up;
// close() takes it down in the reverse order (lib/app/lifecycle.ts).
import { availableParallelism } from 'node:os'
import type { AddressInfo } from 'node:net'
import type { Piscina } from 'piscina'
import type { Config } from './config.ts'
import type { Logger } from './logger.ts'
import type { ClickHouse } from './storage/clickhouse.ts'
import type { ManagedClickHouse } from './storage/managed-clickhouse.ts'
import type { MetadataStore } from './storage/metadata-store.ts'
import type { BatchWriter } from './storage/batch-writer.ts'
import { IdempotencyStore } from './storage/idempotency-store.ts'
import { legacyAttrsBefore } from './storage/legacy-attrs.ts'
import { detectFold } from './query/filter-sql.ts'
import { startRetentionJanitor } from './storage/retention.ts'
import { Accounts } from './accounts/accounts.ts'
import { bootstrap } from './accounts/bootstrap.ts'
import type { BootstrapResult } from './accounts/bootstrap.ts'
import { Authenticator } from './auth/authenticate.ts'
import { AuditLog } from './audit/audit-log.ts'
import { Router } from './http/router.ts'
import { createHttpServer } from './http/server.ts'
import type { HttpServer } from './http/server.ts'
import type { Admission } from './ingest/admission.ts'
import { IdempotencyCache } from './ingest/idempotency.ts'
import { createSluiceMetrics } from './metrics/metrics.ts'
import type { SluiceMetrics } from './metrics/metrics.ts'
import type { TailHub } from './live/tail-hub.ts'
import { ReadLimits } from './query/read-limits.ts'
import { abandonStorage, openStorage } from './app/storage-setup.ts'
import { startIngest } from './app/ingest-setup.ts'
import { startLive } from './app/live-setup.ts'
import { registerRoutes } from './app/routes.ts'
import { closeOnce } from './app/lifecycle.ts'

export interface App {
  config: Config
  /** The routes, for test/http/openapi.test.ts (every route documented). */
  router: Router
  clickhouse: ClickHouse
  store: MetadataStore
  accounts: Accounts
  bootstrap: BootstrapResult
  /** Managed ClickHouse process, when Sluice started its own. */
  managed: ManagedClickHouse | null
  http: HttpServer
  writer: BatchWriter
  pool: Piscina
  admission: Admission
  metrics: SluiceMetrics
  tailHub: TailHub
  /** The read limits (tests take slots to see the 429). */
  reads: ReadLimits
  audit: AuditLog
  listen (): Promise<AddressInfo>
  close (): Promise<void>
}

/** os_thread_priority of reads where the server has it: the lowest priority (docs/api.md section 7.9). */
const readNiceness = 19

export interface AppOptions {
  /** Clock (ms) for token expiry; tests move it instead of waiting. */
  now?: () => number
}

export async function createApp (config: Config, log: Logger, options: AppOptions = {}): Promise<App> {
  const storage = await openStorage(config, log)
  const { clickhouse, managed, store, registry, features } = storage
  try {
    const now = options.now ?? Date.now
    const accounts = new Accounts(store, config.tokens, now)
    const boot = await bootstrap(accounts, { dataDir: config.dataDir, bootstrapToken: config.bootstrapToken, log })
    const audit = new AuditLog({ clickhouse, log: log.child({ component: 'audit' }), now })
    audit.start()
    const auth = new Authenticator(store, now, (address, code) => audit.noteAuthFailure(address, code))

    const metrics = createSluiceMetrics()
    const ingest = await startIngest({ config, log, clickhouse, registry, metrics })
    const live = startLive(config, log, registry, metrics)
    // Idempotency keys in ClickHouse too: a retry holds on every node and after a restart.
    const sharedKeys = new IdempotencyStore({
      clickhouse, log: log.child({ component: 'idempotency' }),
      // A pending key's attempt is surely over after the writer's budget (docs/api.md section 6.7).
      holdMs: config.writer.retryTimeoutMs + config.writer.attemptTimeoutMs + 1_000,
      // A pending key's rows are counted, and a partly stored attempt's deleted, where the writer
      // puts them: the events table, or in cluster mode every host's local table (section 6.7).
      repairPartial: true,
      ...(ingest.shards === undefined ? {} : { shards: ingest.shards, eventsTable: 'events_local' }),
      onFailure: () => { metrics.storageRefusals.inc() },
    })
    // A read on an otherwise idle server takes more threads (read-limits.ts); cluster mode keeps
    // query.maxThreads: the other nodes' ingest into the same servers is not seen here.
    const idleThreads = config.clickhouse.cluster !== null ? config.query.maxThreads : config.query.idleThreads || availableParallelism()
    const reads = new ReadLimits(config.query, now, undefined, {
      idleThreads,
      ingestIdleMs: () => Math.min(ingest.admission.idleMs(), ingest.writer.idleMs()),
      niceness: features.has('threadPriority') ? readNiceness : 0,
    })
    const router = new Router()
    registerRoutes(router, {
      config, clickhouse, store, accounts, auth, audit, ingest, live, metrics, reads,
      idempotency: new IdempotencyCache(undefined, undefined, undefined, sharedKeys),
      // Bodies recognised as shippers' retries: at most 10,000 answers in memory, the rest in ClickHouse.
      // Their lookup comes after the body is parsed, inside the writer's budget: through an outage
      // it keeps trying as the writer would (docs/api.md section 6.7, "Retries without a key").
      retries: new IdempotencyCache(undefined, 10_000, undefined, sharedKeys, config.writer.retryTimeoutMs),
      legacyAttrsBefore: await legacyAttrsBefore(clickhouse),
      // docs/schema-versions.md: the skip indexes' pre-filters, and how this server folds text.
      indexes: features.has('skipIndexes'), fold: await detectFold(clickhouse),
    })
    registerGauges(metrics, ingest, live.tailHub)
    // Reads past their limits are counted by sluice_http_requests_total's status (429, 422, 504).
    metrics.registry.gauge('sluice_reads_running', 'Reads (events, stats, fields, context, export) running, every org', () => reads.totals.running)
    metrics.registry.gauge('sluice_reads_waiting', 'Reads waiting in their org\'s queue for a slot (query.maxQueueMs), every org', () => reads.totals.waiting)

    const janitor = startRetentionJanitor(clickhouse, store, log.child({ component: 'retention' }), undefined, config.clickhouse.cluster,
      features.has('lightweightDelete'))
    const http = createHttpServer({
      config: config.server, router, log,
      onResponse: (route, method, status, ms) => {
        metrics.requests.inc({ route, method, status })
        metrics.requestSeconds.observe(ms / 1000, { route })
      },
    })
    metrics.registry.gauge('sluice_http_in_flight', 'HTTP requests being handled', () => http.inFlight)

    const { pool, writer, admission } = ingest
    return {
      config, router, clickhouse, store, accounts, bootstrap: boot, managed, http, writer, pool, admission, metrics, tailHub: live.tailHub, reads, audit,
      listen: () => http.listen(config.server.port, config.server.host),
      close: closeOnce({ storage, ingest, live, http, sharedKeys, janitor, audit }),
    }
  } catch (err) {
    await abandonStorage(storage)
    throw err
  }
}

function registerGauges (metrics: SluiceMetrics, { admission, writer, pool }: { admission: Admission, writer: BatchWriter, pool: Piscina }, tailHub: TailHub): void {
  metrics.registry.gauge('sluice_tail_clients', 'Live tail clients connected', () => tailHub.clientCount)
  metrics.registry.gauge('sluice_uncommitted_bytes', 'Bytes accepted and not yet committed', () => admission.uncommittedBytes)
  metrics.registry.gauge('sluice_ingest_reading_requests', 'Ingest requests reading and parsing their bodies', () => admission.readingRequests)
  metrics.registry.gauge('sluice_ingest_waiting_requests', 'Ingest requests waiting to read their bodies', () => admission.waitingRequests)
  metrics.registry.gauge('sluice_ingest_reading_bytes', 'Decompressed bytes of the ingest bodies being read', () => admission.readingBytes)
  metrics.registry.gauge('sluice_writer_pending_rows', 'Rows waiting for or in a ClickHouse insert', () => writer.pendingRows)
  metrics.registry.gauge('sluice_worker_queue', 'Parse tasks waiting for a worker thread', () => pool.queueSize)
}
