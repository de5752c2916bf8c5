// The HTTP server: node:http with slow-client timeouts, a request id on every response, routing,
// one place where errors become responses, and graceful shutdown.
//
// Shutdown contract: close() stops accepting connections; requests that arrive on open
// keep-alive sockets meanwhile get 503 shutting_down with `Connection: close`; requests in flight
// are finished and answered; idle sockets are closed; after shutdownTimeoutMs whatever remains is
// cut. close() resolves when no request is in flight any more.
import { createServer, STATUS_CODES } from 'node:http'
import type { IncomingMessage, Server, ServerResponse } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import type { Duplex } from 'node:stream'
import { randomUUID } from 'node:crypto'
import { SluiceError } from '../errors.ts'
import type { Logger } from '../logger.ts'
import type { Config } from '../config.ts'
import { sendError } from './reply.ts'
import { expectContinue } from './expect-continue.ts'
import type { RequestContext } from './reply.ts'
import { parseRequestTarget } from './router.ts'
import type { Router } from './router.ts'

export interface HttpServerOptions {
  config: Config['server']
  router: Router
  log: Logger
  /** Called when a response has been sent (metrics). */
  onResponse?: (route: string, method: string, status: number, durationMs: number) => void
}

export interface HttpServer {
  server: Server
  listen (port?: number, host?: string): Promise<AddressInfo>
  /** Requests being handled right now. */
  readonly inFlight: number
  close (): Promise<void>
}

const requestIdPattern = /^[A-Za-z0-9._:-]{1,128}$/

