// The OpenAPI 3.1 document of Sluice's whole HTTP API, served at GET /api/openapi.json
// (lib/http/openapi-route.ts). docs/api.md is the prose reference; this is the same API for
// tools (client generators, API explorers, contract tests).
//
// Contract: test/http/openapi.test.ts holds this document to the router: every route the app
// registers has its path and method here and every path and method here is a registered route
// (HEAD operations stand for the GET route they share, docs/api.md section 1); every code of
// lib/errors.ts's catalogue is in the Error schema's enum, written out below on purpose (not read
// from the catalogue) so that a new code has to be documented. Paths use OpenAPI's `{name}` for
// the router's `:name`, with the router's own parameter names.

import { eventSchema, fieldsSchema, statsSchema } from './read-schemas.ts'

type Json = Record<string, unknown>

const ref = (name: string): Json => ({ $ref: `#/components/schemas/${name}` })
const jsonContent = (schema: Json): Json => ({ 'application/json': { schema } })

/** The error responses by status, each the one error body (docs/api.md section 1). */
const errorResponse = (description: string): Json => ({ description, content: jsonContent(ref('Error')) })
const retryAfterResponse = (description: string): Json => ({
  description,
  headers: { 'Retry-After': { $ref: '#/components/headers/Retry-After' } },
  content: jsonContent(ref('Error')),
})
const errors = {
  400: errorResponse('bad_request, invalid_query or another 400 code of the Error schema'),
  401: errorResponse('unauthorized: no or malformed Authorization'),
  403: errorResponse('invalid_token, wrong_token_kind, insufficient_ability or forbidden_stream'),
  404: errorResponse('not_found: the stream or id is not in the caller\'s org'),
  413: errorResponse('payload_too_large'),
  422: errorResponse('validation_failed (management bodies) or all_lines_failed (ingest, with the summary fields)'),
  429: retryAfterResponse('rate_limited, too_many_concurrent_requests, server_busy or too_many_tails'),
  503: retryAfterResponse('storage_unavailable, storage_outcome_unknown, not_ready or shutting_down'),
} as const
type ErrorStatus = keyof typeof errors
const pick = (...statuses: ErrorStatus[]): Json => Object.fromEntries(statuses.map((s) => [String(s), errors[s]]))

/** Every read's refusals: its limits (docs/api.md section 7.9) besides the usual ones. */
const readErrors: Json = {
  ...pick(400, 401, 403, 404),
  422: errorResponse('query_too_expensive: the read needed more memory or groups than a read may use'),
  429: retryAfterResponse('too_many_reads: the org\'s read slots (query.maxConcurrentPerOrg, query.maxScansPerOrg) stayed taken for query.maxQueueMs, or its queue is full'),
  503: retryAfterResponse('storage_unavailable'),
  504: errorResponse('query_timeout: the read ran past query.timeoutMs'),
  431: errorResponse('headers_too_large: the request line and headers passed 16 KiB (a `q` that long)'),
}

const pat = [{ bearerAuth: [] }]
/** Ingest tokens: Bearer, or Basic with the token as the password (shippers that only do Basic). */
const ingestToken = [{ bearerAuth: [] }, { basicAuth: [] }]
const pathParam = (name: string, description: string): Json => ({ name, in: 'path', required: true, schema: { type: 'string' }, description })
const queryParam = (name: string, description: string, schema: Json = { type: 'string' }): Json => ({ name, in: 'query', required: false, schema, description })
const stream = pathParam('stream', 'Stream name, `^[a-z0-9][a-z0-9_-]{0,62}$`')
const timeRange = [
  queryParam('from', 'RFC 3339, epoch ms, `now`, `now-<n><s|m|h|d>` or `now+<n><s|m|h|d>`; inclusive; default 15 minutes before `to` (docs/api.md section 7.1)'),
  queryParam('to', 'Same forms as `from`; exclusive; default now'),
  queryParam('q', 'Filter (docs/api.md section 7.2)'),
]
const jsonBody = (schema: Json): Json => ({ required: true, content: jsonContent(schema) })
const ok = (description: string, schema?: Json): Json => schema ? { description, content: jsonContent(schema) } : { description }

