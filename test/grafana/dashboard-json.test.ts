// The Grafana dashboard's queries run on our ClickHouse: each panel's SQL, with Grafana's
// variables filled in, is executed against a database holding known events, and the results are
// checked where they are easy to know.
import t from 'tap'
import { readFileSync } from 'node:fs'
import { startServer } from '../helpers/server.ts'
import { createIngestTarget, postIngest } from '../helpers/ingest.ts'

const dashboard = JSON.parse(readFileSync(new URL('../../config/grafana/sluice-stream.json', import.meta.url), 'utf8'))

t.test('every panel query and variable query runs and answers', async (t) => {
  const s = await startServer(t)
  const tgt = await createIngestTarget(s, 'web')
  const now = Date.now()
  const lines = Array.from({ length: 40 }, (_, i) => JSON.stringify({
    ts: now - i * 1000, path: i % 4 === 0 ? '/missing' : '/ok', status: i % 4 === 0 ? 404 : i % 10 === 1 ? 503 : 200,
    rt: 0.01 * (i + 1), bytes: 100, host: 'h', src: `10.0.0.${i % 2}`, user_agent: 'curl/8',
  }))
  t.equal((await postIngest(tgt, lines.join('\n'))).body.ingested, 40)
  const org = s.app.store.orgByName('default')!.id
  // Grafana's own ${variables}, filled in as Grafana would.
  /* eslint-disable no-template-curly-in-string */
  const fill = (sqlText: string) => sqlText
    .replaceAll('${database}', s.database).replaceAll('${org}', org).replaceAll('${stream}', 'web')
    .replaceAll('${__from}', String(now - 3_600_000)).replaceAll('${__to}', String(now + 1000))
    .replaceAll('${__interval_ms}', '10000')
  /* eslint-enable no-template-curly-in-string */

  const variables = dashboard.templating.list.filter((v: { type: string }) => v.type === 'query')
  const orgs = await s.app.clickhouse.query<{ __value: string }>(fill(variables[0].query))
  t.ok(orgs.some((o) => o.__value === org), 'the org variable lists the org')
  const streams = await s.app.clickhouse.query<{ name: string }>(fill(variables[1].query))
  t.same(streams.map((x) => x.name), ['web'])

  const results = new Map<string, Array<Record<string, unknown>>>()
  for (const panel of dashboard.panels) {
    const rows = await s.app.clickhouse.query(fill(panel.targets[0].rawSql))
    results.set(panel.title, rows)
    t.ok(rows.length > 0, `${panel.title}: ${rows.length} rows`)
  }
  t.equal(results.get('Events')![0].events, 40)
  t.same(results.get('404 paths'), [{ path: '/missing', count: 10 }])
  t.equal(results.get('Top paths')![0].path, '/ok')
  t.equal(results.get('Recent errors')!.length, 4, 'four 503s')
  const perSecond = results.get('Events/s by status class')!.reduce((n, r) => n + Number(r['2xx']) + Number(r['4xx']) + Number(r['5xx']), 0)
  t.equal(Math.round(perSecond * 10), 40, 'rates × 10 s buckets add up to the events')
})
