// Keyed requests whose outcome is not known yet (lib/storage/idempotency-store.ts, docs/api.md
// section 6.7): before a keyed request's rows go to the writer, a `pending` row records where
// they will be (org_id, stream, the seq range from seq_base, `rows` of them) and the answer a
// stored outcome gets. A retry that finds the key pending settles it by counting those rows:
// all there, the answer is replayed; none, it runs. `state` is 'final' (an answer to replay,
// every row written before this migration), 'pending', or 'void' (the attempt stored nothing).
// The latest row of a key by recorded_at (ms) is its state.
// One ALTER of all the columns (see migration 11: one ON CLUSTER DDL in cluster mode).
import type { Migration } from '../migrate.ts'

export const migration: Migration = {
  id: 12,
  name: 'idempotency_pending',
  statements: [
    `ALTER TABLE idempotency_keys ADD COLUMN state String DEFAULT 'final', ADD COLUMN org_id String DEFAULT '',
      ADD COLUMN stream String DEFAULT '', ADD COLUMN seq_base UInt64 DEFAULT 0, ADD COLUMN rows UInt64 DEFAULT 0,
      ADD COLUMN node String DEFAULT '', ADD COLUMN recorded_at UInt64 DEFAULT 0`,
  ],
}
