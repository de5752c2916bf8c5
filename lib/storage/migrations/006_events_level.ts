// events.level: the normalised log level of an event (trace, debug, info, warn, error, fatal;
// lib/events/level.ts), NULL when the line carries none. Nullable(String) rather than an Enum or
// LowCardinality: ClickHouse 18.16 has LowCardinality only behind an experimental setting, and a
// String keeps the insert format of every other text column (lib/events/fields.ts, rule `level`).
// Rows stored before this migration read as NULL. 18.16 has no ADD COLUMN IF NOT EXISTS: migrate.ts
// takes the error of an existing column as done (a run interrupted after the ALTER, or another node's run).
import type { Migration } from '../migrate.ts'

export const migration: Migration = {
  id: 6,
  name: 'events_level',
  statements: [
    'ALTER TABLE events ADD COLUMN level Nullable(String) AFTER filename',
  ],
}
