// The request's body as a stream of its own, for pipeline(). pipeline() destroys every stream it
// was given when one fails (a 413 part-way, a bad gzip member, a client gone), and destroying the
// request destroys its socket with the client's bytes unread: the kernel answers them with a
// reset, which can cost a client still sending its body the answer (undici: 3 of 10 2 MiB chunked
// bodies got ECONNRESET instead of their 413). A failure destroys this stream only; the request
// stays open, and the server reads and drops the rest of the body after the answer
// (lib/http/server.ts, lingerOnUnread; docs/api.md section 1, "Refused bodies").
//
// Contract: made when the body is to be read (its checks done): a client waiting for `100
// Continue` gets it then. The request's chunks, in order, with its backpressure (the request is paused while
// this stream's buffer is full); ends when the body ends; errors when the request errors, or
// closes before its body's end (the client left). Destroyed, it stops listening and leaves the
// request paused: neither destroyed nor drained.
import { Readable } from 'node:stream'
import type { IncomingMessage } from 'node:http'
import { continueBody } from '../http/expect-continue.ts'

export class RequestBody extends Readable {
  readonly #req: IncomingMessage

  constructor (req: IncomingMessage) {
    super()
    this.#req = req
    req.on('data', this.#onData)
    req.on('end', this.#onEnd)
    req.on('error', this.#onError)
    req.on('close', this.#onClose)
    req.pause() // until the first read
    continueBody(req) // the checks are done: a client waiting for 100 Continue sends the body now
  }

  readonly #onData = (chunk: Buffer): void => {
    if (!this.push(chunk)) this.#req.pause()
  }

  readonly #onEnd = (): void => {
    this.push(null)
  }

  readonly #onError = (err: Error): void => {
    this.destroy(err)
  }

  readonly #onClose = (): void => {
    if (!this.#req.complete) this.destroy(Object.assign(new Error('aborted'), { code: 'ECONNRESET' }))
  }

  override _read (): void {
    this.#req.resume()
  }

  override _destroy (err: Error | null, callback: (err?: Error | null) => void): void {
    const req = this.#req
    req.off('data', this.#onData)
    req.off('end', this.#onEnd)
    req.off('error', this.#onError)
    req.off('close', this.#onClose)
    req.pause()
    callback(err)
  }
}
