// A small SSE reader for tests: connects with a PAT and collects frames as {event, data}, each
// comment line as {event: 'comment', data: its text}. Frames are parsed by the one SSE parser
// (lib/live/sse-parser.ts), fed the de-chunked body bytes as they arrive.
import { connect } from 'node:net'
import type { Socket } from 'node:net'
import { SseParser } from '../../lib/live/sse-parser.ts'

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
  const parser = new SseParser(
    (event, data) => { frames.push({ event, data }) },
    (text) => { frames.push({ event: 'comment', data: text }) },
  )
  let headerDone = false
  let status = 0
  let chunked = false
  // Bytes received and not yet parsed: the head, or a chunk not complete yet.
  let raw: Buffer = Buffer.alloc(0)
  const statusReady = new Promise<void>((resolve) => {
    socket.on('data', (chunk: Buffer) => {
      raw = raw.length === 0 ? chunk : Buffer.concat([raw, chunk])
      if (!headerDone) {
        const end = raw.indexOf('\r\n\r\n')
        if (end < 0) return
        const head = raw.subarray(0, end).toString('latin1')
        status = Number(head.split(' ')[1])
        chunked = /transfer-encoding: chunked/i.test(head)
        raw = raw.subarray(end + 4)
        headerDone = true
        resolve()
      }
      // De-chunk whatever complete chunks arrived; sizes count bytes, so this works on bytes.
      if (chunked) {
        for (;;) {
          const lineEnd = raw.indexOf('\r\n')
          if (lineEnd < 0) break
          const size = parseInt(raw.subarray(0, lineEnd).toString('latin1'), 16)
          if (raw.length < lineEnd + 2 + size + 2) break
          parser.push(raw.subarray(lineEnd + 2, lineEnd + 2 + size))
          raw = raw.subarray(lineEnd + 2 + size + 2)
        }
      } else {
        parser.push(raw)
        raw = Buffer.alloc(0)
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
