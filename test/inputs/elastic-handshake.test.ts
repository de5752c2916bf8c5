// The requests Elasticsearch shippers make besides _bulk, over raw HTTP: the version handshake
// with the product header, the license and feature checks, health and nodes, setup objects that
// exist and acknowledge, index probes, and the authentication they all need.
import t from 'tap'
import { request } from 'undici'
import { startServer } from '../helpers/server.ts'
import type { TestServer } from '../helpers/server.ts'
import { createIngestTarget } from '../helpers/ingest.ts'
import type { IngestTarget } from '../helpers/ingest.ts'

let s: TestServer
let tgt: IngestTarget
t.before(async () => {
  s = await startServer(t)
  tgt = await createIngestTarget(s, 'handshake')
})

async function call (method: string, path: string, headers: Record<string, string> = {}, body?: string) {
  const res = await request(s.url + path, { method: method as 'GET', headers: { authorization: `Bearer ${tgt.token}`, ...headers }, body })
  const text = await res.body.text()
  return { status: res.statusCode, headers: res.headers, body: text ? JSON.parse(text) : null }
}

t.test('GET /api/elastic/ answers like Elasticsearch 8 with the product header; HEAD and the path without the slash too', async (t) => {
  for (const path of ['/api/elastic/', '/api/elastic']) {
    const r = await call('GET', path)
    t.equal(r.status, 200)
    t.equal(r.headers['x-elastic-product'], 'Elasticsearch')
    t.match(r.body, { name: String, cluster_name: String, cluster_uuid: String, tagline: 'You Know, for Search' })
    t.match(r.body.version, { number: /^8\.\d+\.\d+$/, build_flavor: 'default', lucene_version: String })
  }
  const head = await call('HEAD', '/api/elastic/')
  t.equal(head.status, 200)
  t.equal(head.headers['x-elastic-product'], 'Elasticsearch')
  const again = await call('GET', '/api/elastic/')
  t.equal(again.body.cluster_uuid, (await call('GET', '/api/elastic')).body.cluster_uuid, 'the cluster id is stable')
})

t.test('the feature checks and health probes answer in Elasticsearch\'s shapes', async (t) => {
  const license = await call('GET', '/api/elastic/_license')
  t.equal(license.status, 200)
  t.match(license.body.license, { status: 'active', type: 'basic' })
  const xpack = await call('GET', '/api/elastic/_xpack')
  t.equal(xpack.status, 200)
  t.match(xpack.body, { license: { status: 'active' }, features: { ilm: { available: true, enabled: true } } })
  const health = await call('GET', '/api/elastic/_cluster/health')
  t.equal(health.status, 200)
  t.equal(health.body.status, 'green')
  for (const path of ['/api/elastic/_nodes', '/api/elastic/_nodes/_local', '/api/elastic/_nodes/_all/http']) {
    const nodes = await call('GET', path)
    t.equal(nodes.status, 200, path)
    t.equal(nodes.body._nodes.total, 1)
    const [node] = Object.values(nodes.body.nodes) as any[]
    t.match(node.version, /^8\./)
    t.notOk(node.http, 'no publish address for a sniffer to follow')
  }
})

t.test('_cat/health and _cat/nodes answer 2xx as Elasticsearch does: text columns, a header with v, JSON with format=json', async (t) => {
  const text = async (method: string, path: string, headers: Record<string, string> = {}) => {
    const res = await request(s.url + path, { method: method as 'GET', headers: { authorization: `Bearer ${tgt.token}`, ...headers } })
    return { status: res.statusCode, headers: res.headers, body: await res.body.text() }
  }
  // rsyslog's omelasticsearch resumes after a 429 or 5xx only once this answers 2xx (issue 21).
  const health = await text('GET', '/api/elastic/_cat/health')
  t.equal(health.status, 200)
  t.equal(health.headers['x-elastic-product'], 'Elasticsearch')
  t.match(health.headers['content-type'], /^text\/plain/)
  t.match(health.body, /^\d{10} \d\d:\d\d:\d\d sluice green 1 1 1 1 0 0 0 0 0 - 100\.0%\n$/)
  const verbose = await text('GET', '/api/elastic/_cat/health?v')
  const [header, row] = verbose.body.split('\n')
  t.same(header.split(/ +/), ['epoch', 'timestamp', 'cluster', 'status', 'node.total', 'node.data', 'shards', 'pri', 'relo', 'init', 'unassign', 'unassign.pri', 'pending_tasks', 'max_task_wait_time', 'active_shards_percent'])
  t.equal(header.indexOf('status'), row.indexOf('green'), 'columns aligned')
  const json = await call('GET', '/api/elastic/_cat/health?format=json')
  t.equal(json.status, 200)
  t.match(json.body, [{ cluster: 'sluice', status: 'green', 'node.total': '1', epoch: /^\d+$/ }])
  const head = await text('HEAD', '/api/elastic/_cat/health')
  t.equal(head.status, 200)
  t.equal(head.body, '', 'HEAD: no body')
  const nodes = await call('GET', '/api/elastic/_cat/nodes?format=json')
  t.equal(nodes.status, 200)
  t.match(nodes.body, [{ name: 'sluice', master: '*', 'node.role': String }])
  t.match((await text('GET', '/api/elastic/_cat/nodes')).body, /^- .* \* sluice\n$/)
  const anonymous = await request(s.url + '/api/elastic/_cat/health')
  t.equal(anonymous.statusCode, 401, 'an ingest token, as every route under /api/elastic')
  await anonymous.body.text()
})

