// The ingest side of the app: the parse workers, the shards (cluster mode), the batch writer and
// admission. The writer tells admission when an insert ends (room may have opened for waiting
// bodies) and admission reads the writer's queue: the writer comes first, and admission subscribes
// to its inserts once it exists.
import { Piscina } from 'piscina'
import type { Config } from '../config.ts'
import type { Logger } from '../logger.ts'
import type { ClickHouse, EventInsertFormat } from '../storage/clickhouse.ts'
import { createBatchWriter, writerSettings } from '../storage/batch-writer.ts'
import type { BatchWriter, InsertStats } from '../storage/batch-writer.ts'
import { ShardSet } from '../storage/shard-set.ts'
import type { NodeRegistry } from '../storage/node-registry.ts'
import { eventColumns } from '../ingest/parse-task.ts'
import { Admission } from '../ingest/admission.ts'
import type { ParseWorkerData } from '../parse-worker-entry.ts'
import type { SluiceMetrics } from '../metrics/metrics.ts'
import { forMainThreadOnly, workerYoungGenerationMb } from '../node-flags.ts'

export interface Ingest {
  pool: Piscina
  /** Cluster mode only: the shards' local tables that batches go to. */
  shards: ShardSet | undefined
  writer: BatchWriter
  admission: Admission
}

export interface IngestSetupOptions {
  config: Config
  log: Logger
  clickhouse: ClickHouse
  registry: NodeRegistry | undefined
  metrics: SluiceMetrics
}

/** The parse-worker pool; `rowFormat`: the rows as the storage engine takes them (ClickHouse#insertFormat). */
export function createParsePool (config: Config, rowFormat: EventInsertFormat): Piscina {
  forMainThreadOnly() // the parse workers size their young generation by resourceLimits below (lib/node-flags.ts)
  return new Piscina({
    // NDJSON tasks and the protocol inputs' whole-body tasks (lib/parse-worker-entry.ts).
    filename: new URL('../parse-worker-entry.ts', import.meta.url).href,
    workerData: { maxDecodedBytes: config.ingest.maxDecodedBytes, maxRecordBytes: config.ingest.maxLineBytes, rowFormat } satisfies ParseWorkerData,
    minThreads: config.ingest.workers,
    maxThreads: config.ingest.workers,
    // No maxQueue: a full queue would reject tasks (500s). The queue is bounded instead by
    // WorkerDispatch (4 tasks per request) and admission (requests and bytes in progress).
    idleTimeout: Infinity,
    // A young generation of 2 x 16 MiB per worker instead of V8's 2 x 32 (lib/node-flags.ts).
    resourceLimits: { maxYoungGenerationSizeMb: workerYoungGenerationMb },
  })
}

export async function startIngest ({ config, log, clickhouse, registry, metrics }: IngestSetupOptions): Promise<Ingest> {
  const pool = createParsePool(config, clickhouse.insertFormat)
  // Cluster mode: batches go to the shards' local tables (lib/storage/shard-set.ts).
  const shards = config.clickhouse.cluster === null ? undefined : new ShardSet({
    urls: (config.clickhouse.insertUrls ?? config.clickhouse.url ?? '').split(','),
    client: { user: config.clickhouse.user, password: config.clickhouse.password, database: config.clickhouse.database, requestTimeoutMs: config.clickhouse.requestTimeoutMs },
    log: log.child({ component: 'shards' }),
  })
  await shards?.start()
  const insertListeners: Array<(stats: InsertStats) => void> = []
  const writer = createBatchWriter({
    clickhouse, table: shards === undefined ? 'events' : 'events_local', columns: eventColumns, format: clickhouse.insertFormat, log: log.child({ component: 'writer' }),
    ...writerSettings(config), shards, insertQuorum: config.clickhouse.insertQuorum,
    onInsert: (stats) => {
      for (const listener of insertListeners) listener(stats)
    },
  })
  const admission = new Admission({
    limits: config.limits,
    writerPendingBytes: () => writer.pendingBytes,
    writerNeedsDrain: () => writer.needsDrain,
    writerStalled: () => writer.stalled,
    onReject: (reason) => metrics.rejected.inc({ reason }),
    liveNodes: registry === undefined ? undefined : () => registry.liveNodes,
  })
  insertListeners.push((stats) => {
    admission.writerProgressed()
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
  })
  return { pool, shards, writer, admission }
}
