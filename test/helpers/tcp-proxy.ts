// A TCP proxy in front of ClickHouse that a test can take down and bring back: down refuses new
// connections and cuts open ones, as a ClickHouse that stopped would.
import { createServer, connect } from 'node:net'
import type { Socket } from 'node:net'
import type { AddressInfo } from 'node:net'
import type { Test } from 'tap'

export interface TcpProxy {
  url: string
  down (): void
  up (): void
}

export async function startTcpProxy (t: Test, targetUrl: string): Promise<TcpProxy> {
  const target = new URL(targetUrl)
  let isUp = true
  const sockets = new Set<Socket>()
  const server = createServer((client) => {
    if (!isUp) { client.destroy(); return }
    const upstream = connect(Number(target.port), target.hostname)
    for (const s of [client, upstream]) {
      sockets.add(s)
      s.on('close', () => sockets.delete(s))
      s.on('error', () => { client.destroy(); upstream.destroy() })
    }
    client.pipe(upstream).pipe(client)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => {
    for (const s of sockets) s.destroy()
    server.close(() => resolve())
  }))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    down () {
      isUp = false
      for (const s of sockets) s.destroy()
    },
    up () { isUp = true },
  }
}
