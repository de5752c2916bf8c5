// Process entry: read the environment, validate the config, start the service, print what to do
// next, and shut down cleanly on SIGTERM/SIGINT. The only module that touches process.env,
// listens or installs signal handlers.
import { ConfigError, loadConfig } from './config.ts'
import type { Config } from './config.ts'
import { createLogger } from './logger.ts'
import { createApp } from './app.ts'
import { bootstrapTokenProblem } from './accounts/bootstrap.ts'
import { MissingClickHouseError } from './storage/managed-clickhouse.ts'
import { ChdbDirectoryError, ChdbMissingError, chdbThreadPoolSize, isChdbUrl } from './storage/chdb-engine.ts'
import { DataDirInUseError } from './storage/managed-clickhouse/leftovers.ts'

function printWelcome (config: Config, baseUrl: string, token: string | null, tokenFile: string, keptTokenFile: string | null): void {
  const tokenLine = (token
    ? `Admin token (shown once, also saved to ${tokenFile}):\n\n    ${token}\n`
    : `Admin token: in ${tokenFile} (written at the first start)\n`) +
    (keptTokenFile === null ? '' : `\nThe admin token that was in ${tokenFile} (another database's) is now in ${keptTokenFile}.\n`)
  const auth = token || `$(cat ${tokenFile})`
  process.stderr.write(`
Sluice is running at ${baseUrl}  (data: ${config.dataDir})

${tokenLine}
Try it:

    export SLUICE_TOKEN=${auth}
    curl -s -X POST ${baseUrl}/api/streams -H "Authorization: Bearer $SLUICE_TOKEN" \\
         -H 'Content-Type: application/json' -d '{"name":"web"}'
    curl -s -X POST ${baseUrl}/api/streams/web/ingest-token -H "Authorization: Bearer $SLUICE_TOKEN" \\
         -H 'Content-Type: application/json' -d '{}'

Stop with Ctrl-C.
`)
}

/**
 * The exit code of a start that failed for a reason of its own (docs/api.md section 8.1; sysexits.h):
 * a setting 78 (EX_CONFIG), no ClickHouse to run 69 (EX_UNAVAILABLE), a directory Sluice cannot
 * take 73 (EX_CANTCREAT); null for any other error. `sluice serve` and `sluice migrate` alike.
 */
export function startFailureExitCode (err: unknown): number | null {
  if (err instanceof ConfigError) return 78
  if (err instanceof MissingClickHouseError || err instanceof ChdbMissingError) return 69
  if (err instanceof ChdbDirectoryError || err instanceof DataDirInUseError) return 73
  return null
}

export async function main (env: Record<string, string | undefined> = process.env): Promise<void> {
  let config: Config
  try {
    config = loadConfig({ env })
    const tokenProblem = bootstrapTokenProblem(config.bootstrapToken)
    if (tokenProblem !== null) throw new ConfigError([tokenProblem])
  } catch (err) {
    const code = startFailureExitCode(err)
    if (code === null) throw err
    process.stderr.write(`sluice: ${(err as Error).message}\nSluice did not start.\n`)
    process.exit(code)
  }
  // The embedded engine runs each statement on a libuv thread-pool thread for as long as it runs
  // (lib/storage/chdb-clickhouse.ts), beside zlib's gzip decoding: more threads than its session
  // pool, so that reads cannot take every thread. Read once, when the pool first gets work.
  if (isChdbUrl(config.clickhouse.url) && process.env.UV_THREADPOOL_SIZE === undefined) process.env.UV_THREADPOOL_SIZE = String(chdbThreadPoolSize)
  const log = createLogger({ level: config.log.level })

  let app: Awaited<ReturnType<typeof createApp>>
  try {
    app = await createApp(config, log)
  } catch (err) {
    const code = startFailureExitCode(err)
    if (code !== null) {
      process.stderr.write(`sluice: ${(err as Error).message}\n${code === 69 ? '' : 'Sluice did not start.\n'}`)
      process.exit(code)
    }
    log.error('start failed', { err })
    process.exit(1)
  }

  let address: Awaited<ReturnType<typeof app.listen>>
  try {
    address = await app.listen()
  } catch (err) {
    // The port taken, or a host that is no address of this machine: said as a setting's problem
    // (README, "Configuration"), after the managed ClickHouse is stopped again.
    const code = (err as NodeJS.ErrnoException).code
    const why = code === 'EADDRINUSE' ? 'the port is in use' : code === 'EACCES' ? 'permission denied' : `${code ?? 'error'}: ${(err as Error).message}`
    process.stderr.write(`sluice: cannot listen on ${config.server.host}:${config.server.port} (server.host, server.port; SLUICE_HOST, SLUICE_PORT): ${why}\nSluice did not start.\n`)
    await app.close().catch(() => {})
    process.exit(78) // EX_CONFIG
  }
  const baseUrl = `http://${address.address.includes(':') ? `[${address.address}]` : address.address}:${address.port}`
  log.info('listening', { url: baseUrl, clickhouse: app.clickhouse.url, managed_clickhouse: app.managed !== null })
  printWelcome(config, baseUrl, app.bootstrap.createdToken, app.bootstrap.tokenFile, app.bootstrap.keptTokenFile)

  let stopping = false
  const stop = (signal: string): void => {
    if (stopping) return
    stopping = true
    log.info('shutting down', { signal })
    app.close().then(() => {
      log.info('stopped')
      process.exit(0)
    }, (err: unknown) => {
      log.error('shutdown failed', { err })
      process.exit(1)
    })
  }
  process.on('SIGTERM', () => stop('SIGTERM'))
  process.on('SIGINT', () => stop('SIGINT'))
}

if (import.meta.main) await main()