/** The ingest endpoints' shared answers: the summary on 200 and 422, and every admission refusal. */
const ingestResponses: Json = {
  200: ok('Every stored line is committed in ClickHouse (docs/api.md section 6.6)', ref('IngestSummary')),
  ...pick(400, 401, 403, 404, 413),
  408: errorResponse('request_timeout: the body arrived too slowly; the connection is closed'),
  417: errorResponse('expectation_failed'),
  422: { description: 'all_lines_failed: the Error fields plus the summary; idempotency_key_reused: the Idempotency-Key was used for another request (the Error fields only)', content: jsonContent({ anyOf: [{ allOf: [ref('Error'), ref('IngestSummary')] }, ref('Error')] }) },
  ...pick(429, 503),
}

/** The Idempotency-Key header every ingest route takes (docs/api.md section 6.7). */
const idempotencyKey: Json = { name: 'Idempotency-Key', in: 'header', required: false, schema: { type: 'string', minLength: 1, maxLength: 255 }, description: 'A retry with the same key within 10 minutes gets the first answer again (docs/api.md section 6.7)' }
/** A protocol input's answer to a used Idempotency-Key. */
const keyReused: Json = { 422: errorResponse('idempotency_key_reused: the Idempotency-Key was used for another request (another body or path)') }

const managementPaths: Json = {
  '/api/ingest/{streamId}': {
    post: {
      operationId: 'ingest', tags: ['ingest'], security: ingestToken,
      summary: 'Send NDJSON events (or a JSON array of objects) to a stream',
      parameters: [
        pathParam('streamId', 'The stream the ingest token writes to'),
        idempotencyKey,
        { name: 'Content-Encoding', in: 'header', required: false, schema: { enum: ['gzip', 'deflate', 'br', 'zstd', 'identity'] } },
      ],
      requestBody: {
        required: true,
        content: {
          'application/x-ndjson': { schema: { type: 'string' } },
          'application/jsonl': { schema: { type: 'string' } },
          'application/x-jsonlines': { schema: { type: 'string' } },
          'application/json': { schema: { type: 'string' } },
        },
      },
      responses: {
        ...ingestResponses,
        400: {
          description: 'empty_body, unsupported_content_type, unsupported_content_encoding, malformed_body or bad_request; wrapped_body (docs/api.md section 6.6): a wrapper of many records (an OTLP export, a Loki push, `{"logs":[...]}`, an Elasticsearch _bulk body) whose message names the endpoint to use, with the summary fields; nothing stored',
          content: jsonContent({ anyOf: [ref('Error'), { allOf: [ref('Error'), ref('IngestSummary')] }] }),
        },
      },
    },
  },
  '/api/streams': {
    post: {
      operationId: 'createStream', tags: ['streams'], security: pat, summary: 'Create a stream (PAT streams:create)',
      requestBody: jsonBody({ type: 'object', additionalProperties: false, required: ['name'], properties: { name: { type: 'string' }, description: { type: 'string' }, retention_days: { type: 'integer', minimum: 1, maximum: 3650 } } }),
      responses: { 201: ok('The stream', ref('Stream')), ...pick(400, 401, 403, 413), 409: errorResponse('conflict: the name exists'), ...pick(422) },
    },
    get: {
      operationId: 'listStreams', tags: ['streams'], security: pat, summary: 'List streams (PAT streams:read)',
      responses: { 200: ok('The org\'s streams', { type: 'object', properties: { streams: { type: 'array', items: ref('Stream') } } }), ...pick(401, 403) },
    },
  },
  '/api/streams/{stream}': {
    get: {
      operationId: 'getStream', tags: ['streams'], security: pat, summary: 'One stream with its stats (PAT streams:read)', parameters: [stream],
      responses: { 200: ok('The stream with `stats` (`events`, `bytes`, `last_event_at`)', ref('Stream')), ...pick(401, 403, 404) },
    },
    patch: {
      operationId: 'updateStream', tags: ['streams'], security: pat, summary: 'Change description or retention (PAT streams:update)', parameters: [stream],
      requestBody: jsonBody({ type: 'object', additionalProperties: false, properties: { description: { type: 'string' }, retention_days: { type: 'integer', minimum: 1, maximum: 3650 } } }),
      responses: { 200: ok('The stream', ref('Stream')), ...pick(400, 401, 403, 404, 413, 422) },
    },
    delete: {
      operationId: 'deleteStream', tags: ['streams'], security: pat, summary: 'Delete a stream, its events and ingest tokens (PAT streams:delete)', parameters: [stream],
      responses: { 204: ok('Deleted'), ...pick(401, 403, 404) },
    },
  },
  '/api/streams/{stream}/ingest-token': {
    post: {
      operationId: 'createIngestToken', tags: ['tokens'], security: pat, summary: 'Issue an ingest token (PAT streams:issue-token)', parameters: [stream],
      requestBody: { required: false, content: jsonContent({ type: 'object', additionalProperties: false, properties: { ttl: { type: 'integer', minimum: 60, maximum: 315360000 }, name: { type: 'string' } } }) },
      responses: { 201: ok('The token; the secret is shown once', ref('CreatedToken')), ...pick(400, 401, 403, 404, 413, 422) },
    },
  },
  '/api/streams/{stream}/ingest-tokens': {
    get: {
      operationId: 'listIngestTokens', tags: ['tokens'], security: pat, summary: 'List a stream\'s ingest tokens, no secrets (PAT streams:read)', parameters: [stream],
      responses: { 200: ok('The tokens', { type: 'object', properties: { tokens: { type: 'array', items: ref('TokenInfo') } } }), ...pick(401, 403, 404) },
    },
  },
  '/api/streams/{stream}/ingest-tokens/{id}': {
    delete: {
      operationId: 'revokeIngestToken', tags: ['tokens'], security: pat, summary: 'Revoke an ingest token, idempotent (PAT streams:revoke-token)',
      parameters: [stream, pathParam('id', 'Token id, `tok_...`')],
      responses: { 204: ok('Revoked'), ...pick(401, 403, 404) },
    },
  },
  '/api/tokens': {
    post: {
      operationId: 'createPat', tags: ['tokens'], security: pat, summary: 'Create a PAT (PAT tokens:manage)',
      requestBody: jsonBody({ type: 'object', additionalProperties: false, required: ['name', 'abilities'], properties: { name: { type: 'string' }, abilities: { type: 'array', items: ref('Ability') }, ttl: { type: 'integer', minimum: 60, maximum: 315360000 } } }),
      responses: { 201: ok('The PAT; the secret is shown once', ref('CreatedToken')), ...pick(400, 401, 403, 413, 422) },
    },
    get: {
      operationId: 'listPats', tags: ['tokens'], security: pat, summary: 'The caller\'s PATs, no secrets (PAT tokens:manage)',
      responses: { 200: ok('The tokens', { type: 'object', properties: { tokens: { type: 'array', items: ref('TokenInfo') } } }), ...pick(401, 403) },
    },
  },
  '/api/tokens/{id}': {
    delete: {
      operationId: 'revokePat', tags: ['tokens'], security: pat, summary: 'Revoke a PAT, idempotent (PAT tokens:manage)', parameters: [pathParam('id', 'Token id')],
      responses: { 204: ok('Revoked'), ...pick(401, 403, 404) },
    },
  },
  '/api/orgs': {
    post: {
      operationId: 'createOrg', tags: ['orgs'], security: pat, summary: 'Create an org with its owner and a `*` PAT (PAT orgs:admin)',
      requestBody: jsonBody({ type: 'object', additionalProperties: false, required: ['name'], properties: { name: { type: 'string' } } }),
      responses: { 201: ok('`{org, user, token}`: the owner\'s `*` PAT as created (its secret in `token.token`, shown once)', { type: 'object', required: ['org', 'user', 'token'], properties: { org: { type: 'object' }, user: { type: 'object' }, token: ref('CreatedToken') } }), ...pick(400, 401, 403, 413), 409: errorResponse('conflict'), ...pick(422) },
    },
  },
  '/api/streams/{stream}/events': {
    get: {
      operationId: 'listEvents', tags: ['read'], security: pat, summary: 'Events, newest first (PAT data:read; docs/api.md section 7.3)',
      parameters: [stream, ...timeRange, queryParam('limit', '1-1000, default 100', { type: 'integer', minimum: 1, maximum: 1000 }), queryParam('cursor', '`next_cursor` of the previous page')],
      responses: { 200: ok('A page', { type: 'object', properties: { events: { type: 'array', items: ref('Event') }, next_cursor: { type: ['string', 'null'] } } }), ...readErrors },
    },
  },
  '/api/streams/{stream}/stats': {
    get: {
      operationId: 'getStats', tags: ['read'], security: pat, summary: 'Series, totals, top lists and groups by any field (PAT data:read; docs/api.md section 7.4)',
      parameters: [stream, ...timeRange, queryParam('step', '`10s`, `1m`, `1h`, ...'), queryParam('top', 'Top-list length, 1-100, default 10', { type: 'integer', minimum: 1, maximum: 100 }),
        queryParam('by', 'A field (column or attribute, docs/api.md section 7.2) whose top values give `groups` and each point\'s `groups`'),
        queryParam('lists', '`all` (default) or `none`: without the top lists (their reads skipped; `top`\'s lists empty, `totals.unique_sources` null)', { type: 'string', enum: ['all', 'none'] }),
        queryParam('sample', 'With `by`: events counted exactly, default 500000 (absent: also up to twice the rows its slices would read, at most 5000000); over more the groups are counted over slices and scaled (`sampled`); 0: always exact', { type: 'integer', minimum: 0, maximum: 100000000 })],
      responses: { 200: ok('Stats', ref('Stats')), ...readErrors },
    },
  },
  '/api/streams/{stream}/fields': {
    get: {
      operationId: 'getFields', tags: ['read'], security: pat, summary: 'The fields of the matching events, with counts and top values (PAT data:read; docs/api.md section 7.6)',
      parameters: [stream, ...timeRange, queryParam('top', 'Top values per field, 1-50, default 5', { type: 'integer', minimum: 1, maximum: 50 }),
        queryParam('sample', 'Events counted exactly, 1000-200000, default 50000; past it the counts are sampled', { type: 'integer', minimum: 1000, maximum: 200000 })],
      responses: { 200: ok('Fields', ref('Fields')), ...readErrors },
    },
  },
  '/api/streams/{stream}/events/{id}/context': {
    get: {
      operationId: 'getContext', tags: ['read'], security: pat, summary: 'The events before and after one, sharing its host and service (PAT data:read; docs/api.md section 7.7)',
      parameters: [stream, pathParam('id', 'An event\'s `id`'),
        queryParam('before', 'Events before, 0-500, default 10', { type: 'integer', minimum: 0, maximum: 500 }),
        queryParam('after', 'Events after, 0-500, default 10', { type: 'integer', minimum: 0, maximum: 500 }),
        queryParam('same', 'Comma-separated fields the events share with the anchor; default `host,service`; empty: any'),
        queryParam('q', 'Does not apply to the context; given, it must parse (a bad one is `400 invalid_query`)')],
      responses: { 200: ok('Context', ref('Context')), ...readErrors },
    },
  },
  '/api/streams/{stream}/export': {
    get: {
      operationId: 'exportEvents', tags: ['read'], security: pat, summary: 'Every matching event as NDJSON, oldest first, as a download (PAT data:read; docs/api.md section 7.8)',
      parameters: [stream, ...timeRange],
      responses: { 200: { description: 'One Event per line', content: { 'application/x-ndjson': { schema: { type: 'string' } } } }, ...readErrors },
    },
  },
  '/api/streams/{stream}/tail': {
    get: {
      operationId: 'tail', tags: ['read'], security: pat, summary: 'Live events and stats as Server-Sent Events (PAT data:read; docs/api.md section 7.5)',
      parameters: [stream, queryParam('q', 'Filter (docs/api.md section 7.2)')],
      responses: { 200: { description: 'An event stream', content: { 'text/event-stream': { schema: { type: 'string' } } } }, ...pick(400, 401, 403, 404, 429), 431: readErrors[431] },
    },
  },
  '/api/audit': {
    get: {
      operationId: 'listAudit', tags: ['orgs'], security: pat, summary: 'The audit log, newest first (PAT orgs:admin; docs/api.md section 5.3)',
      parameters: [queryParam('limit', '1-1000, default 100', { type: 'integer', minimum: 1, maximum: 1000 }), queryParam('cursor', '`next_cursor` of the previous page')],
      responses: { 200: ok('A page', { type: 'object', properties: { entries: { type: 'array', items: { type: 'object' } }, next_cursor: { type: ['string', 'null'] } } }), ...pick(400, 401, 403) },
    },
  },
  '/api/openapi.json': {
    get: {
      operationId: 'openapi', tags: ['operation'], security: [], summary: 'This document (no token; cacheable, with an ETag)',
      responses: { 200: ok('The OpenAPI 3.1 document', { type: 'object' }), 304: ok('Not modified (If-None-Match)') },
    },
  },
  '/healthz': {
    get: { operationId: 'healthz', tags: ['operation'], security: [], summary: 'Liveness', responses: { 200: ok('The process runs', { type: 'object', properties: { status: { const: 'ok' } } }) } },
  },
  '/readyz': {
    get: {
      operationId: 'readyz', tags: ['operation'], security: [], summary: 'Readiness: ClickHouse answers within 800 ms and the schema is migrated',
      responses: { 200: ok('Ready', { type: 'object' }), 503: retryAfterResponse('not_ready') },
    },
  },
  '/metrics': {
    get: { operationId: 'metrics', tags: ['operation'], security: [], summary: 'Prometheus metrics (docs/api.md section 8.4)', responses: { 200: { description: 'Prometheus text', content: { 'text/plain': { schema: { type: 'string' } } } } } },
  },
  '/': {
    get: { operationId: 'dashboard', tags: ['dashboard'], security: [], summary: 'The dashboard page (it asks for a PAT itself)', responses: { 200: { description: 'HTML', content: { 'text/html': { schema: { type: 'string' } } } }, 304: ok('Not modified') } },
  },
  '/assets/{file}': {
    get: {
      operationId: 'dashboardAsset', tags: ['dashboard'], security: [], summary: 'A dashboard asset', parameters: [pathParam('file', 'File name')],
      responses: { 200: { description: 'The file' }, 304: ok('Not modified'), ...pick(404) },
    },
  },
}

