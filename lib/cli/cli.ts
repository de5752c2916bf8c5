#!/usr/bin/env -S MALLOC_ARENA_MAX=2 MALLOC_MMAP_THRESHOLD_=262144 node --max-semi-space-size=16
// `sluice`: the command line. `serve` and `migrate` run locally against the configured ClickHouse;
// the others talk to a running Sluice over HTTP (SLUICE_URL, default http://127.0.0.1:8080) with a
// PAT (SLUICE_TOKEN, else ${SLUICE_DATA_DIR:-./data}/admin-token) or, for `send`, an ingest token
// (SLUICE_INGEST_TOKEN or --token).
import { readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { loadConfig } from '../config.ts'
import { createLogger } from '../logger.ts'
import { connectClickHouse } from '../app/storage-setup.ts'
import { migrate } from '../storage/migrate.ts'
import { main, startFailureExitCode } from '../main.ts'
import { ApiClient, CliError } from './api-client.ts'
import { streamCommand } from './stream-command.ts'
import { tokenCommand } from './token-command.ts'
import { defaultChunkBytes, defaultParallel, openInput, sendCommand } from './send-command.ts'
import { tailCommand } from './tail-command.ts'
import { integerOption, readArgs } from './cli-args.ts'

const help = `sluice — log ingestion into ClickHouse

  sluice serve                         start the server (same as npm start)
  sluice migrate                       apply schema migrations and exit
  sluice stream create NAME [--description TEXT] [--retention-days N]
  sluice stream list
  sluice stream delete NAME --yes      the stream, its events and its ingest tokens
  sluice token create STREAM [--ttl SECONDS] [--name NAME]
  sluice token list STREAM
  sluice token revoke STREAM ID
  sluice send STREAM FILE|- [--token INGEST_TOKEN] [--parallel N] [--chunk-bytes N]
                                       N requests in flight (default 4, at most 16) of
                                       N bytes of lines each (default 1 MiB); failures are
                                       printed with their line in FILE; exit 2 if any line failed
                                       FILE may be gzip'd (read as such by its first bytes)
  sluice tail STREAM [--q FILTER] [--json]
                                       until the tail ends: exit 3 when the stream was
                                       deleted, 1 when the connection to Sluice ended

Environment: SLUICE_URL (default http://127.0.0.1:8080), SLUICE_TOKEN (a PAT; default: the
admin token in \${SLUICE_DATA_DIR:-./data}/admin-token), SLUICE_INGEST_TOKEN (for send).
The server reads the variables listed in the README's configuration table.`

function out (line: string): void { process.stdout.write(line + '\n') }
function err (line: string): void { process.stderr.write(line + '\n') }

function patFromEnv (env: NodeJS.ProcessEnv): string {
  if (env.SLUICE_TOKEN) return env.SLUICE_TOKEN
  const file = join(resolve(env.SLUICE_DATA_DIR ?? './data'), 'admin-token')
  try {
    return readFileSync(file, 'utf8').trim()
  } catch {
    throw new CliError('no_token', `set SLUICE_TOKEN to a personal access token (no ${file} here)`)
  }
}

async function run (argv: string[], env: NodeJS.ProcessEnv): Promise<number> {
  const [command, ...args] = argv
  const baseUrl = env.SLUICE_URL ?? 'http://127.0.0.1:8080'
  switch (command) {
    case 'serve':
      await main(env)
      return -1 // keeps running
    case 'migrate': {
      const config = loadConfig({ env })
      const log = createLogger({ level: config.log.level })
      const { clickhouse, managed } = await connectClickHouse(config, log)
      try {
        const r = await migrate(clickhouse, log, undefined, { cluster: config.clickhouse.cluster })
        out(r.applied.length ? `applied migrations ${r.applied.join(', ')}` : `schema is current (migration ${r.current})`)
      } finally {
        await clickhouse.close()
        await managed?.stop()
      }
      return 0
    }
    case 'stream':
      await streamCommand(new ApiClient({ baseUrl, token: patFromEnv(env) }), args, out)
      return 0
    case 'token':
      await tokenCommand(new ApiClient({ baseUrl, token: patFromEnv(env) }), args, out)
      return 0
    case 'send': {
      const usage = 'usage: sluice send STREAM FILE|- [--token INGEST_TOKEN] [--parallel N] [--chunk-bytes N]'
      const { values, positionals } = readArgs(args, { token: { type: 'string' }, parallel: { type: 'string' }, 'chunk-bytes': { type: 'string' } }, usage)
      const token = values.token ?? env.SLUICE_INGEST_TOKEN
      if (positionals.length !== 2) throw new CliError('usage', usage)
      if (!token) throw new CliError('no_token', 'set SLUICE_INGEST_TOKEN or pass --token with an ingest token')
      const totals = await sendCommand({
        baseUrl, token, stream: positionals[0], input: openInput(positionals[1]), out, err,
        parallel: integerOption('parallel', values.parallel, usage, defaultParallel),
        chunkBytes: integerOption('chunk-bytes', values['chunk-bytes'], usage, defaultChunkBytes),
      })
      out(`ingested ${totals.ingested}, failed ${totals.failed}, in ${totals.requests} requests (${totals.retries} retries)`)
      return totals.failed > 0 ? 2 : 0
    }
    case 'tail': {
      const usage = 'usage: sluice tail STREAM [--q FILTER] [--json]'
      const { values, positionals } = readArgs(args, { q: { type: 'string' }, json: { type: 'boolean' } }, usage)
      if (positionals.length !== 1) throw new CliError('usage', usage)
      const ended = await tailCommand({
        baseUrl, token: patFromEnv(env), stream: positionals[0], q: values.q ?? '', json: values.json ?? false, out, err,
      })
      if (ended === 'closed') throw new CliError('connection_lost', 'the tail ended: Sluice closed the connection (stopped or restarting)')
      if (ended === 'token_invalid') throw new CliError('invalid_token', 'the tail ended: the token was revoked or has expired', 403)
      err(`sluice: stream_deleted: ${positionals[0]} was deleted; the tail ended`)
      return 3
    }
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      out(help)
      return 0
    default:
      throw new CliError('usage', `unknown command ${command}\n\n${help}`)
  }
}

try {
  const code = await run(process.argv.slice(2), process.env)
  if (code >= 0) process.exitCode = code
} catch (err) {
  // A setting, a missing ClickHouse or a directory in use: its own exit code, as `serve` exits
  // (docs/api.md section 8.1), and no stack.
  const startCode = startFailureExitCode(err)
  if (err instanceof CliError || startCode !== null) {
    process.stderr.write(`sluice: ${err instanceof CliError ? `${err.code}: ` : ''}${(err as Error).message}\n`)
    process.exitCode = startCode ?? 1
  } else if (err instanceof Error && typeof (err as NodeJS.ErrnoException).code === 'string') {
    // A system error (a file that is not there, a socket refused): its code and message, no stack.
    process.stderr.write(`sluice: ${(err as NodeJS.ErrnoException).code}: ${err.message}\n`)
    process.exitCode = 1
  } else {
    throw err
  }
}
