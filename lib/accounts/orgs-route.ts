// Creating organizations (orgs:admin only): the new org, its owner and the owner's `*` PAT.
import type { Router } from '../http/router.ts'
import { sendJson, toRfc3339 } from '../http/reply.ts'
import { readJsonBody } from '../http/json-body.ts'
import { allowOnly, requiredName } from '../http/fields.ts'
import type { Authenticator } from '../auth/authenticate.ts'
import type { Accounts } from './accounts.ts'
import { orgView, userView } from './views.ts'
import type { AuditLog } from '../audit/audit-log.ts'
import { auditContext } from '../audit/audit-log.ts'

export function registerOrgRoutes (router: Router, deps: { auth: Authenticator, accounts: Accounts, audit: AuditLog }): void {
  const { auth, accounts, audit } = deps

  router.add('POST', '/api/orgs', async (ctx) => {
    const principal = auth.requirePat(ctx.req, 'orgs:admin')
    const body = await readJsonBody(ctx.req)
    allowOnly(body, ['name'])
    const name = requiredName(body, 'name')
    const { org, user, pat, token } = await accounts.createOrgWithOwner(name, accounts.now())
    await audit.record({
      ...auditContext(ctx, principal), action: 'org.created', targetKind: 'org', targetId: org.id,
      details: { name, owner_user_id: user.id, owner_token_id: pat.id, owner_abilities: pat.abilities },
    })
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
