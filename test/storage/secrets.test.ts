// No token secret is ever stored: dump every table of the database after issuing tokens of every
// kind and look for each secret (and its random part) in the dump.
import t from 'tap'
import { startServer } from '../helpers/server.ts'

t.test('a dump of every ClickHouse table contains no token secret', async (t) => {
  const s = await startServer(t)
  const secrets = [s.adminToken]
  await s.api('POST', '/api/streams', { body: { name: 'web' } })
  secrets.push((await s.api('POST', '/api/streams/web/ingest-token', { body: {} })).body.token)
  secrets.push((await s.api('POST', '/api/tokens', { body: { name: 'p', abilities: ['streams:read'] } })).body.token)
  const org = (await s.api('POST', '/api/orgs', { body: { name: 'other' } })).body
  secrets.push(org.token.token)
  // Use them, so usage rows are written too.
  for (const secret of secrets) await s.api('GET', '/api/streams', { token: secret })
  await s.app.store.stop() // writes the pending usage rows
  t.equal(secrets.length, 4)

  const tables = await s.app.clickhouse.query<{ name: string }>(`SELECT name FROM system.tables WHERE database = '${s.database}'`)
  t.ok(tables.length >= 6, `tables: ${tables.map((x) => x.name).join(', ')}`)
  let dump = ''
  for (const { name } of tables) {
    const rows = await s.app.clickhouse.query(`SELECT * FROM \`${name}\``)
    dump += JSON.stringify(rows)
  }
  t.ok(dump.length > 1000, 'the dump holds the records')
  for (const secret of secrets) {
    t.notOk(dump.includes(secret), 'whole secret absent')
    t.notOk(dump.includes(secret.slice(8, 30)), 'random part absent')
  }
})
