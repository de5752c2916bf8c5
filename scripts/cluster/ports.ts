// Free TCP ports on 127.0.0.1 for the local cluster's processes. All are held open at once while
// they are picked, so the OS never hands out the same port twice in one call; a port can still be
// taken by another program between this call and the server binding it (the caller retries).
import { once } from 'node:events'
import { createServer } from 'node:net'
import type { AddressInfo, Server } from 'node:net'

export async function freePorts (count: number): Promise<number[]> {
  const servers: Server[] = []
  try {
    for (let i = 0; i < count; i++) {
      const server = createServer()
      servers.push(server)
      server.listen(0, '127.0.0.1')
      await once(server, 'listening')
    }
    return servers.map((server) => (server.address() as AddressInfo).port)
  } finally {
    await Promise.all(servers.map((server) => new Promise((done) => server.close(done))))
  }
}
