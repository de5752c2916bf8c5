// What the syslog daemons' tests (syslog-ng, rsyslog) feed their daemon: RFC 3164 lines over TCP
// on a free local port.
import { connect, createServer } from 'node:net'
import type { AddressInfo } from 'node:net'

export async function freePort (): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

/** RFC 3164 lines `<14>Mmm dd hh:mm:ss web-7 app[42]: line i` (user.info) for i in [first, first + count). */
export function syslogLines (first: number, count: number, at: Date): string {
  const month = at.toLocaleString('en-US', { month: 'short', timeZone: 'UTC' })
  const day = String(at.getUTCDate()).padStart(2, ' ')
  const time = at.toISOString().slice(11, 19)
  let out = ''
  for (let i = first; i < first + count; i++) out += `<14>${month} ${day} ${time} web-7 app[42]: line ${i}\n`
  return out
}

export async function sendTcp (port: number, text: string): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.end(text))
    socket.on('error', reject)
    socket.on('close', () => resolve())
  })
}
