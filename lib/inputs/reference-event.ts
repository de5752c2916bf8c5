// The one place the protocol inputs' events meet the worker's reference path (decode-body.ts's
// sink -> parse-worker.ts parseRecords -> TaskOutput#addValue -> normalizeEvent). Adapters build
// events in Sluice's JSON event shape (format 1), with `ts` in integer ms and `message` for the
// message, stored as sent: a message that holds JSON is not split into columns or attrs.
//
// - A protocol's timestamp is never a guess, so one outside the stream's accepted range fails
//   the record (ts_out_of_range) here, where format 2's leniency would keep it in attrs and store
//   the receive time instead.
import { EventRejection } from '../events/rejection.ts'
import type { TimeBounds } from '../events/normalize.ts'

type Event = Record<string, unknown>

function describeTime (ms: number): string {
  return Math.abs(ms) <= 8.64e15 ? new Date(ms).toISOString() : String(ms)
}

export function referenceEvent (event: Event, bounds: TimeBounds): Event | EventRejection {
  const ts = event.ts
  if (typeof ts === 'number' && (ts < bounds.minTs || ts > bounds.maxTs)) {
    return new EventRejection('ts_out_of_range', ts < bounds.minTs
      ? `ts ${describeTime(ts)} is older than the stream's retention (${describeTime(bounds.minTs)})`
      : `ts ${describeTime(ts)} is after the newest accepted time (${describeTime(bounds.maxTs)})`)
  }
  return event
}