// --- Protocol inputs (issue 15), built on the branches w3-otlp and w3-elastic. Their paths are
// listed in test/http/openapi.test.ts's `pendingRoutes` until those branches are merged. ---
const otlpLogs = (operationId: string): Json => ({
  post: {
    operationId, tags: ['inputs'], security: ingestToken,
    summary: 'OTLP/HTTP logs export, protobuf or JSON, to the ingest token\'s stream (docs/api.md section 9)',
    parameters: [idempotencyKey],
    requestBody: { required: true, content: { 'application/x-protobuf': { schema: { type: 'string', contentEncoding: 'binary' } }, 'application/json': { schema: { type: 'object' } } } },
    responses: {
      200: {
        description: 'ExportLogsServiceResponse in the request\'s encoding (protobuf or JSON); `partialSuccess` counts the rejected records',
        content: {
          'application/json': { schema: { type: 'object', properties: { partialSuccess: { type: 'object', properties: { rejectedLogRecords: { type: ['integer', 'string'] }, errorMessage: { type: 'string' } } } } } },
          'application/x-protobuf': { schema: { type: 'string', contentEncoding: 'binary' } },
        },
      },
      ...pick(400, 401, 403, 413), ...keyReused, ...pick(429, 503),
    },
  },
})
const lokiPush = (operationId: string): Json => ({
  post: {
    operationId, tags: ['inputs'], security: ingestToken,
    summary: 'Loki push (JSON, or protobuf with snappy) to the ingest token\'s stream; labels kept in attrs',
    parameters: [idempotencyKey],
    requestBody: { required: true, content: { 'application/json': { schema: { type: 'object', properties: { streams: { type: 'array', items: { type: 'object' } } } } }, 'application/x-protobuf': { schema: { type: 'string', contentEncoding: 'binary' } } } },
    responses: {
      204: ok('Every entry is committed'),
      ...pick(401, 403, 413), ...keyReused, ...pick(429, 503),
      400: { description: 'undecodable_body (nothing stored), or entries_rejected: the Error fields plus the summary (the other entries are stored)', content: jsonContent({ anyOf: [{ allOf: [ref('Error'), ref('IngestSummary')] }, ref('Error')] }) },
    },
  },
})
const bulkAnswer = { type: 'object', properties: { took: { type: 'integer' }, errors: { type: 'boolean' }, items: { type: 'array', items: { type: 'object' } } } }
const elasticBulk = (operationId: string, withIndex: boolean): Json => {
  const op = (method: string): Json => ({
    operationId: `${operationId}${method}`, tags: ['inputs'], security: ingestToken,
    summary: 'Elasticsearch _bulk: action/document pairs to the ingest token\'s stream, answered in Elasticsearch\'s shape',
    parameters: withIndex ? [pathParam('index', 'Index name (ignored: the token names the stream)'), idempotencyKey] : [idempotencyKey],
    requestBody: { required: true, content: { 'application/x-ndjson': { schema: { type: 'string' } }, 'application/json': { schema: { type: 'string' } } } },
    responses: { 200: ok('`took`, `errors`, `items` with a status per document (all `429` when Sluice could not take the request now: nothing stored)', bulkAnswer), ...pick(400, 401, 403, 413), ...keyReused, ...pick(429, 503) },
  })
  return { post: op('Post'), put: op('Put') }
}
/** An Elasticsearch compatibility answer: authenticated by an ingest token, changes nothing. */
const elasticProbe = (operationId: string, summary: string, params: string[] = []): Json => ({
  operationId, tags: ['inputs'], security: ingestToken, summary,
  parameters: params.map((p) => pathParam(p, 'Path segment (ignored)')),
  responses: { 200: ok('Elasticsearch 8\'s answer shape', { type: 'object' }), ...pick(401, 403, 404) },
})
/** A `_cat` API: text columns, or JSON rows with format=json. */
const elasticCat = (operationId: string, summary: string): Json => ({
  operationId, tags: ['inputs'], security: ingestToken, summary,
  parameters: [
    { name: 'format', in: 'query', required: false, schema: { type: 'string', enum: ['json'] }, description: '`json`: an array of objects with string values; else text columns' },
    { name: 'v', in: 'query', required: false, schema: { type: 'string' }, description: 'Present: a header line of column names' },
  ],
  responses: {
    200: { description: 'Elasticsearch 8\'s `_cat` answer', content: { 'text/plain': { schema: { type: 'string' } }, 'application/json': { schema: { type: 'array', items: { type: 'object' } } } } },
    ...pick(401, 403),
  },
})
const setupObject = (kind: string, id: string): Json => ({
  get: elasticProbe(`elasticGet${id}`, `${kind}: exists, empty (so a shipper's setup step skips it)`, ['name']),
  put: elasticProbe(`elasticPut${id}`, `${kind}: acknowledged, stored nowhere`, ['name']),
  post: elasticProbe(`elasticPost${id}`, `${kind}: acknowledged, stored nowhere`, ['name']),
})

