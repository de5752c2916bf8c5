// The protocol between the tail hub (main thread) and the live collectors that run inside the
// parse workers: what the hub asks of each worker task while a stream is tailed, and what a task
// sends back. Ingest carries both across (ParseTask.live, ParseResult.live) without reading them,
// so this contract lives with the live views and ingest imports it, never the other way.
import type { LiveStatsPartial } from './live-stats.ts'

/** What the tail hub asks of a task while a stream has tail clients. */
export interface LiveRequest {
  /** The distinct `q` filters of the stream's tail clients ('' matches every event); at most 31. */
  filters: string[]
  /**
   * Per filter: matching events this task serializes at most (what is left of the filter's
   * events-per-second allowance); the rest are counted as dropped. Bounds the workers' tail work
   * on a busy stream while a quiet one gets every event.
   */
  caps: number[]
}

/** What a task sends back for the live views. */
export interface LiveOutput {
  /**
   * SSE frames (`event: event`, the event's JSON in the events API's shape) of the events matching
   * at least one filter, in line order, as UTF-8 (lib/live/tail-frames.ts).
   */
  frames: Uint8Array
  /** Per event: where its frame ends in `frames` (the next one starts there). */
  ends: number[]
  /** Per event: bit i set when it matched filters[i]. */
  masks: number[]
  /** Per filter: matching events left out by `caps`. */
  dropped: number[]
  /** Aggregates over every stored event of the task. */
  stats: LiveStatsPartial
}
