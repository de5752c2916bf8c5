// Stream names unique under concurrency, and deleted streams' data hidden at once
// (lib/storage/metadata-store.ts has the protocol).
//
// - stream_claims: one row per attempt to create a stream. Each claim is its own partition, so
//   its part is never merged with another's and keeps the block number the server gave its
//   INSERT: block numbers of a (non-replicated) MergeTree grow with every insert into the table,
//   in commit order, so the claim with the lowest one was committed first. `generation` is the
//   number of deletions of the name when the claim was made: claims only compete with those of
//   the same incarnation of the name.
// - stream_deletions: one row per deletion (deleted_at, ms by the deleting node's clock), written
//   again with purged_at once the deletion's mutations have run on `events` and every rollup.
//   Until then reads of a re-created stream hide rows received before deleted_at, and stats skip
//   the rollups.
import type { Migration } from '../migrate.ts'

export const migration: Migration = {
  id: 5,
  name: 'stream_lifecycle',
  statements: [
    `CREATE TABLE IF NOT EXISTS stream_claims (
      org_id String, name String, generation UInt32, claim_id String, claimed_at UInt64
    ) ENGINE = MergeTree PARTITION BY claim_id ORDER BY (org_id, name, generation)`,
    `CREATE TABLE IF NOT EXISTS stream_deletions (
      org_id String, name String, deleted_at UInt64, purged_at UInt64, version UInt64
    ) ENGINE = ReplacingMergeTree(version) ORDER BY (org_id, name, deleted_at)`,
  ],
}