t.test('setup objects exist and a PUT is acknowledged', async (t) => {
  const json = { 'content-type': 'application/json' }
  for (const kind of ['_index_template', '_component_template', '_template', '_ilm/policy', '_ingest/pipeline']) {
    const got = await call('GET', `/api/elastic/${kind}/filebeat-8.17.0`)
    t.equal(got.status, 200, kind)
    t.equal((await call('HEAD', `/api/elastic/${kind}/filebeat-8.17.0`)).status, 200)
    const put = await call('PUT', `/api/elastic/${kind}/filebeat-8.17.0`, json, '{"index_patterns":["filebeat-*"]}')
    t.equal(put.status, 200)
    t.same(put.body, { acknowledged: true })
  }
  const alias = await call('HEAD', '/api/elastic/_alias/logstash')
  t.equal(alias.status, 200, 'a rollover alias exists')
  const template = await call('GET', '/api/elastic/_index_template/logs')
  t.equal(template.body.index_templates[0].name, 'logs')
  const ds = await call('GET', '/api/elastic/_data_stream/logs-app')
  t.equal(ds.body.data_streams[0].name, 'logs-app')
  t.same((await call('PUT', '/api/elastic/_data_stream/logs-app')).body, { acknowledged: true })
})

t.test('index probes: the index exists, creating it is acknowledged, a refresh succeeds', async (t) => {
  const head = await call('HEAD', '/api/elastic/logs-2026.11.24')
  t.equal(head.status, 200)
  const got = await call('GET', '/api/elastic/logs-2026.11.24')
  t.ok(got.body['logs-2026.11.24'])
  const put = await call('PUT', '/api/elastic/my-index')
  t.match(put.body, { acknowledged: true, index: 'my-index' })
  const refresh = await call('POST', '/api/elastic/my-index/_refresh')
  t.same(refresh.body, { _shards: { total: 1, successful: 1, failed: 0 } })
  const unknown = await call('GET', '/api/elastic/_cat')
  t.equal(unknown.status, 404)
  t.equal(unknown.body.error, 'not_found')
  // The single-document API is not Sluice's (documents go through _bulk): 404, as an Elasticsearch answer.
  for (const [method, path] of [['PUT', '/api/elastic/logs/_doc/1'], ['GET', '/api/elastic/logs/_doc/1'], ['POST', '/api/elastic/logs/_doc']]) {
    const doc = await call(method, path)
    t.equal(doc.status, 404, `${method} ${path}`)
    t.equal(doc.body.error, 'not_found')
    t.equal(doc.headers['x-elastic-product'], 'Elasticsearch', 'with the product header the clients check')
  }
  const getBulk = await call('GET', '/api/elastic/_bulk')
  t.equal(getBulk.status, 405, '_bulk takes POST and PUT')
  t.equal(getBulk.body.error, 'method_not_allowed')
  t.equal(getBulk.headers.allow, 'POST, PUT')
  t.equal(getBulk.headers['x-elastic-product'], 'Elasticsearch')
})

t.test('every route needs an ingest token; the errors carry the product header', async (t) => {
  const none = await request(s.url + '/api/elastic/', { method: 'GET' })
  t.equal(none.statusCode, 401)
  t.equal(none.headers['x-elastic-product'], 'Elasticsearch')
  await none.body.text()
  const pat = await call('GET', '/api/elastic/_license', { authorization: `Bearer ${s.adminToken}` })
  t.equal(pat.status, 403)
  t.equal(pat.body.error, 'wrong_token_kind')
  const apiKey = await call('GET', '/api/elastic/_xpack', { authorization: `ApiKey ${Buffer.from(`id:${tgt.token}`).toString('base64')}` })
  t.equal(apiKey.status, 200)
  const basic = await call('GET', '/api/elastic/', { authorization: `Basic ${Buffer.from(`elastic:${tgt.token}`).toString('base64')}` })
  t.equal(basic.status, 200)
})
