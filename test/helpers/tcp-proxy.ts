// A TCP proxy in front of ClickHouse that a test can take down and bring back: down stops
// listening (new connections are refused, ECONNREFUSED) and cuts open ones, as a ClickHouse that
// stopped would; up listens again on the same port. stall() holds every byte
// in both directions while connections stay open, as a SIGSTOPped ClickHouse does (its kernel
// still accepts connections and buffers what is sent); resume() delivers what was held, in the
// order it arrived, ends the upstream side of clients that left meanwhile (a stopped server reads
// their requests, then their end, when it runs again), and forwards as before. dropRequests(n)
// cuts the connection of each of the next n requests as it arrives, unanswered, as a server
// that closed a kept-alive connection just as the client sent on it (the client sees "socket
// hang up", ECONNRESET). downBetweenAnswers() is down for an HTTP server's clients: new connections
// are refused, and each open one is cut once its request in progress has its whole answer, or as
// its next request starts (helpers/http-answers.ts: a cut answer makes a shipper resend a stored batch).
import { createServer, connect } from 'node:net'
import type { Socket } from 'node:net'
import type { AddressInfo } from 'node:net'
import type { Test } from 'tap'
import { trackAnswers } from './http-answers.ts'
import type { AnswerTracker } from './http-answers.ts'

export interface TcpProxy {
  url: string
  down (): void
  /** down(), but an answer on its way passes first (an HTTP server's clients). */
  downBetweenAnswers (): void
  up (): void
  stall (): void
  resume (): void
  dropRequests (n: number): void
  /** Requests dropRequests cut so far. */
  readonly dropped: number
}

interface Held {
  toUpstream: Buffer[]
  toClient: Buffer[]
  clientLeft: boolean
  upstreamLeft: boolean
}

export async function startTcpProxy (t: Test, targetUrl: string): Promise<TcpProxy> {
  const target = new URL(targetUrl)
  let isUp = true
  let draining = false // downBetweenAnswers(): cut each connection between its exchanges
  let isStalled = false
  let toDrop = 0
  let dropped = 0
  const sockets = new Set<Socket>()
  const connections: Array<{ client: Socket, upstream: Socket, held: Held, answers: AnswerTracker }> = []
  const server = createServer((client) => {
    if (!isUp) { client.destroy(); return }
    const upstream = connect(Number(target.port), target.hostname)
    const held: Held = { toUpstream: [], toClient: [], clientLeft: false, upstreamLeft: false }
    const answers = trackAnswers()
    const conn = { client, upstream, held, answers }
    connections.push(conn)
    for (const s of [client, upstream]) {
      sockets.add(s)
      s.on('error', () => {})
    }
    client.on('data', (d: Buffer) => {
      if (draining && !answers.waiting) {
        client.destroy()
        upstream.destroy()
        return
      }
      answers.requested()
      if (toDrop > 0) {
        toDrop--
        dropped++
        client.destroy()
        upstream.destroy()
      } else if (isStalled) held.toUpstream.push(d)
      else upstream.write(d)
    })
    upstream.on('data', (d: Buffer) => {
      if (isStalled) held.toClient.push(d)
      else client.write(d)
      if (answers.answered(d) && draining && !answers.waiting) { client.end(); upstream.destroy() }
    })
    client.on('end', () => { if (!isStalled) upstream.end() })
    upstream.on('end', () => { if (!isStalled) client.end() })
    client.on('close', () => {
      sockets.delete(client)
      if (isStalled) held.clientLeft = true
      else if (held.toUpstream.length === 0) upstream.end()
    })
    upstream.on('close', () => {
      sockets.delete(upstream)
      connections.splice(connections.indexOf(conn), 1)
      if (isStalled) held.upstreamLeft = true
      else if (draining) client.end() // after the answer it may still be writing
      else client.destroy()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as AddressInfo).port
  t.teardown(() => new Promise<void>((resolve) => {
    for (const s of sockets) s.destroy()
    if (server.listening) server.close(() => resolve())
    else resolve()
  }))
  return {
    url: `http://127.0.0.1:${port}`,
    down () {
      isUp = false
      server.close()
      for (const s of sockets) s.destroy()
    },
    downBetweenAnswers () {
      isUp = false
      draining = true
      server.close()
      for (const { client, upstream, answers } of [...connections]) {
        if (!answers.waiting) { client.destroy(); upstream.destroy() }
      }
    },
    up () {
      isUp = true
      draining = false
      if (!server.listening) server.listen(port, '127.0.0.1')
    },
    stall () { isStalled = true },
    dropRequests (n: number) { toDrop = n },
    get dropped () { return dropped },
    resume () {
      isStalled = false
      for (const { client, upstream, held } of [...connections]) {
        for (const d of held.toUpstream.splice(0)) upstream.write(d)
        for (const d of held.toClient.splice(0)) if (!client.destroyed) client.write(d)
        if (held.clientLeft || client.destroyed) upstream.end()
        if (held.upstreamLeft) client.destroy()
      }
    },
  }
}
