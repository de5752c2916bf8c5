// Bootstrap: the first start creates org default, user admin and an admin PAT written to
// ${dataDir}/admin-token (0600); later starts create nothing; SLUICE_BOOTSTRAP_TOKEN ensures a
// given admin PAT.
import t from 'tap'
import { stat, readFile, readdir, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startServer } from '../helpers/server.ts'
import { createTestDatabase } from '../helpers/clickhouse.ts'
import { generateToken, hashToken } from '../../lib/auth/token-format.ts'

t.test('first start creates the admin token file with mode 0600, once', async (t) => {
  const { database } = await createTestDatabase(t)
  const dataDir = await mkdtemp(join(tmpdir(), 'sluice-boot-'))
  t.teardown(() => rm(dataDir, { recursive: true, force: true }))
  const first = await startServer(t, {}, { database, dataDir })
  const file = join(dataDir, 'admin-token')
  t.equal((await stat(file)).mode & 0o777, 0o600)
  const token = (await readFile(file, 'utf8')).trim()
  t.equal(first.app.bootstrap.createdToken, token)
  t.match(token, /^slp_/)
  const me = await first.api('GET', '/api/tokens', { token })
  t.equal(me.status, 200)
  t.same(me.body.tokens[0].abilities, ['*', 'orgs:admin'])
  t.equal((await first.api('POST', '/api/orgs', { token, body: { name: 'second' } })).status, 201, 'the admin can create orgs')
  await first.app.close()

  const again = await startServer(t, {}, { database, dataDir })
  t.equal(again.app.bootstrap.createdToken, null, 'a later start creates no new token')
  t.equal((await readFile(file, 'utf8')).trim(), token, 'and leaves the file alone')
  t.equal((await again.api('GET', '/api/streams', { token })).status, 200, 'the first token still works')
  t.equal(again.app.store.orgByName('default')?.name, 'default')
})

t.test('a first start on a new database keeps the admin-token of the data dir\'s old one beside (explore34b G1)', async (t) => {
  const dataDir = await mkdtemp(join(tmpdir(), 'sluice-boot-'))
  t.teardown(() => rm(dataDir, { recursive: true, force: true }))
  const old = await startServer(t, {}, { database: (await createTestDatabase(t)).database, dataDir })
  const oldToken = old.adminToken
  await old.app.close()
  // The same data dir, another (empty) database: as when CLICKHOUSE_URL moves to a new engine.
  const fresh = await startServer(t, {}, { database: (await createTestDatabase(t)).database, dataDir })
  const file = join(dataDir, 'admin-token')
  t.equal((await readFile(file, 'utf8')).trim(), fresh.app.bootstrap.createdToken, 'admin-token is the new database\'s')
  const kept = fresh.app.bootstrap.keptTokenFile
  t.match(kept, /admin-token\.\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z$/)
  t.equal((await readFile(kept as string, 'utf8')).trim(), oldToken, 'the old token is kept')
  t.equal((await stat(kept as string)).mode & 0o777, 0o600)
  t.equal((await readdir(dataDir)).filter((f) => f.startsWith('admin-token')).length, 2)
})

t.test('SLUICE_BOOTSTRAP_TOKEN: the first start uses that secret', async (t) => {
  const secret = generateToken('pat')
  const s = await startServer(t, { bootstrapToken: secret })
  t.equal(s.adminToken, secret)
  const r = await s.api('GET', '/api/tokens', { token: secret })
  t.equal(r.status, 200)
  t.ok(r.body.tokens.some((x: { abilities: string[] }) => x.abilities.includes('*') && x.abilities.includes('orgs:admin')))
})

t.test('SLUICE_BOOTSTRAP_TOKEN on an existing install adds that admin PAT', async (t) => {
  const { database } = await createTestDatabase(t)
  const first = await startServer(t, {}, { database })
  await first.app.close()
  const secret = generateToken('pat')
  t.equal((await first.api('GET', '/api/streams', { token: secret }).catch(() => ({ status: 0 }))).status, 0, 'server 1 is down')
  const second = await startServer(t, { bootstrapToken: secret }, { database })
  const r = await second.api('POST', '/api/orgs', { token: secret, body: { name: 'automated' } })
  t.equal(r.status, 201, 'the bootstrap token has orgs:admin')
  await second.app.close()
  const third = await startServer(t, { bootstrapToken: secret }, { database })
  const mine = (await third.api('GET', '/api/tokens', { token: secret })).body.tokens
  t.equal(mine.filter((x: { name: string }) => x.name === 'bootstrap').length, 1, 'starting again does not add a second copy')
})

t.test('a malformed bootstrap token refuses to start', async (t) => {
  await t.rejects(startServer(t, { bootstrapToken: 'slp_short' }), { name: 'ConfigError' })
})

t.test('two PATs with one secret (a copied database bootstrapped with the same SLUICE_BOOTSTRAP_TOKEN): the older, then the one not revoked (explore34b G8)', async (t) => {
  const secret = generateToken('pat')
  const s = await startServer(t, { bootstrapToken: secret })
  const original = s.app.store.patByHash(hashToken(secret))!
  // The copy's own bootstrap: a newer PAT with the same secret, in an org of its own.
  const copy = await s.app.accounts.createOrgWithOwner('copied-default', original.createdAt + 1000, ['orgs:admin'], secret)
  t.equal(s.app.store.patByHash(hashToken(secret))?.id, original.id, 'the older PAT')
  t.equal((await s.api('GET', '/api/streams', { token: secret })).status, 200)
  await s.app.accounts.revokePat(s.app.store.pat(copy.pat.id)!, Date.now())
  t.equal(s.app.store.patByHash(hashToken(secret))?.id, original.id, 'revoking the copy\'s PAT keeps the secret working')
  t.equal((await s.api('GET', '/api/streams', { token: secret })).status, 200)
  await s.app.accounts.revokePat(s.app.store.pat(original.id)!, Date.now())
  t.equal((await s.api('GET', '/api/streams', { token: secret })).status, 403, 'both revoked: refused')
  // A reload (another node's change, a restart) makes the same choice.
  await s.app.store.reload()
  t.equal(s.app.store.patByHash(hashToken(secret))?.id, original.id)
})
