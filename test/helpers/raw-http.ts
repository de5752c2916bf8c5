// A raw HTTP/1.x client over node:net for requests no well-behaved client would send (smuggling
// shapes, bad framing, odd targets): writes the given bytes, reads the first final response (1xx
// interim responses are skipped and reported) and closes the socket.
import { connect } from 'node:net'

export interface RawResponse {
  /** 0: the connection closed (or the wait ran out) before a response. */
  status: number
  headers: Record<string, string>
  /** The body, parsed as JSON when it is JSON, else the text (null when empty). */
  body: any
  /** Interim (1xx) statuses seen before the final response. */
  interim: number[]
  /** True when the server closed the connection before `timeoutMs`. */
  closed: boolean
}

export interface RawOptions {
  /** Pieces written in order; a number between them is a pause in ms (to split reads server-side). */
  parts?: Array<Buffer | string | number>
  /** Give up after this many ms (then status 0 unless a response arrived); default 10 s. */
  timeoutMs?: number
  /** The request is a HEAD: the response has no body whatever its headers say. */
  head?: boolean
  /** Called with each interim status (to send a body held back for 100-continue). */
  onInterim?: (status: number, write: (data: Buffer | string) => void) => void
}

/** Sends `payload` (or options.parts) to `url`'s host and port and reads one response. */
export function rawRequest (url: string, payload: Buffer | string, options: RawOptions = {}): Promise<RawResponse> {
  const { port, hostname } = new URL(url)
  const timeoutMs = options.timeoutMs ?? 10_000
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname)
    let buffered = Buffer.alloc(0)
    const interim: number[] = []
    let done = false
    let head: { status: number, headers: Record<string, string>, bodyStart: number } | null = null

    const finish = (closed: boolean): void => {
      if (done) return
      done = true
      clearTimeout(timer)
      socket.destroy()
      if (head === null) {
        resolve({ status: 0, headers: {}, body: null, interim, closed })
        return
      }
      const raw = buffered.subarray(head.bodyStart)
      const length = head.headers['content-length']
      const bodyBytes = length === undefined ? raw : raw.subarray(0, Number(length))
      const text = options.head === true ? '' : bodyBytes.toString('utf8')
      let body: any = text === '' ? null : text
      if (text !== '' && /json/.test(head.headers['content-type'] ?? '')) {
        try { body = JSON.parse(text) } catch { body = text }
      }
      resolve({ status: head.status, headers: head.headers, body, interim, closed })
    }
    const timer = setTimeout(() => finish(false), timeoutMs)

    const parse = (): void => {
      for (;;) {
        if (head === null) {
          const end = buffered.indexOf('\r\n\r\n')
          if (end === -1) return
          const lines = buffered.subarray(0, end).toString('latin1').split('\r\n')
          const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(lines[0])?.[1] ?? 0)
          const headers: Record<string, string> = {}
          for (const line of lines.slice(1)) {
            const colon = line.indexOf(':')
            if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim()
          }
          if (status >= 100 && status < 200) {
            interim.push(status)
            buffered = buffered.subarray(end + 4)
            options.onInterim?.(status, (data) => { socket.write(data) })
            continue
          }
          head = { status, headers, bodyStart: end + 4 }
        }
        const length = head.headers['content-length']
        const noBody = options.head === true || head.status === 204 || head.status === 304
        if (noBody || (length !== undefined && buffered.length - head.bodyStart >= Number(length))) finish(false)
        // Otherwise (no length: read to close) wait for more.
        return
      }
    }

    socket.on('data', (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk])
      parse()
    })
    socket.on('error', () => { finish(true) })
    socket.on('close', () => { finish(true) })
    socket.on('connect', async () => {
      const parts = options.parts ?? [payload]
      for (const part of parts) {
        if (done) return
        if (typeof part === 'number') await new Promise((resolve) => setTimeout(resolve, part))
        else socket.write(part)
      }
    })
  })
}
