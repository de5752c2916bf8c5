// Where the embedded engine comes from. `CLICKHOUSE_URL=chdb:<directory>` runs Sluice on the npm
// package `chdb` (ClickHouse 26.x in-process, about 550 MB). It is not one of Sluice's own
// dependencies, so that a normal `npm ci` does not download it: engines/chdb/package.json pins
// it with its lockfile, `.ci/ensure-deps.sh` (run by `npm start` and `npm test`) installs it
// there when CLICKHOUSE_URL starts with chdb:, and this module loads it from that directory.
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'

/** The directory of the engine's own package.json and node_modules. */
export const chdbEngineDir = fileURLToPath(new URL('../../engines/chdb/', import.meta.url))

/** The one command that installs the engine (also what .ci/ensure-deps.sh runs). */
export const chdbInstallCommand = 'npm install --prefix engines/chdb --no-save --no-audit --no-fund'

const scheme = 'chdb:'

/**
 * Sessions of the gateway's pool (statements at once), and the libuv thread-pool size lib/main.ts
 * asks for on this engine: chdb runs each statement on a thread-pool thread for as long as it
 * runs, and zlib (gzip bodies) and fs share the pool, 4 threads by default. With 4 sessions on 16
 * threads, 12 stay free for the rest whatever the reads do.
 */
export const chdbSessions = 4
export const chdbThreadPoolSize = 16

/** True when `url` names the embedded engine (`chdb:<directory>`). */
export function isChdbUrl (url: string | null): url is string {
  return url !== null && url.startsWith(scheme)
}

/** The data directory of a `chdb:<directory>` URL, as written (relative or absolute). */
export function chdbDirectory (url: string): string {
  return url.slice(scheme.length)
}

export class ChdbMissingError extends Error {
  constructor (cause: unknown) {
    super(`CLICKHOUSE_URL=chdb:... needs the embedded engine, which is not installed. Run: ${chdbInstallCommand}`, { cause })
    this.name = 'ChdbMissingError'
  }
}

/** The embedded engine could not open its directory (not a directory, not writable, in use, or a managed server's). */
export class ChdbDirectoryError extends Error {
  constructor (directory: string, cause: unknown, advice = 'It must be a writable directory ' +
      'that no other process uses (one process at a time holds it: another Sluice on it?)') {
    const reason = cause instanceof Error ? cause.message.split('\n')[0] : String(cause)
    super(`the embedded ClickHouse cannot open its directory ${directory}: ${reason}. ${advice}`, { cause })
    this.name = 'ChdbDirectoryError'
  }
}

/** What Sluice uses of chdb 3.x (its index.d.ts, narrowed). */
export interface ChdbResult {
  bytes (): Uint8Array
  text (): string
}

export interface ChdbSession {
  queryAsync (sql: string, options?: { format?: string, signal?: AbortSignal }): Promise<ChdbResult>
  insert (params: {
    table: string
    columns?: readonly string[]
    format: string
    values: Buffer
    settings?: Record<string, string | number>
  }): Promise<{ rowsWritten: number }>
  close (): void
}

export interface ChdbModule {
  Session: new (path: string) => ChdbSession
  version (): { libchdb?: string, chdb?: string }
}

let loaded: ChdbModule | undefined

/** Loads chdb from engines/chdb; throws ChdbMissingError (with the command to run) when it is not installed. */
export function loadChdb (): ChdbModule {
  if (loaded !== undefined) return loaded
  const require = createRequire(chdbEngineDir + 'package.json')
  try {
    loaded = require('chdb') as ChdbModule
  } catch (err) {
    if ((err as { code?: string }).code === 'MODULE_NOT_FOUND') throw new ChdbMissingError(err)
    throw err
  }
  return loaded
}
