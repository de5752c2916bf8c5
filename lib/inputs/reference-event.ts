// The one place the protocol inputs' events meet the worker's reference path (parse-worker.ts
// parseBody -> TaskOutput#addEvent -> normalizeEvent). Adapters build events in Sluice's JSON
// event shape with `message` for the message; until the event model's field table maps
// `message` to the message column, it is handed over as format 2's `log` (with `filename`), the
// name the reference path stores there today. When that table lands, this becomes the identity.
type Event = Record<string, unknown>

export function referenceEvent (event: Event): Event {
  if (typeof event.message !== 'string') return event
  const out = Object.create(null) as Event
  out.log = event.message
  for (const key in event) if (key !== 'message') out[key] = event[key]
  return out
}