const inputPaths: Json = {
  '/v1/logs': otlpLogs('otlpLogs'),
  '/api/otlp/v1/logs': otlpLogs('otlpLogsApi'),
  '/loki/api/v1/push': lokiPush('lokiPush'),
  '/api/loki/api/v1/push': lokiPush('lokiPushApi'),
  '/api/elastic/_bulk': elasticBulk('elasticBulk', false),
  '/api/elastic/{index}/_bulk': elasticBulk('elasticIndexBulk', true),
  '/api/elastic/': {
    get: elasticProbe('elasticInfo', 'Version handshake (Elasticsearch 8 info)'),
    head: elasticProbe('elasticInfoHead', 'Version handshake, headers only'),
  },
  '/api/elastic': { get: elasticProbe('elasticInfoNoSlash', 'Version handshake (Elasticsearch 8 info)') },
  '/api/elastic/_license': { get: elasticProbe('elasticLicense', 'License check') },
  '/api/elastic/_xpack': { get: elasticProbe('elasticXpack', 'Feature check') },
  '/api/elastic/_cluster/health': { get: elasticProbe('elasticHealth', 'Cluster health (green)') },
  '/api/elastic/_cluster/health/{index}': { get: elasticProbe('elasticIndexHealth', 'Cluster health (green)', ['index']) },
  '/api/elastic/_nodes': { get: elasticProbe('elasticNodes', 'One node, without an http section') },
  '/api/elastic/_nodes/{a}': { get: elasticProbe('elasticNodes1', 'One node', ['a']) },
  '/api/elastic/_nodes/{a}/{b}': { get: elasticProbe('elasticNodes2', 'One node', ['a', 'b']) },
  '/api/elastic/_nodes/{a}/{b}/{c}': { get: elasticProbe('elasticNodes3', 'One node', ['a', 'b', 'c']) },
  '/api/elastic/_cat/health': { get: elasticCat('elasticCatHealth', 'Cluster health as `_cat` columns (rsyslog resumes once it answers 2xx)') },
  '/api/elastic/_cat/nodes': { get: elasticCat('elasticCatNodes', 'The one node as `_cat` columns') },
  '/api/elastic/_index_template/{name}': setupObject('Index template', 'IndexTemplate'),
  '/api/elastic/_component_template/{name}': setupObject('Component template', 'ComponentTemplate'),
  '/api/elastic/_template/{name}': setupObject('Legacy template', 'Template'),
  '/api/elastic/_ilm/policy/{name}': setupObject('ILM policy', 'IlmPolicy'),
  '/api/elastic/_ingest/pipeline/{name}': setupObject('Ingest pipeline', 'Pipeline'),
  '/api/elastic/_data_stream/{name}': {
    get: elasticProbe('elasticGetDataStream', 'Data stream: exists', ['name']),
    put: elasticProbe('elasticPutDataStream', 'Data stream: acknowledged, stored nowhere', ['name']),
  },
  '/api/elastic/_alias/{name}': { get: elasticProbe('elasticGetAlias', 'Alias: exists (Logstash\'s rollover alias)', ['name']) },
  '/api/elastic/_refresh': {
    get: elasticProbe('elasticGetRefresh', 'Refresh: succeeded'),
    post: elasticProbe('elasticPostRefresh', 'Refresh: succeeded'),
  },
  '/api/elastic/{index}/_refresh': {
    get: elasticProbe('elasticGetIndexRefresh', 'Refresh: succeeded', ['index']),
    post: elasticProbe('elasticPostIndexRefresh', 'Refresh: succeeded', ['index']),
  },
  '/api/elastic/{index}': {
    get: elasticProbe('elasticGetIndex', 'Index: exists (a name starting with `_` is 404)', ['index']),
    put: elasticProbe('elasticPutIndex', 'Index: acknowledged, stored nowhere', ['index']),
  },
}
// --- end of the protocol inputs ---

