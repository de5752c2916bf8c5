// GET /api/streams/{stream}/tail?q=: the live tail as Server-Sent Events (see tail-hub.ts).
// The filter is checked before the stream starts, so a bad `q` is a plain 400 invalid_query.
// HEAD (which the router sends to GET routes) passes the same checks (the org's tail limit too)
// and gets the headers of a tail alone, then the response ends: a HEAD has no body, so there is
// nothing to hold open for.
import type { Router } from '../http/router.ts'
import type { Authenticator } from '../auth/authenticate.ts'
import type { Accounts } from '../accounts/accounts.ts'
import { findStream, isCurrentStream } from '../streams/streams.ts'
import { textParam } from '../http/query-params.ts'
import { parseFilter } from '../query/filter-parser.ts'
import { tailResponseHeaders } from './tail-hub.ts'
import type { TailHub } from './tail-hub.ts'

export function registerTailRoute (router: Router, deps: { auth: Authenticator, accounts: Accounts, hub: TailHub }): void {
  const { auth, accounts, hub } = deps
  router.add('GET', '/api/streams/:stream/tail', async (ctx) => {
    const principal = auth.requirePat(ctx.req, 'data:read')
    const { org } = principal
    const stream = findStream(accounts.store, org.id, ctx.params.stream)
    const q = (textParam(ctx.url, 'q') ?? '').trim()
    parseFilter(q)
    if (ctx.req.method === 'HEAD') {
      hub.checkRoom(org.id) // the status a GET would get now
      ctx.res.writeHead(200, tailResponseHeaders)
      ctx.res.end()
      return
    }
    // The stream and the token are checked as long as the tail is open: the stream deleted (or
    // made again under its name), or the token revoked or expired, the tail ends (a leaked PAT
    // reads no more live data than a new request with it could, explore26c).
    hub.open(ctx.res, org.id, stream.name, q, () => {
      if (!isCurrentStream(accounts.store, stream)) return 'stream_deleted'
      return auth.stillLive(principal) ? null : 'token_invalid'
    })
    // The request stays in flight until the client goes away or the hub ends it.
    await new Promise<void>((resolve) => { ctx.res.once('close', resolve) })
  })
}
