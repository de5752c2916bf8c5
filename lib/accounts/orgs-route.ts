// Creating organizations (orgs:admin only): the new org, its owner and the owner's `*` PAT.
import type { Router } from '../http/router.ts'
import { sendJson, toRfc3339 } from '../http/reply.ts'
import { readJsonBody } from '../http/json-body.ts'
import { allowOnly, requiredName } from '../http/fields.ts'
import type { Authenticator } from '../auth/authenticate.ts'
import type { Accounts } from './accounts.ts'
import { orgView, userView } from './views.ts'

export function registerOrgRoutes (router: Router, deps: { auth: Authenticator, accounts: Accounts }): void {
  const { auth, accounts } = deps

  router.add('POST', '/api/orgs', async (ctx) => {
    auth.requirePat(ctx.req, 'orgs:admin')
    const body = await readJsonBody(ctx.req)
    allowOnly(body, ['name'])
    const name = requiredName(body, 'name')
    const { org, user, pat, token } = await accounts.createOrgWithOwner(name, accounts.now())
    sendJson(ctx, 201, {
      org: orgView(org),
      user: userView(user),
      token: {
        id: pat.id, token, name: pat.name, abilities: pat.abilities,
        created_at: toRfc3339(pat.createdAt), expires_at: toRfc3339(pat.expiresAt),
      },
    })
  })
}
