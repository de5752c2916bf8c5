// Event rows as plain objects for assertions: the reference path (lib/events/normalize.ts) into a
// row, read back by field name (lib/events/event-row.ts toObject: strings decoded, absent fields
// null, attrs as JSON text).
import { EventRow } from '../../lib/events/event-row.ts'
import type { EventObject } from '../../lib/events/event-row.ts'
import { normalizeEvent } from '../../lib/events/normalize.ts'
import type { TimeBounds } from '../../lib/events/normalize.ts'
import type { EventRejection } from '../../lib/events/rejection.ts'
import { eventColumns } from '../../lib/events/fields.ts'

export type { EventObject }

const row = new EventRow()

/** The row the reference path makes of `value`, as an object, or its rejection. */
export function normalizeToObject (value: unknown, bounds: TimeBounds): EventObject | EventRejection {
  const rejection = normalizeEvent(value, bounds, row)
  return rejection ?? row.toObject()
}

/** A new row filled from `values` by field name (unchecked), for tests that build rows by hand. */
export function eventRow (values: Readonly<Record<string, string | number | null | undefined>>): EventRow {
  return new EventRow().fill(values)
}

/** One TabSeparated row of the events table in eventColumns order, from values by column name (absent: \N, an empty array for attr_keys and attr_values). */
export function tsvRow (values: Readonly<Record<string, string | number | null | undefined>>): string {
  return eventColumns.map((name) => {
    const value = values[name]
    if (value === null || value === undefined) return name === 'attr_keys' || name === 'attr_values' ? '[]' : '\\N'
    return String(value)
  }).join('\t')
}
