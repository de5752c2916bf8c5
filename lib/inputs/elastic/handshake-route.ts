// The requests Elasticsearch shippers make before or beside `_bulk` (docs/api.md section 6.10),
// answered minimally but in Elasticsearch 8's shapes, each authenticated by an ingest token (its
// stream is the target of `_bulk`; nothing here changes anything):
// - `GET|HEAD /api/elastic/` (and without the slash): the version handshake (Vector's
//   `api_version: auto`, Filebeat, Logstash, the official clients);
// - `_license`, `_xpack` (Filebeat's and Logstash's feature checks), `_cluster/health` and
//   `_nodes` (Vector's healthcheck, Logstash); `_cat/health` and `_cat/nodes` (cat-route.ts:
//   rsyslog's omelasticsearch resumes only once `_cat/health` answers 2xx);
// - index templates (composable and legacy), component templates, ILM policies, ingest
//   pipelines, data streams, aliases (Logstash's rollover alias): GET answers that one exists (so a setup step skips it), PUT
//   acknowledges and stores nothing;
// - `GET|HEAD|PUT /api/elastic/{index}` and `{index}/_refresh` (the JS bulk helper's
//   `refreshOnCompletion`): the index exists, the refresh succeeded.
import { createHash } from 'node:crypto'
import type { Router } from '../../http/router.ts'
import type { RequestContext } from '../../http/reply.ts'
import { sendJson } from '../../http/reply.ts'
import { SluiceError } from '../../errors.ts'
import type { Authenticator } from '../../auth/authenticate.ts'
import { elasticHandler, elasticVersion } from './elastic-request.ts'
import { registerElasticCatRoutes } from './cat-route.ts'

export interface HandshakeDeps {
  auth: Authenticator
}

const clusterName = 'sluice'
/** Elasticsearch's build date for the version answered (RFC 3339). */
const buildDate = '2024-12-11T12:08:05.663969764Z'
const buildHash = 'sluice'
const shards = { total: 1, successful: 1, failed: 0 }

export function registerElasticHandshakeRoutes (router: Router, deps: HandshakeDeps): void {
  /** Registers an authenticated handler answering `body(ctx, uuid)` with 200. */
  const answer = (method: string, pattern: string, body: (ctx: RequestContext, uuid: string) => unknown): void => {
    router.add(method, pattern, elasticHandler((ctx) => {
      const { org } = deps.auth.requireIngestToken(ctx.req)
      sendJson(ctx, 200, body(ctx, clusterUuid(org.id)))
    }))
  }
  const acknowledged = (): unknown => ({ acknowledged: true })

  for (const path of ['/api/elastic/', '/api/elastic']) answer('GET', path, (_ctx, uuid) => info(uuid))
  answer('GET', '/api/elastic/_license', (_ctx, uuid) => ({
    license: {
      status: 'active', uid: uuid, type: 'basic', issue_date: '1970-01-01T00:00:00.000Z', issue_date_in_millis: 0,
      max_nodes: 1000, max_resource_units: null, issued_to: clusterName, issuer: 'elasticsearch', start_date_in_millis: -1,
    },
  }))
  answer('GET', '/api/elastic/_xpack', (_ctx, uuid) => ({
    build: { hash: buildHash, date: buildDate },
    license: { uid: uuid, type: 'basic', mode: 'basic', status: 'active' },
    features: Object.fromEntries(['ilm', 'monitoring', 'data_streams', 'data_tiers', 'enrich', 'security'].map((name) => [name, { available: true, enabled: name !== 'security' }])),
    tagline: 'You know, for X',
  }))
  answer('GET', '/api/elastic/_cluster/health', () => clusterHealth())
  answer('GET', '/api/elastic/_cluster/health/:index', () => clusterHealth())
  for (const path of ['/api/elastic/_nodes', '/api/elastic/_nodes/:a', '/api/elastic/_nodes/:a/:b', '/api/elastic/_nodes/:a/:b/:c']) {
    answer('GET', path, (_ctx, uuid) => nodes(uuid))
  }
  registerElasticCatRoutes(router, { auth: deps.auth, clusterName })

  // Setup objects: each exists, with an empty definition; a PUT (or POST) is acknowledged and kept nowhere.
  answer('GET', '/api/elastic/_index_template/:name', (ctx) => ({
    index_templates: [{ name: ctx.params.name, index_template: { index_patterns: [`${ctx.params.name}*`], composed_of: [], template: {}, data_stream: {} } }],
  }))
  answer('GET', '/api/elastic/_component_template/:name', (ctx) => ({
    component_templates: [{ name: ctx.params.name, component_template: { template: {} } }],
  }))
  answer('GET', '/api/elastic/_template/:name', (ctx) => ({
    [ctx.params.name]: { order: 0, index_patterns: [`${ctx.params.name}*`], settings: {}, mappings: {}, aliases: {} },
  }))
  answer('GET', '/api/elastic/_ilm/policy/:name', (ctx) => ({
    [ctx.params.name]: { version: 1, modified_date: buildDate, policy: { phases: { hot: { min_age: '0ms', actions: {} } } } },
  }))
  answer('GET', '/api/elastic/_alias/:name', (ctx) => ({ [ctx.params.name]: { aliases: { [ctx.params.name]: { is_write_index: true } } } }))
  answer('GET', '/api/elastic/_ingest/pipeline/:name', (ctx) => ({ [ctx.params.name]: { description: '', processors: [] } }))
  answer('GET', '/api/elastic/_data_stream/:name', (ctx) => ({
    data_streams: [{
      name: ctx.params.name, timestamp_field: { name: '@timestamp' }, indices: [], generation: 1, status: 'GREEN',
      template: ctx.params.name, hidden: false, system: false,
    }],
  }))
  for (const kind of ['_index_template', '_component_template', '_template', '_ilm/policy', '_ingest/pipeline']) {
    answer('PUT', `/api/elastic/${kind}/:name`, acknowledged)
    answer('POST', `/api/elastic/${kind}/:name`, acknowledged)
  }
  answer('PUT', '/api/elastic/_data_stream/:name', acknowledged)

  for (const method of ['GET', 'POST']) {
    answer(method, '/api/elastic/_refresh', () => ({ _shards: shards }))
    answer(method, '/api/elastic/:index/_refresh', (ctx) => { checkIndex(ctx); return { _shards: shards } })
  }
  answer('GET', '/api/elastic/:index', (ctx) => ({
    [checkIndex(ctx)]: { aliases: {}, mappings: {}, settings: { index: { number_of_shards: '1', number_of_replicas: '0' } } },
  }))
  answer('PUT', '/api/elastic/:index', (ctx) => ({ acknowledged: true, shards_acknowledged: true, index: checkIndex(ctx) }))
}

