// The Node.js clients of docs/shippers/node.md, from npm, against a real Sluice (the shipper rig:
// ClickHouse behind a TCP proxy, one concurrent ingest request per org), each through a forced
// 429 (a held request) and a storage outage (ClickHouse unreachable: 503 storage_unavailable with
// Retry-After). Per record: what was stored, how many times, and in which columns. Clients that
// retry must store every record once; clients that do not must lose exactly the refused batches
// and tell the application so (what the doc says), never anything silently.
import t from 'tap'
import type { Test } from 'tap'
import { SeverityNumber } from '@opentelemetry/api-logs'
import { BatchLogRecordProcessor, LoggerProvider } from '@opentelemetry/sdk-logs'
import type { LogRecordExporter } from '@opentelemetry/sdk-logs'
import { resourceFromAttributes } from '@opentelemetry/resources'
import { OTLPLogExporter as HttpJsonExporter } from '@opentelemetry/exporter-logs-otlp-http'
import { OTLPLogExporter as ProtoExporter } from '@opentelemetry/exporter-logs-otlp-proto'
import { Client } from '@elastic/elasticsearch'
import winston from 'winston'
import LokiTransport from 'winston-loki'
import pino from 'pino'
import { docBlock, startShipperRig, storageFailures } from './shipper-harness.ts'
import { waitFor } from '../helpers/wait-for.ts'
import type { ShipperRig } from './shipper-harness.ts'
import { storedEvents } from '../helpers/ingest.ts'
import type { StoredEvent } from '../helpers/ingest.ts'

/** Stored events other than the rig's held one, and how many times each message was stored. */
async function stored (rig: ShipperRig): Promise<{ events: StoredEvent[], times: Map<string, number> }> {
  // Reads go through the storage proxy too: a pooled connection the outage cut fails once ("socket
  // hang up") after the storage is back, so a failed read is retried a few times.
  const all = await waitFor(() => storedEvents(rig.target), { what: 'a read of the stored events', retryErrors: true, intervalMs: 100 })
  const events = all.filter((e) => e.message !== 'held')
  const times = new Map<string, number>()
  for (const e of events) times.set(e.message ?? '', (times.get(e.message ?? '') ?? 0) + 1)
  return { events, times }
}

function records (first: number, count: number): string[] {
  return Array.from({ length: count }, (_, i) => `record ${first + i}`)
}

/** Every record of `expected` stored exactly once, and nothing else. */
async function checkStoredOnce (t: Test, rig: ShipperRig, expected: string[]): Promise<StoredEvent[]> {
  const { events, times } = await stored(rig)
  t.same(expected.filter((m) => !times.has(m)), [], 'every record stored')
  t.same([...times].filter(([, n]) => n > 1), [], 'none stored twice')
  t.same([...times.keys()].filter((m) => !expected.includes(m)), [], 'nothing else stored')
  return events
}

/** Rows committed and every request answered (no insert in flight whose answer an outage could cut). */
async function settled (rig: ShipperRig, what: string, count: number, timeoutMs = 30_000): Promise<void> {
  await waitFor(async () => (await stored(rig)).events.length >= count &&
    rig.server.app.http.inFlight === 0 && rig.server.app.writer.pendingRows === 0, { what, timeoutMs, intervalMs: 20 })
}

