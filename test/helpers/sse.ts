// A small SSE reader for tests: connects with a PAT and collects frames as {event, data}.
import { connect } from 'node:net'
import type { Socket } from 'node:net'

export interface SseFrame { event: string, data: string }

export interface SseClient {
  status: number
  frames: SseFrame[]
  socket: Socket
  /** Resolves with the first frame (from those seen so far or later) for which `match` holds. */
  next (match: (f: SseFrame) => boolean, timeoutMs?: number): Promise<SseFrame>
  close (): void
}

/** Opens GET `path` over a raw socket, so a test can also stop reading (socket.pause()). */
export async function openSse (baseUrl: string, path: string, token: string): Promise<SseClient> {
  const url = new URL(baseUrl)
  const socket = connect(Number(url.port), url.hostname)
  await new Promise<void>((resolve, reject) => { socket.once('connect', resolve); socket.once('error', reject) })
  socket.write(`GET ${path} HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${token}\r\nAccept: text/event-stream\r\n\r\n`)
  const frames: SseFrame[] = []
  const waiters: Array<() => void> = []
  let buffer = ''
  let headerDone = false
  let status = 0
  let chunked = false
  let raw = ''
  const statusReady = new Promise<void>((resolve) => {
    socket.on('data', (chunk: Buffer) => {
      raw += chunk.toString('utf8')
      if (!headerDone) {
        const end = raw.indexOf('\r\n\r\n')
        if (end < 0) return
        const head = raw.slice(0, end)
        status = Number(head.split(' ')[1])
        chunked = /transfer-encoding: chunked/i.test(head)
        raw = raw.slice(end + 4)
        headerDone = true
        resolve()
      }
      // De-chunk whatever complete chunks arrived.
      if (chunked) {
        for (;;) {
          const lineEnd = raw.indexOf('\r\n')
          if (lineEnd < 0) break
          const size = parseInt(raw.slice(0, lineEnd), 16)
          if (raw.length < lineEnd + 2 + size + 2) break
          buffer += raw.slice(lineEnd + 2, lineEnd + 2 + size)
          raw = raw.slice(lineEnd + 2 + size + 2)
        }
      } else {
        buffer += raw
        raw = ''
      }
      let sep
      while ((sep = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, sep)
        buffer = buffer.slice(sep + 2)
        let event = 'message'
        const data: string[] = []
        for (const line of block.split('\n')) {
          if (line.startsWith('event: ')) event = line.slice(7)
          else if (line.startsWith('data: ')) data.push(line.slice(6))
          else if (line.startsWith(':')) event = 'comment'
        }
        frames.push({ event, data: data.join('\n') })
      }
      for (const w of waiters.splice(0)) w()
    })
  })
  await statusReady
  return {
    get status () { return status },
    frames,
    socket,
    async next (match, timeoutMs = 5000) {
      const deadline = Date.now() + timeoutMs
      let seen = 0
      for (;;) {
        for (; seen < frames.length; seen++) if (match(frames[seen])) return frames.splice(seen, 1)[0]
        const left = deadline - Date.now()
        if (left <= 0) throw new Error('no matching SSE frame in time')
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, left)
          waiters.push(() => { clearTimeout(timer); resolve() })
        })
      }
    },
    close () { socket.destroy() },
  }
}
