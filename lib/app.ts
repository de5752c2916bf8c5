// Wires the service together: ClickHouse (managed or given), migrations, the metadata cache, the
// bootstrap, the routes and the HTTP server. start() brings it all up; close() takes it down in
// the reverse order: stop taking requests, finish those in flight, flush what they wrote, stop
// the managed ClickHouse.
import { join } from 'node:path'
import type { AddressInfo } from 'node:net'
import type { Config } from './config.ts'
import type { Logger } from './logger.ts'
import { createClickHouse } from './storage/clickhouse.ts'
import type { ClickHouse } from './storage/clickhouse.ts'
import { startManagedClickHouse } from './storage/managed-clickhouse.ts'
import type { ManagedClickHouse } from './storage/managed-clickhouse.ts'
import { isMigrated, migrate } from './storage/migrate.ts'
import { MetadataStore } from './storage/metadata-store.ts'
import { Accounts } from './accounts/accounts.ts'
import { bootstrap } from './accounts/bootstrap.ts'
import type { BootstrapResult } from './accounts/bootstrap.ts'
import { Authenticator } from './auth/authenticate.ts'
import { Router } from './http/router.ts'
import { createHttpServer } from './http/server.ts'
import type { HttpServer } from './http/server.ts'
import { registerHealthRoutes } from './http/health-route.ts'
import { registerStreamRoutes } from './streams/streams-route.ts'
import { registerIngestTokenRoutes } from './streams/ingest-tokens-route.ts'
import { registerTokenRoutes } from './accounts/pats-route.ts'
import { registerOrgRoutes } from './accounts/orgs-route.ts'
import { Piscina } from 'piscina'
import { createBatchWriter, writerSettings } from './storage/batch-writer.ts'
import { ShardSet } from './storage/shard-set.ts'
import { NodeRegistry } from './storage/node-registry.ts'
import type { BatchWriter } from './storage/batch-writer.ts'
import { eventColumns } from './ingest/parse-task.ts'
import { Admission } from './ingest/admission.ts'
import { IdempotencyCache } from './ingest/idempotency.ts'
import { IdempotencyStore } from './storage/idempotency-store.ts'
import { registerIngestRoute } from './ingest/ingest-route.ts'
import type { ParseWorkerData } from './parse-worker-entry.ts'
import { registerOtlpRoutes } from './inputs/otlp/otlp-route.ts'
import { registerLokiRoutes } from './inputs/loki/loki-route.ts'
import { registerElasticBulkRoutes } from './inputs/elastic/bulk-route.ts'
import { registerElasticHandshakeRoutes } from './inputs/elastic/handshake-route.ts'
import { createSluiceMetrics } from './metrics/metrics.ts'
import type { SluiceMetrics } from './metrics/metrics.ts'
import { registerMetricsRoute } from './metrics/metrics-route.ts'
import { TailHub } from './live/tail-hub.ts'
import { ClusterLive } from './live/cluster-live.ts'
import { registerForwardRoute } from './live/forward-route.ts'
import { registerTailRoute } from './live/tail-route.ts'
import { registerEventsRoute } from './query/events-route.ts'
import { registerStatsRoute } from './query/stats-route.ts'
import { registerFieldsRoute } from './query/fields-route.ts'
import { registerExportRoute } from './query/export-route.ts'
import { ReadLimits } from './query/read-limits.ts'
import { legacyAttrsBefore } from './storage/legacy-attrs.ts'
import { startRetentionJanitor } from './storage/retention.ts'
import { AuditLog } from './audit/audit-log.ts'
import { registerAuditRoute } from './audit/audit-route.ts'
import { registerDashboardRoutes } from './dashboard/dashboard-route.ts'
import { registerOpenApiRoute } from './http/openapi-route.ts'
import { forMainThreadOnly, workerYoungGenerationMb } from './node-flags.ts'

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

/** Starts ClickHouse when it is Sluice's to run, or connects to the configured one. */
export async function connectClickHouse (config: Config, log: Logger): Promise<{ clickhouse: ClickHouse, managed: ManagedClickHouse | null }> {
  let managed: ManagedClickHouse | null = null
  let url = config.clickhouse.url
  if (url === null) {
    managed = await startManagedClickHouse({
      dataDir: join(config.dataDir, 'clickhouse'),
      binary: config.clickhouse.binary,
      startTimeoutMs: config.clickhouse.startTimeoutMs,
      log: log.child({ component: 'clickhouse' }),
    })
    url = managed.url
  }
  const clickhouse = createClickHouse({
    url,
    user: config.clickhouse.user,
    password: config.clickhouse.password,
    database: config.clickhouse.database,
    requestTimeoutMs: config.clickhouse.requestTimeoutMs,
  })
  return { clickhouse, managed }
}

export interface AppOptions {
  /** Clock (ms) for token expiry; tests move it instead of waiting. */
  now?: () => number
}

