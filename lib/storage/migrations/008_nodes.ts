// The node registry (lib/storage/node-registry.ts): one row per heartbeat of a Sluice node in
// cluster mode, the newest per node kept. Nodes count the live ones to take their share of the
// per-org limits. Unused on a single node. Times are UInt64 ms; heartbeat_at 0: the node stopped.
import type { Migration } from '../migrate.ts'

export const migration: Migration = {
  id: 8,
  name: 'nodes',
  statements: [
    `CREATE TABLE IF NOT EXISTS sluice_nodes (
      node_id String, heartbeat_at UInt64, version UInt64
    ) ENGINE = ReplacingMergeTree(version) ORDER BY node_id`,
  ],
}