/** `/api/elastic/{index}` catches every path of one segment: one starting with `_` names an API Sluice does not have. */
function checkIndex (ctx: RequestContext): string {
  const index = ctx.params.index
  if (index.startsWith('_')) throw new SluiceError('not_found', `Sluice does not answer the Elasticsearch API ${index}; see docs/api.md section 6.10`)
  return index
}

/** A stable cluster id per org (the answers never reveal the org's id itself). */
function clusterUuid (orgId: string): string {
  return createHash('sha256').update(`sluice-elastic/${orgId}`).digest('base64url').slice(0, 22)
}

function info (uuid: string): unknown {
  return {
    name: clusterName,
    cluster_name: clusterName,
    cluster_uuid: uuid,
    version: {
      number: elasticVersion.number,
      build_flavor: 'default',
      build_type: 'tar',
      build_hash: buildHash,
      build_date: buildDate,
      build_snapshot: false,
      lucene_version: elasticVersion.lucene,
      minimum_wire_compatibility_version: elasticVersion.minimumWire,
      minimum_index_compatibility_version: elasticVersion.minimumIndex,
    },
    tagline: 'You Know, for Search',
  }
}

function clusterHealth (): unknown {
  return {
    cluster_name: clusterName, status: 'green', timed_out: false, number_of_nodes: 1, number_of_data_nodes: 1,
    active_primary_shards: 1, active_shards: 1, relocating_shards: 0, initializing_shards: 0, unassigned_shards: 0,
    delayed_unassigned_shards: 0, number_of_pending_tasks: 0, number_of_in_flight_fetch: 0,
    task_max_waiting_in_queue_millis: 0, active_shards_percent_as_number: 100,
  }
}

/** One node, without an `http` section: a sniffing client would otherwise try to reach it without the /api/elastic base path. */
function nodes (uuid: string): unknown {
  return {
    _nodes: { total: 1, successful: 1, failed: 0 },
    cluster_name: clusterName,
    nodes: {
      [uuid]: { name: clusterName, version: elasticVersion.number, build_flavor: 'default', build_type: 'tar', build_hash: buildHash, roles: ['data', 'ingest', 'master'] },
    },
  }
}
