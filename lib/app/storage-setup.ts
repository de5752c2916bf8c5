// The storage side of the app: ClickHouse (managed or given), the schema, the metadata cache and,
// in cluster mode, the node registry. openStorage() brings them up in that order and, when one
// fails, stops those already started before it throws.
import { join } from 'node:path'
import type { Config } from '../config.ts'
import type { Logger } from '../logger.ts'
import { createClickHouse } from '../storage/clickhouse.ts'
import type { ClickHouse } from '../storage/clickhouse.ts'
import { startManagedClickHouse } from '../storage/managed-clickhouse.ts'
import type { ManagedClickHouse } from '../storage/managed-clickhouse.ts'
import { migrate } from '../storage/migrate.ts'
import type { ServerFeatures } from '../storage/server-features.ts'
import { MetadataStore } from '../storage/metadata-store.ts'
import { NodeRegistry } from '../storage/node-registry.ts'

export interface Storage {
  clickhouse: ClickHouse
  /** Managed ClickHouse process, when Sluice started its own. */
  managed: ManagedClickHouse | null
  store: MetadataStore
  /** Cluster mode only: the live nodes, which share the per-org limits. */
  registry: NodeRegistry | undefined
  /** What this server version gave the schema (docs/schema-versions.md); none in cluster mode. */
  features: ServerFeatures
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

/** Connects, migrates, fills the metadata cache and (cluster mode) joins the node registry. */
export async function openStorage (config: Config, log: Logger): Promise<Storage> {
  const { clickhouse, managed } = await connectClickHouse(config, log)
  const partial: Partial<Storage> & Pick<Storage, 'clickhouse' | 'managed'> = { clickhouse, managed }
  try {
    const { features } = await migrate(clickhouse, log, undefined, { cluster: config.clickhouse.cluster })
    partial.store = new MetadataStore({
      clickhouse, log, refreshIntervalMs: config.metadata.refreshIntervalMs, cluster: config.clickhouse.cluster,
      lightweightDelete: features.has('lightweightDelete'), retentionTtl: features.has('ttl'),
    })
    await partial.store.start()
    // Cluster mode: the live nodes share the per-org limits (lib/storage/node-registry.ts).
    if (config.clickhouse.cluster !== null) {
      partial.registry = new NodeRegistry({ clickhouse, log: log.child({ component: 'nodes' }), intervalMs: config.metadata.refreshIntervalMs })
      await partial.registry.start()
    }
    return { clickhouse, managed, store: partial.store, registry: partial.registry, features }
  } catch (err) {
    await abandonStorage(partial)
    throw err
  }
}

/** Stops the registry, the cache, the client and the managed ClickHouse, in that order. */
export async function closeStorage (s: Storage): Promise<void> {
  await s.registry?.stop()
  await s.store.stop()
  await s.clickhouse.close()
  if (s.managed) await s.managed.stop()
}

/** closeStorage() for a start that failed: whatever was started is stopped, errors ignored. */
export async function abandonStorage (s: Partial<Storage> & Pick<Storage, 'clickhouse' | 'managed'>): Promise<void> {
  await s.registry?.stop().catch(() => {})
  await s.store?.stop().catch(() => {})
  await s.clickhouse.close().catch(() => {})
  if (s.managed) await s.managed.stop().catch(() => {})
}
