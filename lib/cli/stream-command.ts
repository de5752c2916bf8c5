// `sluice stream create NAME [--description TEXT] [--retention-days N]`, `sluice stream list` and
// `sluice stream delete NAME --yes`.
import type { ApiClient } from './api-client.ts'
import { CliError } from './api-client.ts'
import { integerOption, readArgs } from './cli-args.ts'

const usage = 'usage: sluice stream create NAME [--description TEXT] [--retention-days N] | stream list | stream delete NAME --yes'

export async function streamCommand (client: ApiClient, args: string[], out: (line: string) => void): Promise<void> {
  const [sub, ...rest] = args
  if (sub === 'list') {
    readArgs(rest, {}, usage)
    const { streams } = await client.call<{ streams: Array<{ name: string, retention_days: number, description: string, created_at: string }> }>('GET', '/api/streams')
    if (streams.length === 0) out('no streams yet: sluice stream create NAME')
    for (const s of streams) out(`${s.name}\t${s.retention_days}d\t${s.created_at}\t${s.description}`)
    return
  }
  if (sub === 'create') {
    const { values, positionals } = readArgs(rest, { description: { type: 'string' }, 'retention-days': { type: 'string' } }, usage)
    if (positionals.length !== 1) throw new CliError('usage', usage)
    const body: Record<string, unknown> = { name: positionals[0] }
    if (values.description !== undefined) body.description = values.description
    const retention = integerOption('retention-days', values['retention-days'], usage)
    if (retention !== undefined) body.retention_days = retention
    const s = await client.call<{ name: string, retention_days: number }>('POST', '/api/streams', body)
    out(`created stream ${s.name} (retention ${s.retention_days} days)`)
    return
  }
  if (sub === 'delete') {
    const { values, positionals } = readArgs(rest, { yes: { type: 'boolean' } }, usage)
    if (positionals.length !== 1) throw new CliError('usage', usage)
    // Its events go with it, for good: said, not done, without --yes.
    if (values.yes !== true) throw new CliError('usage', `deleting ${positionals[0]} deletes all its events and ingest tokens; add --yes to do it`)
    await client.call('DELETE', `/api/streams/${encodeURIComponent(positionals[0])}`)
    out(`deleted stream ${positionals[0]}`)
    return
  }
  throw new CliError('usage', usage)
}
