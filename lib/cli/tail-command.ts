// `sluice tail STREAM [--q FILTER] [--json]`: follows a stream's live tail and prints one line per
// event (`ts host method status path rt`) or, with --json, the event JSON. Stats and heartbeats
// are skipped; dropped counts go to stderr. It runs until the tail ends: with the reason of the
// server's `event: end` ('stream_deleted', 'token_invalid'), or 'closed' when the connection
// ended without one (the server stopped or restarted).
import { request } from 'undici'
import { CliError } from './api-client.ts'
import { SseParser } from '../live/sse-parser.ts'

export interface TailOptions {
  baseUrl: string
  token: string
  stream: string
  q: string
  json: boolean
  out: (line: string) => void
  err: (line: string) => void
}

function formatEvent (e: Record<string, unknown>): string {
  const ts = new Date(Number(e.ts)).toISOString()
  const fields = [e.host, e.method, e.status, e.path, e.rt === null ? null : `${e.rt}s`].map((x) => (x === null || x === undefined ? '-' : String(x)))
  return `${ts} ${fields.join(' ')}${e.message ? ' ' + String(e.message) : ''}`
}

export async function tailCommand (options: TailOptions): Promise<string> {
  const url = `${options.baseUrl.replace(/\/+$/, '')}/api/streams/${encodeURIComponent(options.stream)}/tail?q=${encodeURIComponent(options.q)}`
  let res
  try {
    res = await request(url, { headers: { authorization: `Bearer ${options.token}`, accept: 'text/event-stream' } })
  } catch (err) {
    throw new CliError('unreachable', `cannot reach Sluice at ${options.baseUrl}: ${(err as Error).message}`)
  }
  if (res.statusCode !== 200) {
    const body = await res.body.json().catch(() => ({})) as { error?: string, message?: string }
    throw new CliError(body.error ?? 'http_error', body.message ?? `HTTP ${res.statusCode}`, res.statusCode)
  }
  let ended: string | null = null
  // The parser decodes the bytes itself, so a character split across two chunks stays whole.
  const parser = new SseParser((event, data) => {
    if (event === 'event') options.out(options.json ? data : formatEvent(JSON.parse(data)))
    else if (event === 'dropped') options.err(`(${JSON.parse(data).count} events dropped)`)
    else if (event === 'end') ended = String((JSON.parse(data) as { reason?: unknown }).reason ?? 'ended')
  })
  try {
    for await (const chunk of res.body) parser.push(chunk as Buffer)
  } catch (err) {
    if (ended === null) throw new CliError('connection_lost', `the tail's connection failed: ${(err as Error).message}`)
  }
  return ended ?? 'closed'
}
