// The caller's own PATs: create (abilities at most the caller's own), list, revoke. Issuing a
// token is account management, so this route lives with the accounts and uses lib/auth (token
// format, abilities, the authenticator) from below; lib/auth imports nothing from here.
import type { Router } from '../http/router.ts'
import { sendEmpty, sendJson, toRfc3339 } from '../http/reply.ts'
import { readJsonBody } from '../http/json-body.ts'
import { allowOnly, optionalInteger, optionalString } from '../http/fields.ts'
import { SluiceError } from '../errors.ts'
import type { Authenticator } from '../auth/authenticate.ts'
import type { Accounts } from './accounts.ts'
import { patView } from './views.ts'
import { coversAbilities, isAbility, abilities as knownAbilities } from '../auth/abilities.ts'
import type { AuditLog } from '../audit/audit-log.ts'
import { auditContext } from '../audit/audit-log.ts'

const maxTtlS = 315_360_000

export function registerTokenRoutes (router: Router, deps: { auth: Authenticator, accounts: Accounts, audit: AuditLog }): void {
  const { auth, accounts, audit } = deps

  router.add('POST', '/api/tokens', async (ctx) => {
    const principal = auth.requirePat(ctx.req, 'tokens:manage')
    const { pat, user } = principal
    const body = await readJsonBody(ctx.req)
    allowOnly(body, ['name', 'abilities', 'ttl'])
    const name = optionalString(body, 'name', 200)
    if (name === undefined || name === '') throw new SluiceError('validation_failed', 'name is required')
    const requested = body.abilities
    if (!Array.isArray(requested) || requested.length === 0 || !requested.every(isAbility)) {
      throw new SluiceError('validation_failed', `abilities must be a non-empty array of: ${knownAbilities.join(', ')}`)
    }
    if (!coversAbilities(pat.abilities, requested)) {
      throw new SluiceError('insufficient_ability', 'A token cannot grant abilities its creator does not hold')
    }
    const ttl = optionalInteger(body, 'ttl', 60, maxTtlS) ?? null
    const issued = await accounts.createPat(user, name, requested, ttl, accounts.now())
    await audit.record({
      ...auditContext(ctx, principal), action: 'token.created', targetKind: 'pat', targetId: issued.pat.id,
      details: { name, abilities: issued.pat.abilities, expires_at: toRfc3339(issued.pat.expiresAt) },
    })
    sendJson(ctx, 201, {
      id: issued.pat.id, token: issued.token, name: issued.pat.name, abilities: issued.pat.abilities,
      created_at: toRfc3339(issued.pat.createdAt), expires_at: toRfc3339(issued.pat.expiresAt),
    })
  })

  router.add('GET', '/api/tokens', (ctx) => {
    const { user } = auth.requirePat(ctx.req, 'tokens:manage')
    const now = accounts.now()
    sendJson(ctx, 200, { tokens: accounts.store.patsOfUser(user.id).map((p) => patView(p, now)) })
  })

  router.add('DELETE', '/api/tokens/:id', async (ctx) => {
    const principal = auth.requirePat(ctx.req, 'tokens:manage')
    const { pat, user } = principal
    const target = accounts.store.pat(ctx.params.id)
    if (!target || target.userId !== user.id) throw new SluiceError('not_found', 'No such token')
    // Revoking is as strong as granting: a narrower PAT (a leaked CI token, say) must not be able
    // to lock out the admin PAT it was made from.
    if (!coversAbilities(pat.abilities, target.abilities)) {
      throw new SluiceError('insufficient_ability', 'A token cannot revoke a token holding abilities it does not hold itself')
    }
    if (target.revokedAt === null) {
      await accounts.revokePat(target, accounts.now())
      await audit.record({
        ...auditContext(ctx, principal), action: 'token.revoked', targetKind: 'pat', targetId: target.id,
        details: { name: target.name, abilities: target.abilities },
      })
    }
    sendEmpty(ctx, 204)
  })
}
