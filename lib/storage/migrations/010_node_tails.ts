// Live tail across nodes (lib/live/cluster-live.ts): each node's heartbeat also carries the URL
// its peers reach it at and the (org, stream, filter) tails its clients have open, so a node that
// commits events for such a stream forwards their frames there. '' / '[]' on a node without any.
// 18.16 has no ADD COLUMN IF NOT EXISTS: migrate.ts takes the error of an existing column as done.
import type { Migration } from '../migrate.ts'

export const migration: Migration = {
  id: 10,
  name: 'node_tails',
  statements: [
    "ALTER TABLE sluice_nodes ADD COLUMN address String DEFAULT ''",
    "ALTER TABLE sluice_nodes ADD COLUMN tails String DEFAULT '[]'",
  ],
}
