// `Expect: 100-continue` (docs/api.md section 1). Node's server would send `100 Continue` as soon
// as the headers arrive, before any check, so a client would upload a body already refused (a bad
// token, 413, 429). Sluice takes node's 'checkContinue' event instead (lib/http/server.ts): the
// `100 Continue` goes out when a handler starts reading the body (continueBody), after its checks.
// A request answered without it has `Connection: close`: the client may send the body it held
// back or not, so the connection cannot carry another request.
import type { IncomingMessage, ServerResponse } from 'node:http'

const waiting = new WeakMap<IncomingMessage, ServerResponse>()

/** A request that waits for `100 Continue` before it sends its body. */
export function expectContinue (req: IncomingMessage, res: ServerResponse): void {
  waiting.set(req, res)
  res.setHeader('connection', 'close')
}

/** Before a handler reads the body: the client's `100 Continue`, if it waits for one. */
export function continueBody (req: IncomingMessage): void {
  const res = waiting.get(req)
  if (res === undefined) return
  waiting.delete(req)
  if (res.headersSent) return
  res.removeHeader('connection')
  res.writeContinue()
}
