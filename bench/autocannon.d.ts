// Types for the part of autocannon 9's programmatic API the benchmarks use (the package ships
// none). See node_modules/autocannon/README.md, "API".
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events'

  /** Per-connection state handed to setupRequest and onResponse; reset when the list wraps. */
  export type RequestContext = Record<string, unknown>

  export interface RequestSpec {
    method?: string
    path?: string
    headers?: Record<string, string>
    body?: string | Buffer
    /** Called before each send of this entry; returns the request to send (may mutate it). */
    setupRequest?: (request: RequestSpec, context: RequestContext) => RequestSpec
    /** Called with each response to this entry; `body` is the whole response body as text. */
    onResponse?: (status: number, body: string, context: RequestContext, headers: Record<string, string | string[]>) => void
  }

  export interface Options {
    url: string
    connections?: number
    /** Seconds. */
    duration?: number
    amount?: number
    /** Requests per second over all connections, in per-connection whole-second buckets. */
    overallRate?: number
    connectionRate?: number
    /** Seconds before a request counts as timed out and its connection is reset. */
    timeout?: number
    pipelining?: number
    method?: string
    headers?: Record<string, string>
    body?: string | Buffer
    requests?: RequestSpec[]
    initialContext?: RequestContext
    ignoreCoordinatedOmission?: boolean
    excludeErrorStats?: boolean
    /** Milliseconds between samples. */
    sampleInt?: number
  }

  export interface Histogram {
    average: number
    mean: number
    stddev: number
    min: number
    max: number
    total: number
    p50: number
    p90: number
    p99: number
    sent?: number
  }

  export interface Result {
    duration: number
    errors: number
    timeouts: number
    non2xx: number
    resets: number
    '2xx': number
    '4xx': number
    '5xx': number
    statusCodeStats: Record<string, { count: number }>
    latency: Histogram
    requests: Histogram
    throughput: Histogram
  }

  export interface Instance extends EventEmitter, PromiseLike<Result> {
    /** Ends the run at the next sample tick (sampleInt); the promise then resolves. */
    stop (): void
  }

  export default function autocannon (options: Options): Instance
}