export function createHttpServer (options: HttpServerOptions): HttpServer {
  const { config, router, log, onResponse } = options
  let closing = false
  let inFlight = 0
  let idleWaiters: Array<() => void> = []

  const server = createServer({
    // An HTTP/1.1 request without Host is refused in handle(), in our JSON shape with a request
    // id, instead of node's bare 400 (RFC 9112 section 3.2 requires the 400 either way).
    requireHostHeader: false,
    headersTimeout: config.headersTimeoutMs,
    requestTimeout: config.requestTimeoutMs,
    keepAliveTimeout: config.keepAliveTimeoutMs,
    // How often node checks the two timeouts above; its default of 30 s would let a slow client
    // hold a socket for up to 40 s under a 10 s header timeout.
    connectionsCheckingInterval: Math.min(1000, config.headersTimeoutMs),
  }, (req, res) => { void handle(req, res) })
  // Expect: 100-continue: the 100 goes out when the handler reads the body, after its checks.
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
    expectContinue(req, res)
    void handle(req, res)
  })
  // An Expect other than 100-continue: our 417 with the JSON error
  // shape and a request id, instead of node's bare one. Connection: close, since the client may
  // still send the body it held back, or never.
  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => {
    res.setHeader('connection', 'close')
    void handle(req, res, new SluiceError('expectation_failed'))
  })

  /** Routes and runs one request; `refusal`, when given, is answered instead. */
  async function handle (req: IncomingMessage, res: ServerResponse, refusal?: SluiceError): Promise<void> {
    const started = performance.now()
    const incomingId = req.headers['x-request-id']
    const requestId = typeof incomingId === 'string' && requestIdPattern.test(incomingId) ? incomingId : randomUUID()
    res.setHeader('x-request-id', requestId)
    // The exact request target, not a URL parse of it (see router.ts); null: not origin-form.
    const target = parseRequestTarget(req.url ?? '')
    const url = target?.url ?? new URL('http://localhost/')
    const ctx: RequestContext = {
      req, res, requestId, path: target?.path ?? '', url, params: {}, receivedAt: Date.now(), startedAt: started, log: log.child({ request_id: requestId }),
    }
    let pattern = 'unmatched'
    inFlight++
    res.once('close', () => {
      inFlight--
      // Closed before its answer was all sent: the client left, or an export was cut (docs/api.md
      // section 7.8). Counted as 499 ("client closed request", as nginx logs it), not as the 200
      // that statusCode still holds: a dashboard of exports must not count a cut one complete
      // (explore34d J4).
      const status = res.writableFinished ? res.statusCode : 499
      onResponse?.(pattern, req.method ?? 'GET', status, performance.now() - started)
      if (inFlight === 0 && idleWaiters.length > 0) {
        const waiters = idleWaiters
        idleWaiters = []
        for (const w of waiters) w()
      }
    })
    try {
      if (closing) {
        res.setHeader('connection', 'close')
        throw new SluiceError('shutting_down', undefined, { retryAfter: 1 })
      }
      if (refusal) throw refusal
      if (req.httpVersionMajor === 1 && req.httpVersionMinor === 1 && req.headers.host === undefined) {
        res.setHeader('connection', 'close')
        throw new SluiceError('bad_request', 'An HTTP/1.1 request must carry a Host header')
      }
      if (target === null) throw new SluiceError('bad_request', 'The request target must be a path starting with / (origin-form)')
      const match = router.find(req.method ?? 'GET', target.path)
      // Every answer under /api/elastic carries the header the Elasticsearch clients check, also
      // a 404 or 405 of a path no route there takes (docs/api.md section 6.10).
      if (match.kind !== 'found' && target.path.startsWith('/api/elastic/')) res.setHeader('x-elastic-product', 'Elasticsearch')
      if (match.kind === 'not_found') throw new SluiceError('not_found', `No route for ${target.path.slice(0, 200)}`)
      if (match.kind === 'method_not_allowed') {
        res.setHeader('allow', match.allowed.join(', '))
        throw new SluiceError('method_not_allowed')
      }
      pattern = match.pattern
      ctx.params = match.params
      await match.handler(ctx)
    } catch (err) {
      sendError(ctx, err)
    }
    // A handler that answered without reading the body to its end (a refusal, a 413 part-way):
    // the rest is read and dropped, so the client reads the answer (see lingerBytes).
    // A slow body's 408 (a slow client is cut, not waited for) excepted.
    if (!req.complete && !req.destroyed && res.statusCode !== 408) lingerOnUnread(req, res)
  }

  // Requests node could not parse, or that did not arrive in time, never reach a handler (or
  // are cut from under one): they get the same JSON error shape here, written straight to the
  // socket, which is then destroyed. Node's server sockets allow half-open connections, so an end()
  // alone (a FIN) would leave a peer that keeps its side open holding the fd, and the request it
  // was sending (its reading slot, org slot and bytes) alive; destroying the socket aborts that
  // request, whose pipeline then fails and stores nothing.
  server.on('clientError', (err: NodeJS.ErrnoException, socket) => {
    const inFlight = (socket as { _httpMessage?: ServerResponse | null })._httpMessage
    if (!socket.writable || socket.destroyed || inFlight?.headersSent === true) {
      // Nothing can be said any more without corrupting a response already under way.
      socket.destroy()
      return
    }
    const timedOut = err.code === 'ERR_HTTP_REQUEST_TIMEOUT' || err.code === 'ERR_HTTP_REQUEST_HEADERS_TIMEOUT'
    // Past Node's 16 KiB of request line and headers (a URL with a q far over its 1,000
    // characters, explore19 F3): 431, as Node itself answers it, with the API's error body.
    const e = timedOut
      ? new SluiceError('request_timeout')
      : err.code === 'HPE_HEADER_OVERFLOW' ? new SluiceError('headers_too_large') : new SluiceError('bad_request', 'The request is not valid HTTP')
    const requestId = randomUUID()
    const body = JSON.stringify({ error: e.code, message: e.message, request_id: requestId })
    socket.end(`HTTP/1.1 ${e.status} ${STATUS_CODES[e.status]}\r\nConnection: close\r\n` +
      `Content-Type: application/json; charset=utf-8\r\nX-Request-Id: ${requestId}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`)
    destroyWhenSent(socket)
  })

  return {
    server,
    get inFlight () { return inFlight },

    listen (port = 0, host = '127.0.0.1') {
      return new Promise((resolve, reject) => {
        server.once('error', reject)
        server.listen(port, host, () => {
          server.off('error', reject)
          resolve(server.address() as AddressInfo)
        })
      })
    },

    async close () {
      closing = true
      const closed = new Promise<void>((resolve) => server.close(() => resolve()))
      server.closeIdleConnections()
      if (inFlight > 0) {
        let timer: NodeJS.Timeout | undefined
        await Promise.race([
          new Promise<void>((resolve) => { idleWaiters.push(resolve) }),
          new Promise<void>((resolve) => { timer = setTimeout(resolve, config.shutdownTimeoutMs) }),
        ])
        clearTimeout(timer)
      }
      server.closeAllConnections()
      await closed
    },
  }
}

