// A small Prometheus registry: counters and histograms with labels, gauges read at scrape time.
// Hand-written because the text format is simple and the hot path only needs `inc()` on a map.

type Labels = Record<string, string | number>

function labelKey (labels: Labels | undefined): string {
  if (!labels) return ''
  const keys = Object.keys(labels)
  if (keys.length === 0) return ''
  return '{' + keys.sort().map((k) => `${k}="${String(labels[k]).replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`).join(',') + '}'
}

interface Metric { render (): string }

export class Counter implements Metric {
  readonly name: string
  readonly help: string
  #values = new Map<string, number>()
  constructor (name: string, help: string) { this.name = name; this.help = help }

  inc (labels?: Labels, by = 1): void {
    const key = labelKey(labels)
    this.#values.set(key, (this.#values.get(key) ?? 0) + by)
  }

  get (labels?: Labels): number { return this.#values.get(labelKey(labels)) ?? 0 }

  render (): string {
    let out = `# HELP ${this.name} ${this.help}\n# TYPE ${this.name} counter\n`
    for (const [key, v] of this.#values) out += `${this.name}${key} ${v}\n`
    return out
  }
}

export class Gauge implements Metric {
  readonly name: string
  readonly help: string
  #read: () => number
  constructor (name: string, help: string, read: () => number) { this.name = name; this.help = help; this.#read = read }
  render (): string {
    return `# HELP ${this.name} ${this.help}\n# TYPE ${this.name} gauge\n${this.name} ${this.#read()}\n`
  }
}

export class Histogram implements Metric {
  readonly name: string
  readonly help: string
  readonly buckets: number[]
  #series = new Map<string, { counts: number[], sum: number, count: number, labels: Labels | undefined }>()
  constructor (name: string, help: string, buckets: number[]) { this.name = name; this.help = help; this.buckets = buckets }

  observe (value: number, labels?: Labels): void {
    const key = labelKey(labels)
    let s = this.#series.get(key)
    if (!s) {
      s = { counts: new Array(this.buckets.length).fill(0), sum: 0, count: 0, labels }
      this.#series.set(key, s)
    }
    for (let i = 0; i < this.buckets.length; i++) if (value <= this.buckets[i]) s.counts[i]++
    s.sum += value
    s.count++
  }

  render (): string {
    let out = `# HELP ${this.name} ${this.help}\n# TYPE ${this.name} histogram\n`
    for (const s of this.#series.values()) {
      for (let i = 0; i < this.buckets.length; i++) {
        out += `${this.name}_bucket${labelKey({ ...s.labels, le: this.buckets[i] })} ${s.counts[i]}\n`
      }
      out += `${this.name}_bucket${labelKey({ ...s.labels, le: '+Inf' })} ${s.count}\n`
      out += `${this.name}_sum${labelKey(s.labels)} ${s.sum}\n${this.name}_count${labelKey(s.labels)} ${s.count}\n`
    }
    return out
  }
}

export class Registry {
  #metrics: Metric[] = []
  counter (name: string, help: string): Counter { return this.#add(new Counter(name, help)) }
  gauge (name: string, help: string, read: () => number): Gauge { return this.#add(new Gauge(name, help, read)) }
  histogram (name: string, help: string, buckets: number[]): Histogram { return this.#add(new Histogram(name, help, buckets)) }
  #add<T extends Metric> (m: T): T { this.#metrics.push(m); return m }
  render (): string { return this.#metrics.map((m) => m.render()).join('') }
}

/** The metrics Sluice publishes; one set per app. */
export function createSluiceMetrics () {
  const registry = new Registry()
  return {
    registry,
    requests: registry.counter('sluice_http_requests_total', 'HTTP requests answered, by route, method and status'),
    requestSeconds: registry.histogram('sluice_http_request_duration_seconds', 'HTTP request duration', [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]),
    linesIngested: registry.counter('sluice_ingest_lines_total', 'Lines stored'),
    linesFailed: registry.counter('sluice_ingest_lines_failed_total', 'Lines that failed, by code'),
    bytesIngested: registry.counter('sluice_ingest_bytes_total', 'Decompressed bytes of answered ingest requests'),
    rejected: registry.counter('sluice_ingest_rejected_total', 'Ingest requests refused with 429, by reason'),
    batchRows: registry.histogram('sluice_insert_rows', 'Rows per ClickHouse insert', [100, 1000, 5000, 10000, 25000, 50000, 100000, 250000]),
    insertSeconds: registry.histogram('sluice_insert_duration_seconds', 'ClickHouse insert latency', [0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 1, 2.5, 5, 10]),
    insertFailures: registry.counter('sluice_insert_failures_total', 'ClickHouse insert attempts that failed'),
    insertsUnanswered: registry.counter('sluice_insert_unanswered_total', 'ClickHouse insert attempts that ended without an answer (timeout, reset): each may cost its writes storage_outcome_unknown'),
    writesUnanswered: registry.counter('sluice_insert_unanswered_writes_total', 'Ingest requests carried by insert attempts that ended without an answer'),
    storageRefusals: registry.counter('sluice_idempotency_lookup_failures_total', 'Idempotency keys (given, or a body\'s) that ClickHouse did not look up or record in time: those requests were answered 503 storage_unavailable, nothing stored'),
    retriesRecognised: registry.counter('sluice_ingest_retries_recognised_total', 'Requests without an Idempotency-Key recognised as a retry of a body already stored (ingest.dedupeRetries): answered, nothing stored'),
    // The process's memory, under the names Prometheus' Node client uses. The heap and external
    // figures are the main thread's; RSS counts every thread.
    residentBytes: registry.gauge('process_resident_memory_bytes', 'Resident set size of the process', () => process.memoryUsage.rss()),
    heapUsedBytes: registry.gauge('nodejs_heap_size_used_bytes', 'V8 heap in use, main thread', () => process.memoryUsage().heapUsed),
    heapTotalBytes: registry.gauge('nodejs_heap_size_total_bytes', 'V8 heap reserved, main thread', () => process.memoryUsage().heapTotal),
    externalBytes: registry.gauge('nodejs_external_memory_bytes', 'Memory of C++ objects bound to JS objects (Buffers included), main thread', () => process.memoryUsage().external),
  }
}

export type SluiceMetrics = ReturnType<typeof createSluiceMetrics>
