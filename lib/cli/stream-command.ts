// `sluice stream create NAME [--description TEXT] [--retention-days N]` and `sluice stream list`.
import { parseArgs } from 'node:util'
import type { ApiClient } from './api-client.ts'
import { CliError } from './api-client.ts'

export async function streamCommand (client: ApiClient, args: string[], out: (line: string) => void): Promise<void> {
  const [sub, ...rest] = args
  if (sub === 'list') {
    const { streams } = await client.call<{ streams: Array<{ name: string, retention_days: number, description: string, created_at: string }> }>('GET', '/api/streams')
    if (streams.length === 0) out('no streams yet: sluice stream create NAME')
    for (const s of streams) out(`${s.name}\t${s.retention_days}d\t${s.created_at}\t${s.description}`)
    return
  }
  if (sub === 'create') {
    const { values, positionals } = parseArgs({
      args: rest, allowPositionals: true,
      options: { description: { type: 'string' }, 'retention-days': { type: 'string' } },
    })
    if (positionals.length !== 1) throw new CliError('usage', 'usage: sluice stream create NAME [--description TEXT] [--retention-days N]')
    const body: Record<string, unknown> = { name: positionals[0] }
    if (values.description !== undefined) body.description = values.description
    if (values['retention-days'] !== undefined) body.retention_days = Number(values['retention-days'])
    const s = await client.call<{ name: string, retention_days: number }>('POST', '/api/streams', body)
    out(`created stream ${s.name} (retention ${s.retention_days} days)`)
    return
  }
  throw new CliError('usage', 'usage: sluice stream create|list')
}
