// The `levels` top list from rollups (docs/api.md section 7.4): events_by_level_1h, per (org_id,
// stream, hour, level) the number of events, filled by its materialized view on `events` like the
// other count-only dimension tables of migration 3 (003_rollups.ts states the rules they all keep:
// SummingMergeTree, daily partitions, a view that reads `events` directly and never throws).
//
// Contract:
// - Reads `events.level` (migration 6: Nullable(String), one of trace|debug|info|warn|error|fatal,
//   NULL when the event has none). Events without a level are not counted, as an absent host or
//   path is not; an empty string counts as none too, whatever wrote it.
// - Holds events inserted after this migration only: earlier ones are not back-filled (a re-run of
//   a half-applied back-fill would count them twice), so a range before it lists no levels from
//   the rollup. Ranges served by raw rows (up to an hour, or any request with q) have them all.
// - 18.16 and current ClickHouse: the statements are 003's, with only total functions.
import type { Migration } from '../migrate.ts'
import { countColumns, dimTable, hourKey, rollupStatements } from './003_rollups.ts'

/** The dimension: the `events` column of the same name, and the key field of the `levels` list. */
export const levelDim = 'level'

/** Which `events` rows have a level: the view's WHERE and the raw-row reader's. */
export const levelPresent = "isNotNull(level) AND assumeNotNull(level) != ''"

export const migration: Migration = {
  id: 7,
  name: 'level_rollup',
  statements: rollupStatements(dimTable(levelDim),
    [hourKey, { name: 'value', type: 'String', expression: 'assumeNotNull(level)' }], countColumns, levelPresent),
}