export async function createApp (config: Config, log: Logger, options: AppOptions = {}): Promise<App> {
  const { clickhouse, managed } = await connectClickHouse(config, log)
  let store: MetadataStore | undefined
  let registry: NodeRegistry | undefined
  try {
    await migrate(clickhouse, log, undefined, { cluster: config.clickhouse.cluster })
    store = new MetadataStore({ clickhouse, log, refreshIntervalMs: config.metadata.refreshIntervalMs, cluster: config.clickhouse.cluster })
    await store.start()
    // Cluster mode: the live nodes share the per-org limits (lib/storage/node-registry.ts).
    if (config.clickhouse.cluster !== null) {
      registry = new NodeRegistry({ clickhouse, log: log.child({ component: 'nodes' }), intervalMs: config.metadata.refreshIntervalMs })
      await registry.start()
    }
    const now = options.now ?? Date.now
    const accounts = new Accounts(store, config.tokens, now)
    const boot = await bootstrap(accounts, { dataDir: config.dataDir, bootstrapToken: config.bootstrapToken, log })
    const audit = new AuditLog({ clickhouse, log: log.child({ component: 'audit' }), now })
    audit.start()
    const auth = new Authenticator(store, now, (address, code) => audit.noteAuthFailure(address, code))

    const router = new Router()
    registerHealthRoutes(router, async (signal) => {
      // Bounded by the route's signal: a hung ClickHouse must not hold /readyz (or a socket).
      if (!(await clickhouse.ping({ signal }))) return { ready: false, reason: 'ClickHouse unreachable' }
      try {
        return (await isMigrated(clickhouse, undefined, signal)) ? { ready: true } : { ready: false, reason: 'schema not migrated' }
      } catch {
        return { ready: false, reason: 'ClickHouse unreachable' }
      }
    })
    registerStreamRoutes(router, { auth, accounts, clickhouse, audit })
    registerIngestTokenRoutes(router, { auth, accounts, audit })
    registerTokenRoutes(router, { auth, accounts, audit })
    registerOrgRoutes(router, { auth, accounts, audit })
    registerAuditRoute(router, { auth, audit })

    const metrics = createSluiceMetrics()
    forMainThreadOnly() // the parse workers size their young generation by resourceLimits below (lib/node-flags.ts)
    const pool = new Piscina({
      // NDJSON tasks and the protocol inputs' whole-body tasks (lib/parse-worker-entry.ts).
      filename: new URL('./parse-worker-entry.ts', import.meta.url).href,
      workerData: { maxDecodedBytes: config.ingest.maxDecodedBytes } satisfies ParseWorkerData,
      minThreads: config.ingest.workers,
      maxThreads: config.ingest.workers,
      // No maxQueue: a full queue would reject tasks (500s). The queue is bounded instead by
      // WorkerDispatch (4 tasks per request) and admission (requests and bytes in progress).
      idleTimeout: Infinity,
      // A young generation of 2 x 16 MiB per worker instead of V8's 2 x 32 (lib/node-flags.ts).
      resourceLimits: { maxYoungGenerationSizeMb: workerYoungGenerationMb },
    })
    // Cluster mode: batches go to the shards' local tables (lib/storage/shard-set.ts).
    const shards = config.clickhouse.cluster === null ? undefined : new ShardSet({
      urls: (config.clickhouse.insertUrls ?? config.clickhouse.url ?? '').split(','),
      client: { user: config.clickhouse.user, password: config.clickhouse.password, database: config.clickhouse.database, requestTimeoutMs: config.clickhouse.requestTimeoutMs },
      log: log.child({ component: 'shards' }),
    })
    await shards?.start()
    const writer = createBatchWriter({
      clickhouse, table: shards === undefined ? 'events' : 'events_local', columns: eventColumns, format: 'RowBinary', log: log.child({ component: 'writer' }),
      ...writerSettings(config), shards, insertQuorum: config.clickhouse.insertQuorum,
      onInsert: (stats) => {
        admission.writerProgressed() // declared below; inserts start only once requests arrive
        if (stats.ok) {
          metrics.batchRows.observe(stats.rows)
          metrics.insertSeconds.observe(stats.durationMs / 1000)
        } else {
          metrics.insertFailures.inc()
          if (stats.ambiguous) {
            metrics.insertsUnanswered.inc()
            metrics.writesUnanswered.inc(undefined, stats.writes)
          }
        }
      },
    })
    const admission = new Admission({
      limits: config.limits,
      writerPendingBytes: () => writer.pendingBytes,
      writerNeedsDrain: () => writer.needsDrain,
      onReject: (reason) => metrics.rejected.inc({ reason }),
      liveNodes: registry === undefined ? undefined : () => registry!.liveNodes,
    })
    // Cluster mode with cluster.nodeUrl: tails see every node's events (lib/live/cluster-live.ts).
    const clusterLive = registry === undefined || config.cluster.nodeUrl === null || config.cluster.secret === null
      ? undefined
      : new ClusterLive({
        nodeUrl: config.cluster.nodeUrl.replace(/\/+$/, ''),
        secret: config.cluster.secret,
        peers: () => registry!.peers,
        beat: () => registry!.beat(),
        log: log.child({ component: 'cluster-live' }),
        onSent: (n) => tailForwarded.inc(undefined, n),
        onDropped: (n) => tailForwardDropped.inc(undefined, n),
      })
    const tailForwarded = metrics.registry.counter('sluice_tail_forwarded_events_total', 'Tail events forwarded to the other nodes\' clients (cluster mode)')
    const tailForwardDropped = metrics.registry.counter('sluice_tail_forward_dropped_events_total', 'Tail events not forwarded to another node: its queue was full, or it was down')
    const tailHub = new TailHub({
      maxTailsPerOrg: config.tail.maxPerOrg,
      maxBufferedBytes: config.tail.maxBufferedBytes,
      eventsPerSecond: config.tail.eventsPerSecond,
      peers: clusterLive,
      onTailsChange: clusterLive === undefined ? undefined : () => clusterLive.tailsChanged(),
    })
    // Idempotency keys in ClickHouse too: a retry holds on every node and after a restart.
    const sharedKeys = new IdempotencyStore({
      clickhouse, log: log.child({ component: 'idempotency' }),
      // A pending key's attempt is surely over after the writer's budget (docs/api.md section 6.7).
      holdMs: config.writer.retryTimeoutMs + config.writer.attemptTimeoutMs + 1_000,
      repairPartial: config.clickhouse.cluster === null,
      onFailure: () => { metrics.storageRefusals.inc() },
    })
    if (clusterLive !== undefined) {
      registry!.setAdvert(() => clusterLive.advert(tailHub.openTails()))
      registerForwardRoute(router, { secret: config.cluster.secret!, hub: tailHub })
    }
    const ingestDeps = {
      config: config.ingest, auth, store, admission, pool, writer, metrics, tailHub,
      idempotency: new IdempotencyCache(undefined, undefined, undefined, sharedKeys),
      // Bodies recognised as shippers' retries: at most 10,000 answers in memory, the rest in ClickHouse.
      retries: new IdempotencyCache(undefined, 10_000, undefined, sharedKeys),
    }
    registerIngestRoute(router, ingestDeps)
    registerOtlpRoutes(router, ingestDeps)
    registerLokiRoutes(router, ingestDeps)
    registerElasticBulkRoutes(router, ingestDeps)
    registerElasticHandshakeRoutes(router, { auth })
    registerTailRoute(router, { auth, accounts, hub: tailHub })
    const reads = new ReadLimits(config.query)
    const readDeps = { auth, accounts, clickhouse, reads, legacyAttrsBefore: await legacyAttrsBefore(clickhouse) }
    registerEventsRoute(router, readDeps)
    registerStatsRoute(router, readDeps)
    registerFieldsRoute(router, readDeps)
    registerExportRoute(router, readDeps)
    metrics.registry.gauge('sluice_tail_clients', 'Live tail clients connected', () => tailHub.clientCount)
    metrics.registry.gauge('sluice_uncommitted_bytes', 'Bytes accepted and not yet committed', () => admission.uncommittedBytes)
    metrics.registry.gauge('sluice_ingest_reading_requests', 'Ingest requests reading and parsing their bodies', () => admission.readingRequests)
    metrics.registry.gauge('sluice_ingest_waiting_requests', 'Ingest requests waiting to read their bodies', () => admission.waitingRequests)
    metrics.registry.gauge('sluice_ingest_reading_bytes', 'Decompressed bytes of the ingest bodies being read', () => admission.readingBytes)
    metrics.registry.gauge('sluice_writer_pending_rows', 'Rows waiting for or in a ClickHouse insert', () => writer.pendingRows)
    metrics.registry.gauge('sluice_worker_queue', 'Parse tasks waiting for a worker thread', () => pool.queueSize)
    registerMetricsRoute(router, metrics)
    registerDashboardRoutes(router)
    registerOpenApiRoute(router)

    const janitor = startRetentionJanitor(clickhouse, store, log.child({ component: 'retention' }), undefined, config.clickhouse.cluster)
    const http = createHttpServer({
      config: config.server, router, log,
      onResponse: (route, method, status, ms) => {
        metrics.requests.inc({ route, method, status })
        metrics.requestSeconds.observe(ms / 1000, { route })
      },
    })
    metrics.registry.gauge('sluice_http_in_flight', 'HTTP requests being handled', () => http.inFlight)
    const metadata = store
    let closed: Promise<void> | null = null

    return {
      config, router, clickhouse, store, accounts, bootstrap: boot, managed, http, writer, pool, admission, metrics, tailHub, reads, audit,
      listen: () => http.listen(config.server.port, config.server.host),
      close () {
        closed ??= (async () => {
          tailHub.close()
          clusterLive?.close()
          await http.close()
          await sharedKeys.close()
          await writer.close()
          await shards?.close()
          await pool.destroy()
          janitor.stop()
          await audit.close()
          await registry?.stop()
          await metadata.stop()
          await clickhouse.close()
          if (managed) await managed.stop()
        })()
        return closed
      },
    }
  } catch (err) {
    await registry?.stop().catch(() => {})
    await store?.stop().catch(() => {})
    await clickhouse.close().catch(() => {})
    if (managed) await managed.stop().catch(() => {})
    throw err
  }
}
