// How the app stops: the reverse of how it starts. Stop taking requests and tails, finish the
// requests in flight, flush what they wrote, stop the workers and background jobs, then the
// storage (lib/app/storage-setup.ts). close() may be called any number of times; all calls share
// the one shutdown.
import type { HttpServer } from '../http/server.ts'
import type { IdempotencyStore } from '../storage/idempotency-store.ts'
import type { AuditLog } from '../audit/audit-log.ts'
import type { Ingest } from './ingest-setup.ts'
import type { Live } from './live-setup.ts'
import { closeStorage } from './storage-setup.ts'
import type { Storage } from './storage-setup.ts'

export interface RunningParts {
  storage: Storage
  ingest: Ingest
  live: Live
  http: HttpServer
  sharedKeys: IdempotencyStore
  janitor: { stop (): void }
  audit: AuditLog
}

export function closeOnce (p: RunningParts): () => Promise<void> {
  let closed: Promise<void> | null = null
  return () => {
    closed ??= (async () => {
      p.live.tailHub.close()
      p.live.clusterLive?.close()
      await p.http.close()
      await p.sharedKeys.close()
      await p.ingest.writer.close()
      await p.ingest.shards?.close()
      await p.ingest.pool.destroy()
      p.janitor.stop()
      await p.audit.close()
      await closeStorage(p.storage)
    })()
    return closed
  }
}
