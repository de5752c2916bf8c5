// First start: when no org exists, create org `default`, its user `admin` and a PAT with `*` and
// `orgs:admin`; the secret is returned once (main prints it) and written to
// ${dataDir}/admin-token with mode 0600. A file already there holds another database's token
// (the data dir kept while CLICKHOUSE_URL names a new database: an upgrade onto the embedded
// engine, docs/schema-versions.md): it is the only copy of that secret, so it is kept beside, as
// admin-token.<time>, never overwritten (explore34b G1). With a bootstrap token configured
// (automation), the start also makes sure a PAT with exactly that secret exists for the default
// org's admin.
import { mkdir, rename, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { Logger } from '../logger.ts'
import type { Accounts } from './accounts.ts'
import { hashToken, parseToken } from '../auth/token-format.ts'

export interface BootstrapResult {
  /** The admin PAT secret when this start created it, else null. */
  createdToken: string | null
  /** Where the first admin token was written. */
  tokenFile: string
  /** Where this start moved an admin-token that was there before (another database's), else null. */
  keptTokenFile: string | null
}

export const adminAbilities = ['*', 'orgs:admin']

/**
 * A configured bootstrap token whose checksum does not hold (a typo): every request would refuse
 * it, so the start refuses it instead (lib/main.ts, exit 78). Null when there is none or it holds.
 */
export function bootstrapTokenProblem (bootstrapToken: string | null): string | null {
  if (bootstrapToken === null || parseToken(bootstrapToken) === 'pat') return null
  return 'bootstrapToken must be an slp_ token Sluice made: its last 6 characters, a checksum of the 30 before them, do not match (a typo?) (from SLUICE_BOOTSTRAP_TOKEN or the config file)'
}

export async function bootstrap (accounts: Accounts, options: { dataDir: string, bootstrapToken: string | null, log: Logger }): Promise<BootstrapResult> {
  const { dataDir, bootstrapToken, log } = options
  const store = accounts.store
  const tokenFile = join(dataDir, 'admin-token')
  const now = accounts.now()

  if (store.orgCount() === 0) {
    const { org, user, token } = await accounts.createOrgWithOwner('default', now, ['orgs:admin'], bootstrapToken ?? undefined)
    await mkdir(dataDir, { recursive: true })
    const keptTokenFile = await keepPrevious(tokenFile, now)
    if (keptTokenFile !== null) log.warn('bootstrap: admin-token held another database\'s token; kept', { kept_as: keptTokenFile })
    await writeFile(tokenFile, token + '\n', { mode: 0o600 })
    log.info('bootstrap: created org, admin user and admin token', { org: org.name, user: user.name, token_file: tokenFile })
    return { createdToken: token, tokenFile, keptTokenFile }
  }

  if (bootstrapToken) {
    const existing = store.patByHash(hashToken(bootstrapToken))
    if (existing?.revokedAt) {
      log.warn('bootstrap token was revoked; it stays revoked', { token_id: existing.id })
    } else if (!existing) {
      const org = store.orgByName('default')
      const admin = org && store.usersOfOrg(org.id).find((u) => u.name === 'admin')
      if (!admin) {
        log.warn('bootstrap token not installed: org default or its admin user is missing')
      } else {
        await accounts.createPat(admin, 'bootstrap', adminAbilities, 0, now, bootstrapToken)
        log.info('bootstrap token installed as admin PAT')
      }
    }
  }
  return { createdToken: null, tokenFile, keptTokenFile: null }
}

/** Moves `file` to `<file>.<time>` when it exists (mode and content kept); its new name, or null. */
async function keepPrevious (file: string, now: number): Promise<string | null> {
  if (!(await stat(file).then(() => true, () => false))) return null
  const kept = `${file}.${new Date(now).toISOString().replace(/[:.]/g, '-')}`
  await rename(file, kept)
  return kept
}
