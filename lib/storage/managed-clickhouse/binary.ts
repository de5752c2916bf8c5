// Finding the ClickHouse server binary for the managed ClickHouse, and the error that tells a
// user without one what to install or configure instead.
import { accessSync, constants, statSync } from 'node:fs'
import { basename, delimiter, join, resolve } from 'node:path'

/** How to start the server: the binary, and the arguments that come before the config file. */
export interface ClickHouseCommand { command: string, args: string[] }

const searchDirs = ['/usr/sbin', '/usr/bin', '/usr/local/bin']

export class MissingClickHouseError extends Error {
  constructor (binary?: string | null) {
    super((binary
      ? `The ClickHouse binary "${binary}" was not found or is not executable.`
      : `No ClickHouse binary found (looked for clickhouse-server and clickhouse on PATH and in ${searchDirs.join(', ')}).`) +
      ' Without CLICKHOUSE_URL Sluice runs its own ClickHouse, so either install it' +
      ' (Debian/Ubuntu: `sudo apt-get install clickhouse-server`; elsewhere: https://clickhouse.com/docs/en/install)' +
      ' or set CLICKHOUSE_URL to an existing server, e.g. CLICKHOUSE_URL=http://127.0.0.1:8123.')
    this.name = 'MissingClickHouseError'
  }
}

function isExecutableFile (file: string): boolean {
  try {
    accessSync(file, constants.X_OK)
    return statSync(file).isFile()
  } catch {
    return false
  }
}

/** `clickhouse-server` is preferred; the single `clickhouse` binary needs `server` as first argument. */
export function findClickHouseBinary (
  explicit?: string | null,
  dirs: readonly string[] = [...(process.env.PATH ?? '').split(delimiter), ...searchDirs],
): ClickHouseCommand | null {
  const names = explicit ? [explicit] : ['clickhouse-server', 'clickhouse']
  for (const name of names) {
    const candidates = name.includes('/') ? [resolve(name)] : dirs.filter(Boolean).map((dir) => join(dir, name))
    const found = candidates.find(isExecutableFile)
    if (found) return { command: found, args: basename(found) === 'clickhouse' ? ['server'] : [] }
  }
  return null
}