// The settings the tests below use are the ones docs/shippers/node.md gives (its js blocks, in order).
t.test('docs/shippers/node.md gives the tested settings', async (t) => {
  const [otel, es, pinoEs, pinoLoki, pinoOtel, winstonLoki, winstonHttp] = [0, 1, 2, 3, 4, 5, 6].map((i) => docBlock('node.md', 'js', i))
  t.match(otel, /timeoutMillis: 60_000/)
  t.match(otel, /exportTimeoutMillis: 60_000/)
  t.match(es, /maxRetries: 10/)
  t.match(es, /statusCode !== 429/)
  t.match(pinoEs, /esVersion: 8/)
  t.match(pinoLoki, /target: 'pino-loki'/)
  t.match(pinoLoki, /logFormat: '\{msg\}'/)
  t.match(pinoOtel, /target: 'pino-opentelemetry-transport'/)
  t.match(pinoOtel, /protocol: 'http\/protobuf'/)
  t.match(pinoOtel, /timeoutMillis: 60_000/)
  t.match(winstonLoki, /json: true/)
  t.match(winstonLoki, /format: winston\.format\.printf\(\(info\) => String\(info\.message\)\)/)
  t.match(winstonHttp, /batch: true, batchInterval: 1000, batchCount: 50/)
  t.match(winstonHttp, /defaultMeta: \{ hostname: /)
})

// -- OpenTelemetry JS: retries 429/502/503/504 after Retry-After, within timeoutMillis ----------

for (const [name, Exporter, route] of [['protobuf', ProtoExporter, '/v1/logs'], ['JSON', HttpJsonExporter, '/v1/logs']] as const) {
  t.test(`OpenTelemetry JS exporter (${name}) with BatchLogRecordProcessor: every record once through a 429 and a storage outage`, async (t) => {
    const rig = await startShipperRig(t, `otel-${name.toLowerCase()}`)
    const failed: number[] = []
    const base: LogRecordExporter = new Exporter({
      url: `${rig.front.url}/v1/logs`,
      headers: { authorization: `Bearer ${rig.target.token}` },
      timeoutMillis: 60_000, // docs/shippers/node.md: the bound on one export's retries
    })
    const exporter: LogRecordExporter = {
      export: (logs, done) => base.export(logs, (r) => { if (r.code !== 0) failed.push(logs.length); done(r) }),
      shutdown: () => base.shutdown(),
      forceFlush: () => base.forceFlush?.() ?? Promise.resolve(),
    }
    const provider = new LoggerProvider({
      resource: resourceFromAttributes({ 'service.name': 'shop', 'host.name': 'web-7' }),
      processors: [new BatchLogRecordProcessor({ exporter, scheduledDelayMillis: 200, exportTimeoutMillis: 60_000 })],
    })
    t.teardown(() => provider.shutdown())
    const logger = provider.getLogger('shop')
    const at = Date.now() - 1000
    const emit = (first: number, count: number): void => {
      for (const [i, body] of records(first, count).entries()) {
        logger.emit({ body, severityNumber: SeverityNumber.WARN, severityText: 'WARN', timestamp: at + first + i })
      }
    }

    const release = await rig.holdOneRequest()
    emit(0, 100)
    await waitFor(() => rig.concurrency429s() >= 1, { what: 'a 429 for the exporter', timeoutMs: 30_000, intervalMs: 20 })
    await release()
    await settled(rig, 'the first 100 records', 100)

    rig.storage.down()
    emit(100, 100)
    await waitFor(() => rig.ingest5xx(route) >= 1, { what: 'a 503 for the exporter', timeoutMs: 30_000, intervalMs: 20 })
    rig.storage.up()
    await provider.forceFlush()
    await settled(rig, 'all 200 records', 200)

    t.same(failed, [], 'no export failed')
    const events = await checkStoredOnce(t, rig, records(0, 200))
    t.ok(events.every((e) => e.host === 'web-7'), 'host from the resource\'s host.name')
    t.ok(events.every((e) => e.level === 'warn'), 'level from the severity')
    t.ok(events.every((e) => e.ts === at + Number(e.message!.split(' ')[1])), 'ts is the record\'s timestamp')
  })
}

// The exporter makes at most 5 retries, after Retry-After. Through a storage outage longer than 5
// of Sluice's seconds, with the writer's default budget: an export whose every record has a
// timestamp (a body Sluice would recognise when re-sent) is held while its lookup keeps trying,
// then refused with storage's Retry-After (5 s), not at once with 1 s (explore26 F1: the
// exporter's retries were spent in about 5 s of a 20 s stall, and 12,928 of 20,000 records lost).
t.test('OpenTelemetry JS exporter: every record once through a 12 s storage outage, with the writer\'s default budget', async (t) => {
  const rig = await startShipperRig(t, 'otel-outage', { retryTimeoutMs: 10_000, attemptTimeoutMs: 5_000 })
  const failed: number[] = []
  const base: LogRecordExporter = new ProtoExporter({
    url: `${rig.front.url}/v1/logs`,
    headers: { authorization: `Bearer ${rig.target.token}` },
    timeoutMillis: 60_000, // docs/shippers/node.md
  })
  const exporter: LogRecordExporter = {
    export: (logs, done) => base.export(logs, (r) => { if (r.code !== 0) failed.push(logs.length); done(r) }),
    shutdown: () => base.shutdown(),
    forceFlush: () => base.forceFlush?.() ?? Promise.resolve(),
  }
  const provider = new LoggerProvider({
    resource: resourceFromAttributes({ 'service.name': 'shop' }),
    processors: [new BatchLogRecordProcessor({ exporter, scheduledDelayMillis: 200, exportTimeoutMillis: 60_000 })],
  })
  t.teardown(() => provider.shutdown())
  const logger = provider.getLogger('shop')
  const at = Date.now() - 1000
  rig.storage.down()
  for (const [i, body] of records(0, 100).entries()) logger.emit({ body, severityNumber: SeverityNumber.INFO, timestamp: at + i })
  // The outage is the test's stimulus: 12 s, past the 5 retries at 1 s the exporter had before.
  await new Promise((resolve) => setTimeout(resolve, 12_000))
  const refusedDuringOutage = rig.ingest5xx('/v1/logs')
  rig.storage.up()
  await provider.forceFlush()
  await settled(rig, 'all 100 records', 100)
  t.same(failed, [], 'no export failed')
  t.ok(refusedDuringOutage <= 2, `the export was held through the outage: ${refusedDuringOutage} answers 503 in 12 s (each after about 10 s)`)
  await checkStoredOnce(t, rig, records(0, 100))
})

// -- winston-loki: a failed batch is put back and sent again with the next one -------------------

t.test('winston-loki: every record once through a 429 and a storage outage (failed batches requeued)', async (t) => {
  const rig = await startShipperRig(t, 'winston-loki')
  const errors: Error[] = []
  const transport = new LokiTransport({
    host: rig.front.url,
    basicAuth: `app:${rig.target.token}`,
    labels: { job: 'billing', host: 'app-2' },
    json: true,
    interval: 0.2,
    format: winston.format.printf((info) => String(info.message)), // the line is the message alone
    onConnectionError: (err: Error) => { errors.push(err) },
  })
  // After a failed push winston-loki waits a hard-coded 60 s before the next (its circuit breaker,
  // src/batcher.js:59 and :346); shortened here so the test takes seconds, not minutes.
  const batcher = (transport as unknown as { batcher: { circuitBreakerInterval: number } }).batcher
  t.equal(batcher.circuitBreakerInterval, 60_000, 'the documented 60 s')
  batcher.circuitBreakerInterval = 1000
  const logger = winston.createLogger({ level: 'info', transports: [transport] })
  t.teardown(() => { logger.close() })
  const log = (first: number, count: number): void => { for (const m of records(first, count)) logger.warn(m) }
  const before = Date.now()

  const release = await rig.holdOneRequest()
  log(0, 100)
  await waitFor(() => rig.concurrency429s() >= 1, { what: 'a 429 for winston-loki', timeoutMs: 30_000, intervalMs: 20 })
  await release()
  await settled(rig, 'the first 100 records', 100)

  rig.storage.down()
  log(100, 100)
  await waitFor(() => rig.ingest5xx('/loki/api/v1/push') >= 1, { what: 'a 503 for winston-loki', timeoutMs: 30_000, intervalMs: 20 })
  rig.storage.up()
  await settled(rig, 'all 200 records', 200)

  t.ok(errors.some((e) => (e as Error & { statusCode?: number }).statusCode === 429), 'the 429 was reported')
  t.ok(errors.some((e) => (e as Error & { statusCode?: number }).statusCode === 503), 'the 503 was reported')
  const events = await checkStoredOnce(t, rig, records(0, 200))
  t.ok(events.every((e) => e.host === 'app-2'), 'host from the host label')
  t.ok(events.every((e) => e.level === 'warn'), 'level from the level label')
  t.ok(events.every((e) => e.ts >= before - 1 && e.ts <= Date.now()), 'ts is the log call\'s time')
})

// -- @elastic/elasticsearch helpers.bulk: 503 retried by the transport (maxRetries); a whole-request 429 is not --

t.test('@elastic/elasticsearch helpers.bulk: per-item 429s (a busy org, a storage outage) are retried by the helper; every document once', async (t) => {
  const rig = await startShipperRig(t, 'es-bulk')
  const client = new Client({ node: `${rig.front.url}/api/elastic`, auth: { bearer: rig.target.token }, maxRetries: 10 })
  t.teardown(() => client.close())
  const at = Date.now() - 1000
  const docs = (first: number, count: number) => records(first, count).map((message, i) => ({
    '@timestamp': new Date(at + first + i).toISOString(), message, host: { name: 'web-7' }, log: { level: 'warn' },
  }))
  const dropped: unknown[] = []
  // wait: the helper's pause before resending 429 items (default 5 s); short here to keep the test short.
  const bulk = (datasource: object[]) => client.helpers.bulk({
    datasource, onDocument: () => ({ create: { _index: 'app' } }), onDrop: (d) => { dropped.push(d) }, wait: 500,
  })

  // 1. Over the org's concurrency: Sluice answers 200 with per-item 429s; the helper resends them.
  const release = await rig.holdOneRequest()
  const busy = bulk(docs(0, 100))
  await waitFor(() => rig.concurrency429s() >= 1, { what: 'a 429 for the client', timeoutMs: 30_000, intervalMs: 20 })
  await release()
  const first = await busy
  t.equal(first.successful, 100)
  t.ok(first.retry >= 100, `the refused documents were resent (${first.retry})`)

  // 2. Storage outage: per-item 429s storage_unavailable, resent the same way.
  const failuresBefore = storageFailures(rig.server.app.metrics)
  rig.storage.down()
  const during = bulk(docs(100, 100))
  await waitFor(() => storageFailures(rig.server.app.metrics) > failuresBefore && rig.server.app.http.inFlight === 0, { what: 'a failed insert, answered', timeoutMs: 30_000, intervalMs: 20 })
  rig.storage.up()
  const stats = await during
  t.equal(stats.successful, 100)
  t.equal(stats.failed, 0)
  t.same(dropped, [], 'no document dropped')
  await settled(rig, 'all 200 documents', 200)
  const events = await checkStoredOnce(t, rig, records(0, 200))
  t.ok(events.every((e) => e.host === 'web-7'), 'host from host.name')
  t.ok(events.every((e) => e.level === 'warn'), 'level from log.level')
  t.ok(events.every((e) => e.ts === at + Number(e.message!.split(' ')[1])), 'ts from @timestamp')
})

t.test('pino-elasticsearch: per-item 429s (a busy org, a storage outage) are resent by the bulk helper under the stream; every record once', async (t) => {
  const { default: pinoElastic } = await import('pino-elasticsearch') as unknown as { default: (o: object) => NodeJS.ReadWriteStream & { destroyed: boolean } }
  const rig = await startShipperRig(t, 'es-pino')
  const stream = pinoElastic({
    node: `${rig.front.url}/api/elastic`, index: 'app', esVersion: 8,
    auth: { bearer: rig.target.token }, flushBytes: 1048576, flushInterval: 200,
  })
  const errors: unknown[] = []
  const insertErrors: unknown[] = []
  stream.on('error', (err) => { errors.push(err) })
  stream.on('insertError', (err) => { insertErrors.push(err) })
  const log = pino({ level: 'info', base: { hostname: 'web-8' } }, stream)

  // 1. Over the org's concurrency: the helper resends the 429 items after its wait (5 s).
  const release = await rig.holdOneRequest()
  for (const m of records(0, 100)) log.warn(m)
  await waitFor(() => rig.concurrency429s() >= 1, { what: 'a 429 for pino-elasticsearch', timeoutMs: 30_000, intervalMs: 20 })
  await release()
  await settled(rig, 'the first 100 records', 100)

  // 2. Storage outage: the same.
  const failuresBefore = storageFailures(rig.server.app.metrics)
  rig.storage.down()
  for (const m of records(100, 100)) log.warn(m)
  await waitFor(() => storageFailures(rig.server.app.metrics) > failuresBefore, { what: 'a failed insert for pino-elasticsearch', timeoutMs: 30_000, intervalMs: 20 })
  rig.storage.up()
  await settled(rig, 'all 200 records', 200)
  stream.end()
  t.same(errors, [])
  t.same(insertErrors, [], 'nothing dropped')
  const events = await checkStoredOnce(t, rig, records(0, 200))
  t.ok(events.every((e) => e.host === 'web-8'), 'host from pino\'s hostname')
  t.ok(events.every((e) => e.level === 'warn'), 'level from pino\'s number')
  t.ok(events.every((e) => e.ts > Date.now() - 120_000 && e.ts <= Date.now()), 'ts from pino\'s time')
})

t.test('winston Http transport (batch): a refused batch is lost and reported once on the transport\'s warn event; the rest stored once', async (t) => {
  const rig = await startShipperRig(t, 'winston-http')
  const front = new URL(rig.front.url)
  const transport = new winston.transports.Http({
    host: front.hostname, port: Number(front.port), path: '/api/ingest/winston-http',
    headers: { authorization: `Bearer ${rig.target.token}` },
    batch: true, batchInterval: 1000, batchCount: 50,
  })
  const warnings: Error[] = []
  transport.on('warn', (err: Error) => { warnings.push(err) })
  const logger = winston.createLogger({
    format: winston.format.combine(winston.format.timestamp(), winston.format.json()),
    defaultMeta: { hostname: 'web-9' },
    transports: [transport],
  })
  t.teardown(() => { logger.close() })
  const log = (first: number) => { for (const m of records(first, 50)) logger.warn(m) } // batchCount: one request

  const release = await rig.holdOneRequest()
  log(0)
  await waitFor(() => warnings.length === 1, { what: 'the refused batch reported', timeoutMs: 30_000, intervalMs: 20 })
  await release()
  log(50)
  await settled(rig, 'the second batch', 50)

  rig.storage.down()
  log(100)
  await waitFor(() => warnings.length === 2, { what: 'the failed batch reported', timeoutMs: 30_000, intervalMs: 20 })
  rig.storage.up()
  log(150)
  await settled(rig, 'the fourth batch', 100)

  t.match(warnings.map((w) => w.message), [/429/, /503/], 'one warning per lost batch, with the status')
  const events = await checkStoredOnce(t, rig, [...records(50, 50), ...records(150, 50)])
  t.ok(events.every((e) => e.host === 'web-9'), 'host from hostname')
  t.ok(events.every((e) => e.level === 'warn'), 'level')
  t.ok(events.every((e) => e.ts > Date.now() - 120_000 && e.ts <= Date.now()), 'ts from winston\'s timestamp')
})

// -- pino with a transport (pino-loki in pino's worker thread): no retry ------------------------

t.test('pino.transport pino-loki: records of a refused push are lost and printed to stderr; the rest stored once', async (t) => {
  const rig = await startShipperRig(t, 'pino-loki')
  // pino-loki's report of a failed push: console.error in the transport's worker, which Node
  // forwards to this process's stderr. Watched, and passed through.
  const reports: string[] = []
  const write = process.stderr.write.bind(process.stderr)
  process.stderr.write = ((chunk: string | Uint8Array, ...rest: never[]) => {
    if (String(chunk).includes('Got error when trying to send log to loki')) reports.push(String(chunk))
    return write(chunk, ...rest)
  }) as typeof process.stderr.write
  t.teardown(() => { process.stderr.write = write })
  const transport = pino.transport({
    target: 'pino-loki',
    options: {
      host: rig.front.url,
      headers: { authorization: `Bearer ${rig.target.token}` },
      batching: { interval: 0.2 },
      labels: { app: 'shop' },
      logFormat: '{msg}', // the line (the message column) is pino's msg, not the whole JSON record
    },
  })
  const log = pino({ level: 'info', base: { hostname: 'web-3' } }, transport)
  t.teardown(() => { transport.end() })
  const send = (first: number) => { for (const m of records(first, 50)) log.warn(m) }

  const release = await rig.holdOneRequest()
  send(0)
  await waitFor(() => rig.concurrency429s() >= 1, { what: 'a 429 for pino-loki', timeoutMs: 30_000, intervalMs: 20 })
  await release()
  send(50)
  await settled(rig, 'the second 50 records', 50)

  rig.storage.down()
  send(100)
  await waitFor(() => rig.ingest5xx('/loki/api/v1/push') >= 1, { what: 'a 503 for pino-loki', timeoutMs: 30_000, intervalMs: 20 })
  rig.storage.up()
  send(150)
  await waitFor(async () => { const { times } = await stored(rig); return records(150, 50).every((m) => times.has(m)) }, { what: 'the last 50 records', timeoutMs: 30_000, intervalMs: 20 })
  await settled(rig, 'the last 50 records', 100)

  const { events, times } = await stored(rig)
  t.same([...records(50, 50), ...records(150, 50)].filter((m) => !times.has(m)), [], 'every record sent while Sluice accepted stored')
  t.same([...times].filter(([, n]) => n > 1), [], 'none stored twice')
  t.ok(records(0, 50).some((m) => !times.has(m)), 'records of the push refused with 429 are lost (pino-loki does not retry)')
  t.ok(records(100, 50).some((m) => !times.has(m)), 'records of the push failed with 503 are lost')
  await waitFor(() => reports.length >= 2, { what: 'both failures reported on stderr', timeoutMs: 30_000, intervalMs: 20 })
  t.ok(reports.some((r) => r.includes('too_many_concurrent_requests')), 'the 429 reported')
  t.ok(reports.some((r) => r.includes('storage_unavailable')), 'the 503 reported')
  t.ok(events.every((e) => e.host === 'web-3'), 'host from the hostname label')
  t.ok(events.every((e) => e.level === 'warn'), 'level from the level label')
  t.ok(events.every((e) => e.ts > Date.now() - 120_000 && e.ts <= Date.now()), 'ts from pino\'s time')
})

// -- pino with a transport that retries: pino-opentelemetry-transport (the OTel exporter in pino's worker) --

t.test('pino.transport pino-opentelemetry-transport: every record once through a 429 and a storage outage', async (t) => {
  const rig = await startShipperRig(t, 'pino-otel')
  const exporterOptions = {
    url: `${rig.front.url}/v1/logs`,
    headers: { authorization: `Bearer ${rig.target.token}` },
    timeoutMillis: 60_000, // docs/shippers/node.md: the bound on one export's retries
  }
  const transport = pino.transport({
    target: 'pino-opentelemetry-transport',
    options: {
      loggerName: 'shop',
      resourceAttributes: { 'service.name': 'shop', 'host.name': 'web-4' },
      logRecordProcessorOptions: {
        recordProcessorType: 'batch',
        exporterOptions: { protocol: 'http/protobuf', protobufExporterOptions: exporterOptions },
        processorConfig: { scheduledDelayMillis: 200, exportTimeoutMillis: 60_000 },
      },
    },
  })
  const log = pino({ level: 'info' }, transport)
  let ended = false
  // thread-stream gives its worker 10 s to end, then destroys it with an error: on a loaded box
  // the exporter's shutdown once took longer (CI, after every record was stored). The records are
  // checked in Sluice's storage, so a slow goodbye of the worker is noted, not a failure.
  const end = (): Promise<void> => new Promise((resolve) => {
    if (ended) return resolve()
    ended = true
    transport.once('close', () => resolve())
    transport.once('error', (err: Error) => { t.comment(`the transport's worker ended with: ${err.message}`); resolve() })
    transport.end()
  })
  t.teardown(end)
  const before = Date.now()
  const send = (first: number, count: number): void => { for (const m of records(first, count)) log.warn(m) }

  const release = await rig.holdOneRequest()
  send(0, 100)
  await waitFor(() => rig.concurrency429s() >= 1, { what: 'a 429 for the transport', timeoutMs: 30_000, intervalMs: 20 })
  await release()
  await settled(rig, 'the first 100 records', 100)

  rig.storage.down()
  send(100, 100)
  await waitFor(() => rig.ingest5xx('/v1/logs') >= 1, { what: 'a 503 for the transport', timeoutMs: 30_000, intervalMs: 20 })
  rig.storage.up()
  await settled(rig, 'all 200 records', 200)
  await end() // flushes what is left and stops the worker

  const events = await checkStoredOnce(t, rig, records(0, 200))
  t.ok(events.every((e) => e.host === 'web-4'), 'host from the resource\'s host.name')
  t.ok(events.every((e) => e.level === 'warn'), 'level from pino\'s number, as a severity')
  t.ok(events.every((e) => e.ts >= before - 1 && e.ts <= Date.now()), 'ts from pino\'s time')
})
