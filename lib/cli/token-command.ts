// `sluice token create STREAM [--ttl SECONDS] [--name NAME]`, `sluice token list STREAM`,
// `sluice token revoke STREAM ID`: ingest tokens of a stream.
import type { ApiClient } from './api-client.ts'
import { CliError } from './api-client.ts'
import { integerOption, readArgs } from './cli-args.ts'

const usage = 'usage: sluice token create STREAM [--ttl SECONDS] [--name NAME] | token list STREAM | token revoke STREAM ID'

export async function tokenCommand (client: ApiClient, args: string[], out: (line: string) => void): Promise<void> {
  const [sub, ...rest] = args
  const { values, positionals } = readArgs(rest, { ttl: { type: 'string' }, name: { type: 'string' } }, usage)
  const stream = positionals[0]
  if (!stream) throw new CliError('usage', usage)
  const base = `/api/streams/${encodeURIComponent(stream)}`
  if (sub === 'create' && positionals.length === 1) {
    const body: Record<string, unknown> = {}
    const ttl = integerOption('ttl', values.ttl, usage)
    if (ttl !== undefined) body.ttl = ttl
    if (values.name !== undefined) body.name = values.name
    const tok = await client.call<{ id: string, token: string, expires_at: string }>('POST', `${base}/ingest-token`, body)
    out(tok.token)
    out(`id ${tok.id}, expires ${tok.expires_at}; the token is shown only now`)
    return
  }
  if (sub === 'list' && positionals.length === 1) {
    const { tokens } = await client.call<{ tokens: Array<Record<string, string | null>> }>('GET', `${base}/ingest-tokens`)
    if (tokens.length === 0) out(`no ingest tokens for ${stream}: sluice token create ${stream}`)
    for (const x of tokens) out([x.id, x.display, x.status, x.name, `expires ${x.expires_at}`, `last used ${x.last_used_at ?? 'never'}`].join('\t'))
    return
  }
  if (sub === 'revoke' && positionals.length === 2) {
    await client.call('DELETE', `${base}/ingest-tokens/${encodeURIComponent(positionals[1])}`)
    out(`revoked ${positionals[1]}`)
    return
  }
  throw new CliError('usage', usage)
}
