// Every HTTP route of the app, registered on one router in one place.
import type { Config } from '../config.ts'
import type { ClickHouse } from '../storage/clickhouse.ts'
import { isMigrated } from '../storage/migrate.ts'
import type { FoldMode } from '../query/filter-sql.ts'
import type { MetadataStore } from '../storage/metadata-store.ts'
import type { Accounts } from '../accounts/accounts.ts'
import type { Authenticator } from '../auth/authenticate.ts'
import type { AuditLog } from '../audit/audit-log.ts'
import type { Router } from '../http/router.ts'
import type { IdempotencyCache } from '../ingest/idempotency.ts'
import type { SluiceMetrics } from '../metrics/metrics.ts'
import type { ReadLimits } from '../query/read-limits.ts'
import type { Ingest } from './ingest-setup.ts'
import type { Live } from './live-setup.ts'
import { registerHealthRoutes } from '../http/health-route.ts'
import { registerStreamRoutes } from '../streams/streams-route.ts'
import { registerIngestTokenRoutes } from '../streams/ingest-tokens-route.ts'
import { registerTokenRoutes } from '../accounts/pats-route.ts'
import { registerOrgRoutes } from '../accounts/orgs-route.ts'
import { registerIngestRoute } from '../ingest/ingest-route.ts'
import { registerOtlpRoutes } from '../inputs/otlp/otlp-route.ts'
import { registerLokiRoutes } from '../inputs/loki/loki-route.ts'
import { registerElasticBulkRoutes } from '../inputs/elastic/bulk-route.ts'
import { registerElasticHandshakeRoutes } from '../inputs/elastic/handshake-route.ts'
import { registerMetricsRoute } from '../metrics/metrics-route.ts'
import { registerForwardRoute } from '../live/forward-route.ts'
import { registerTailRoute } from '../live/tail-route.ts'
import { registerEventsRoute } from '../query/events-route.ts'
import { registerStatsRoute } from '../query/stats-route.ts'
import { registerFieldsRoute } from '../query/fields-route.ts'
import { registerExportRoute } from '../query/export-route.ts'
import { registerAuditRoute } from '../audit/audit-route.ts'
import { registerDashboardRoutes } from '../dashboard/dashboard-route.ts'
import { registerOpenApiRoute } from '../http/openapi-route.ts'

export interface RouteDeps {
  config: Config
  clickhouse: ClickHouse
  store: MetadataStore
  accounts: Accounts
  auth: Authenticator
  audit: AuditLog
  ingest: Ingest
  live: Live
  idempotency: IdempotencyCache
  /** Bodies recognised as shippers' retries (docs/api.md section 6.7, ingest.dedupeRetries). */
  retries: IdempotencyCache
  metrics: SluiceMetrics
  reads: ReadLimits
  /** From lib/storage/legacy-attrs.ts, read once at start. */
  legacyAttrsBefore: number
  /** The events table has the pre-filters' skip indexes (ReadDeps.indexes). */
  indexes: boolean
  /** How the server folds text (ReadDeps.fold). */
  fold: FoldMode
}

export function registerRoutes (router: Router, d: RouteDeps): void {
  const { config, clickhouse, auth, accounts, audit } = d
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
  if (d.live.clusterLive !== undefined) registerForwardRoute(router, { secret: config.cluster.secret!, hub: d.live.tailHub })

  const { admission, pool, writer } = d.ingest
  const ingestDeps = {
    config: config.ingest, auth, store: d.store, admission, pool, writer, metrics: d.metrics, tailHub: d.live.tailHub, idempotency: d.idempotency, retries: d.retries,
  }
  registerIngestRoute(router, ingestDeps)
  registerOtlpRoutes(router, ingestDeps)
  registerLokiRoutes(router, ingestDeps)
  registerElasticBulkRoutes(router, ingestDeps)
  registerElasticHandshakeRoutes(router, { auth })
  registerTailRoute(router, { auth, accounts, hub: d.live.tailHub })

  const readDeps = { auth, accounts, clickhouse, reads: d.reads, legacyAttrsBefore: d.legacyAttrsBefore, indexes: d.indexes, fold: d.fold, exportStallMs: config.query.exportStallMs }
  registerEventsRoute(router, readDeps)
  registerStatsRoute(router, readDeps)
  registerFieldsRoute(router, readDeps)
  registerExportRoute(router, readDeps)
  registerMetricsRoute(router, d.metrics)
  registerDashboardRoutes(router)
  registerOpenApiRoute(router)
}