/** Every code of lib/errors.ts's catalogue, written out (see the contract at the top). */
const errorCodeEnum = [
  'bad_request', 'unsupported_content_type', 'unsupported_content_encoding', 'malformed_body', 'empty_body',
  'invalid_query', 'unauthorized', 'invalid_token', 'wrong_token_kind', 'insufficient_ability', 'forbidden_stream',
  'not_found', 'method_not_allowed', 'conflict', 'payload_too_large', 'validation_failed', 'all_lines_failed', 'idempotency_key_reused',
  'rate_limited', 'too_many_concurrent_requests', 'server_busy', 'too_many_tails', 'internal_error',
  'storage_unavailable', 'storage_outcome_unknown', 'not_ready', 'shutting_down', 'request_timeout',
  'expectation_failed', 'headers_too_large',
  // Reads (issue 22): their limits (lib/query/read-limits.ts).
  'too_many_reads', 'query_too_expensive', 'query_timeout',
  // Protocol inputs (w3-otlp): listed in test/http/openapi.test.ts's `pendingErrorCodes` until merged.
  'undecodable_body', 'entries_rejected',
  // Wrapped bodies on the NDJSON route (issue 15).
  'wrapped_body',
]

const abilities = ['streams:create', 'streams:read', 'streams:update', 'streams:delete', 'streams:issue-token',
  'streams:revoke-token', 'data:read', 'tokens:manage', 'orgs:admin', '*']

