// One write() of the batch writer (lib/storage/batch-writer.ts) while it is unsettled, shared by
// the queue (batch-writer.ts), the retries (insert-retries.ts) and the outcome check
// (outcome-check.ts). settle() is the one way a write ends: resolved (stored) or rejected.

/**
 * Where a write's rows can be found again: every row has this org_id and stream and a seq in
 * [seqBase, seqBase + 2^25) (row-seq.ts randomSeqBase), and no other row has.
 */
export interface WriteIdentity {
  orgId: string
  stream: string
  seqBase: number
}

export interface WriteOptions {
  /** Aborted before the write's insert starts: the write is dropped and rejects with the reason. */
  signal?: AbortSignal
  /**
   * performance.now() when the rows' request arrived: the flush interval counts from here.
   * Default, and at the latest: when write() is called.
   */
  arrivedAt?: number
  /**
   * now() when the request's storage phase began (its idempotency lookup, the body read):
   * the write settles by heldSince + retryTimeoutMs + attemptTimeoutMs, so that the whole hold
   * stays within what clients wait. Default, and at the latest: when write() is called.
   */
  heldSince?: number
  /**
   * Lets the writer find out whether the rows were stored after an insert whose outcome is
   * unknown (the table must have org_id, stream and seq columns). Without it such a write
   * rejects with storage_outcome_unknown.
   */
  identity?: WriteIdentity
}

export interface PendingWrite {
  seq: number
  chunks: readonly Buffer[]
  rows: number
  bytes: number
  /** now() when write() was called: the retry deadline counts from here. */
  calledAt: number
  /** now() by which the write must be settled: calledAt + retryTimeoutMs + attemptTimeoutMs. */
  answerBy: number
  /** now() when its request arrived: the flush interval counts from here. */
  arrivedAt: number
  identity: WriteIdentity | undefined
  /** Written to an idle writer (see the contract, "When"): sent without waiting flushIntervalMs. */
  idle: boolean
  state: 'held' | 'waiting' | 'sending' | 'done'
  promise: Promise<void>
  resolve: () => void
  reject: (err: unknown) => void
  signal: AbortSignal | undefined
  onAbort: (() => void) | undefined
}

/** Ends a write once: resolved without `err`, rejected with it. */
export function settle (w: PendingWrite, err?: unknown): void {
  if (w.state === 'done') return
  w.state = 'done'
  if (w.onAbort !== undefined) w.signal?.removeEventListener('abort', w.onAbort)
  if (err === undefined) w.resolve()
  else w.reject(err)
}

export function earliestArrival (writes: readonly PendingWrite[]): number {
  let earliest = Infinity
  for (const w of writes) if (w.arrivedAt < earliest) earliest = w.arrivedAt
  return earliest
}

export function sumRows (writes: readonly PendingWrite[]): number {
  let rows = 0
  for (const w of writes) rows += w.rows
  return rows
}

/** Runs `fn` after `ms` (on the writer's clock) and returns its cancel. */
export type SetTimer = (fn: () => void, ms: number) => CancelTimer
/** Cancels a timer set with a SetTimer. */
export type CancelTimer = () => void

export function realTimer (fn: () => void, ms: number): CancelTimer {
  const timer = setTimeout(fn, Math.max(0, ms))
  return () => { clearTimeout(timer) }
}