/**
 * How much of an unread body is read and dropped after the answer, at most, and for how long
 * (docs/api.md section 1, "Refused bodies"). A socket closed with bytes it has not read makes the
 * kernel send a reset, and a client still writing its body then gets EPIPE or ECONNRESET instead
 * of the answer: of ten clients that wrote an 8 MiB body before reading, none read its 413, and a
 * shipper retries such a body forever. So, as nginx's lingering close, the rest of the body is
 * read: the connection stays usable when it ends within these bounds, and is cut past them (a
 * body declared larger than lingerBytes at once).
 */
const lingerBytes = 64 * 1024 * 1024
/** nginx's lingering_timeout: the longest silence of the client while its body is dropped. */
const lingerIdleMs = 5_000
/** nginx's lingering_time: the longest the dropping lasts (a loaded machine sends 64 MiB slowly). */
const lingerTotalMs = 30_000

/**
 * Reads and drops the rest of a request's body after its answer, within lingerBytes, lingerIdleMs
 * of silence and lingerTotalMs. When node closes the connection after the answer (Connection:
 * close from either side), its FIN goes out at once, but the socket is destroyed only once the
 * client has closed its side too, or at those deadlines: node's own close (destroySoon) would
 * destroy it with the client's bytes unread.
 */
function lingerOnUnread (req: IncomingMessage, res: ServerResponse): void {
  const socket = req.socket as Socket & { destroySoon?: () => void }
  if (Number(req.headers['content-length']) > lingerBytes) {
    if (res.writableFinished) destroyWhenSent(socket)
    else res.once('finish', () => destroyWhenSent(socket))
    return
  }
  const deadline = performance.now() + lingerTotalMs
  const timer = setTimeout(() => socket.destroy(), lingerIdleMs).unref()
  const onClose = (): void => clearTimeout(timer)
  socket.once('close', onClose)
  let closing = false
  socket.destroySoon = () => {
    closing = true
    socket.end() // the timer stays, the backstop for a client that keeps its side open
  }
  // The whole body read on a connection kept alive: it serves the next request as any other.
  // (Its listener goes too: a shipper refused again and again on one connection adds one each time.)
  const kept = (): void => {
    clearTimeout(timer)
    socket.off('close', onClose)
    Reflect.deleteProperty(socket, 'destroySoon') // node's own again
  }
  const drain = (): void => {
    if (req.destroyed) return
    if (req.complete) {
      if (!closing) kept()
      return
    }
    let dropped = 0
    req.on('data', (chunk: Buffer) => {
      dropped += chunk.length
      if (dropped > lingerBytes || performance.now() > deadline) socket.destroy()
      else timer.refresh() // the client is still sending: silence counts from now
    })
    req.once('end', () => { if (!closing) kept() })
    req.resume()
  }
  if (res.writableFinished) drain()
  else res.once('finish', drain)
}

/**
 * Bytes written to the socket are handed to the kernel once 'finish' fires, which sends them
 * after the fd is closed: the answer still arrives. A peer that reads nothing may never let the
 * answer out of node's buffer, hence the backstop.
 */
const answerFlushMs = 1000

/** Destroys a socket whose last answer has been written with end(). */
export function destroyWhenSent (socket: Duplex): void {
  if (socket.writableFinished) {
    socket.destroy()
    return
  }
  const backstop = setTimeout(() => socket.destroy(), answerFlushMs).unref()
  socket.once('finish', () => { clearTimeout(backstop); socket.destroy() })
  socket.once('close', () => clearTimeout(backstop))
}
