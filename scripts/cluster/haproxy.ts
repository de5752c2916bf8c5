// haproxy in front of the local cluster's Sluice nodes: round robin, a node leaves the rotation
// after two failed `GET /readyz` checks (1 s apart) and comes back after one good one, and a
// request whose connection to a node fails is sent to the other (redispatch). Timeouts are
// longer than Sluice's own (a request waits for storage at most ~15 s; the tail sends a
// heartbeat every 15 s), so haproxy never cuts what Sluice would answer.
import { mkdirSync, writeFileSync } from 'node:fs'
import { request } from 'node:http'
import { join } from 'node:path'
import { spawnChild } from './child.ts'
import type { Child } from './child.ts'

export interface HaproxyOptions {
  dir: string
  port: number
  /** host:port of each Sluice node. */
  backends: readonly string[]
  startTimeoutMs: number
  binary?: string
}

export interface Haproxy {
  readonly url: string
  readonly child: Child
  stop (): Promise<void>
}

export function haproxyConfig (port: number, backends: readonly string[]): string {
  return `global
  maxconn 4096
defaults
  mode http
  option redispatch
  retries 2
  timeout connect 2s
  timeout client 75s
  timeout server 75s
  timeout http-request 15s
frontend sluice
  bind 127.0.0.1:${port}
  default_backend sluice_nodes
backend sluice_nodes
  balance roundrobin
  option httpchk GET /readyz
  http-check expect status 200
${backends.map((b, i) => `  server node${i + 1} ${b} check inter 1s fall 2 rise 1`).join('\n')}
`
}

/** GET url; resolves the status code, 0 on any failure. */
export function httpStatus (url: string, timeoutMs = 2_000): Promise<number> {
  return new Promise((done) => {
    const req = request(url, { agent: false, timeout: timeoutMs }, (res) => {
      res.resume()
      res.on('end', () => done(res.statusCode ?? 0)).on('error', () => done(0))
    })
    req.on('timeout', () => req.destroy()).on('error', () => done(0))
    req.end()
  })
}

export async function startHaproxy (options: HaproxyOptions): Promise<Haproxy> {
  mkdirSync(options.dir, { recursive: true })
  const file = join(options.dir, 'haproxy.cfg')
  writeFileSync(file, haproxyConfig(options.port, options.backends))
  const child = spawnChild({
    name: 'haproxy',
    command: options.binary ?? '/usr/sbin/haproxy',
    args: ['-db', '-f', file], // -db: foreground, no daemon, so the child is the proxy itself
    logFile: join(options.dir, 'haproxy.log'),
    cwd: options.dir,
  })
  const url = `http://127.0.0.1:${options.port}`
  try {
    // /healthz through the proxy: 200 once haproxy listens and has seen a node pass its check.
    await child.waitUntil(async () => (await httpStatus(`${url}/healthz`)) === 200, options.startTimeoutMs, `200 from ${url}/healthz`)
  } catch (err) {
    await child.stop()
    throw err
  }
  return { url, child, stop: () => child.stop() }
}
