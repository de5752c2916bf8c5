// The read API's serializers (lib/http/serializers.ts, compiled by fast-json-stringify from the
// schemas the OpenAPI document publishes) write exactly what JSON.stringify would of real
// answers: a member the schema lacked would be missing here, a wrong type would change a value.
import t from 'tap'
import { startServer } from '../helpers/server.ts'
import { createIngestTarget, postIngest } from '../helpers/ingest.ts'
import { serializeFields, serializeStats } from '../../lib/http/serializers.ts'
import { openApiDocument } from '../../lib/http/openapi.ts'
import { fieldsSchema, statsSchema } from '../../lib/http/read-schemas.ts'
import { queryStats } from '../../lib/query/stats-query.ts'
import { queryFields } from '../../lib/query/fields-query.ts'
import { fieldPresentSql, fieldTextSql, resolveField } from '../../lib/query/field-ref.ts'
import { noLegacyRows } from '../../lib/query/attr-sql.ts'

t.test('stats and fields answers serialize as JSON.stringify writes them', async (t) => {
  const s = await startServer(t)
  const tgt = await createIngestTarget(s, 'web')
  const base = Date.now() - 600_000
  const lines = Array.from({ length: 200 }, (_, i) => JSON.stringify({
    ts: base + i * 1000, host: `h${i % 3}`, path: `/p${i % 4}`, status: [200, 404, 500][i % 3], rt: i % 5 === 0 ? undefined : i / 1000,
    bytes: i, src: `10.0.0.${i % 7}`, user_agent: 'ua', level: 'info', service: 'api', user: { id: i % 9 }, ok: i % 2 === 0, 'é "q"': 'x\n',
  }))
  await postIngest(tgt, lines.join('\n'))
  const orgId = s.app.store.orgByName('default')!.id
  const by = resolveField('user.id')
  const stats = await queryStats(s.app.clickhouse, {
    orgId, stream: 'web', from: base, to: base + 200_000, stepMs: 10_000, by: { text: fieldTextSql(by, noLegacyRows), present: fieldPresentSql(by, noLegacyRows) },
  })
  t.ok(stats.groups !== undefined && stats.groups.length > 0, 'the answer has groups')
  t.strictSame(JSON.parse(serializeStats(stats)), JSON.parse(JSON.stringify(stats)), 'stats with groups')
  const plain = await queryStats(s.app.clickhouse, { orgId, stream: 'web', from: base, to: base + 200_000 })
  t.strictSame(JSON.parse(serializeStats(plain)), JSON.parse(JSON.stringify(plain)), 'stats without groups')
  const fields = await queryFields(s.app.clickhouse, { orgId, stream: 'web', from: base, to: base + 200_000, scope: noLegacyRows, hiddenBefore: 0, top: 5, maxGroupKeys: 1_000_000 })
  t.ok(fields.fields.some((f) => f.name === 'é "q"'), 'an attribute with quotes and non-ASCII')
  t.strictSame(JSON.parse(serializeFields(fields)), JSON.parse(JSON.stringify(fields)), 'fields')
})

t.test('the OpenAPI document publishes the very schema objects the serializers compile', async (t) => {
  const schemas = openApiDocument.components.schemas as Record<string, unknown>
  t.equal(schemas.Stats, statsSchema)
  t.equal(schemas.Fields, fieldsSchema)
})