export const openApiDocument = {
  openapi: '3.1.0',
  info: {
    title: 'Sluice',
    version: '1',
    summary: 'Log ingestion into ClickHouse: NDJSON, OTLP/HTTP logs, Loki push and Elasticsearch _bulk',
    description: 'The prose reference is docs/api.md. Errors are `{"error", "message", "request_id"}`; every 429 and 503 carries Retry-After; a 200 on an ingest route means the rows are committed.',
  },
  servers: [{ url: '/' }],
  tags: ['ingest', 'inputs', 'streams', 'tokens', 'orgs', 'read', 'operation', 'dashboard'].map((name) => ({ name })),
  paths: { ...managementPaths, ...inputPaths },
  components: {
    securitySchemes: {
      bearerAuth: { type: 'http', scheme: 'bearer', description: '`slp_` PAT or `sli_` ingest token, as the route says' },
      basicAuth: { type: 'http', scheme: 'basic', description: 'Any user name, the token as the password' },
    },
    headers: {
      'Retry-After': { description: 'Seconds to wait before retrying, at least 1', schema: { type: 'integer', minimum: 1 } },
    },
    schemas: {
      Error: {
        type: 'object', required: ['error', 'message', 'request_id'],
        properties: {
          error: { type: 'string', enum: errorCodeEnum, description: 'The code; the README\'s error table gives each one\'s status' },
          message: { type: 'string' },
          request_id: { type: 'string' },
          position: { type: 'integer', description: '`invalid_query` on `q`: where it goes wrong, an offset in UTF-16 code units' },
          parameter: { type: 'string', description: '`invalid_query`: the query parameter that is not valid' },
          id: { type: 'string', description: '`not_found` of an event id: the id' },
        },
      },
      IngestSummary: {
        type: 'object', required: ['ingested', 'failed', 'failures', 'failures_truncated', 'bytes'],
        properties: {
          ingested: { type: 'integer' }, failed: { type: 'integer' },
          failures: { type: 'array', maxItems: 100, items: { type: 'object', required: ['line', 'code', 'message'], properties: { line: { type: 'integer', minimum: 1 }, code: { type: 'string' }, message: { type: 'string' } } } },
          failures_truncated: { type: 'boolean' }, bytes: { type: 'integer' }, request_id: { type: 'string' },
        },
      },
      Stream: {
        type: 'object',
        properties: {
          id: { type: 'string' }, name: { type: 'string' }, description: { type: 'string' }, retention_days: { type: 'integer' },
          created_at: { type: 'string', format: 'date-time' },
          stats: { type: 'object', properties: { events: { type: 'integer' }, bytes: { type: 'integer' }, last_event_at: { type: ['string', 'null'], format: 'date-time' } } },
        },
      },
      Ability: { type: 'string', enum: abilities },
      CreatedToken: {
        type: 'object', required: ['id', 'token'],
        properties: {
          id: { type: 'string' }, token: { type: 'string', description: 'The secret, shown once' }, name: { type: ['string', 'null'] },
          stream: { type: 'string' }, abilities: { type: 'array', items: ref('Ability') },
          created_at: { type: 'string', format: 'date-time' }, expires_at: { type: ['string', 'null'], format: 'date-time' },
        },
      },
      TokenInfo: {
        type: 'object',
        properties: {
          id: { type: 'string' }, display: { type: 'string' }, name: { type: ['string', 'null'] }, status: { enum: ['active', 'expired', 'revoked'] },
          stream: { type: 'string', description: 'An ingest token\'s stream' }, abilities: { type: 'array', items: ref('Ability'), description: 'A PAT\'s abilities' },
          created_at: { type: 'string', format: 'date-time' }, expires_at: { type: ['string', 'null'], format: 'date-time' },
          last_used_at: { type: ['string', 'null'], format: 'date-time' }, revoked_at: { type: ['string', 'null'], format: 'date-time' },
        },
      },
      Event: eventSchema,
      Stats: statsSchema,
      Fields: fieldsSchema,
      Context: {
        type: 'object', required: ['before', 'event', 'after'],
        properties: { before: { type: 'array', items: ref('Event') }, event: ref('Event'), after: { type: 'array', items: ref('Event') } },
      },
    },
  },
} as const
