// What the ClickHouse server Sluice runs on offers beyond the portable schema, read once at start
// from `SELECT version()` (docs/schema-versions.md has the table, the reasons and the upgrade path).
//
// Contract:
// - serverFeatures(version) answers the features whose minimum version the server has. The
//   minimums are the first LTS release where ClickHouse ships the feature as generally available
//   (not behind an experimental setting), so a gate never depends on a server setting.
// - Sluice is tested on 18.16 (none of these) and 26.7 (all of them). Versions between follow
//   the table; a version string that does not parse counts as 18.16: the portable schema is
//   always correct, only slower and larger.
// - Cluster mode stays on the portable schema whatever the version (noFeatures): its DDL goes
//   through lib/storage/cluster-ddl.ts, which is built and tested for 18.16 servers.

/** Each feature and the first version (major, minor) that has it; docs/schema-versions.md. */
export const featureMinimums = {
  /** Column codecs Delta, DoubleDelta, T64, ZSTD (since 19.x; GA and stable by 22.8 LTS). */
  codecs: [22, 8],
  /** LowCardinality(String) columns (production-ready in 19.3; 22.8 LTS as the gate). */
  lowCardinality: [22, 8],
  /** Skip indexes tokenbf_v1 and bloom_filter, used by LIKE / has() (22.8 LTS). */
  skipIndexes: [22, 8],
  /** Table TTL with `WHERE` rules (TTL since 19.6, WHERE since 20.x; 22.8 LTS as the gate). */
  ttl: [22, 8],
  /**
   * Lightweight `DELETE FROM` (generally available since 23.3 LTS) that returns once its mutation
   * is queued (the query setting lightweight_deletes_sync, 24.4; 24.8 LTS as the gate). Before,
   * it ran to its end inside the statement, holding a connection (a stream of 300k events: 3.7 s
   * on the embedded engine; on a full disk until space came back: explore34b G3); ALTER ... DELETE
   * is queued the same way on every version, so servers before the gate use it.
   */
  lightweightDelete: [24, 8],
  /** The query setting os_thread_priority (since 19.x; 22.8 LTS as the gate): reads at a lower OS priority. */
  threadPriority: [22, 8],
} as const satisfies Record<string, readonly [number, number]>

export type ServerFeature = keyof typeof featureMinimums

export interface ServerFeatures {
  /** The server's version() text, e.g. "26.7.2.1"; '' when not asked (cluster mode). */
  readonly version: string
  has (feature: ServerFeature): boolean
}

/** [major, minor] of a version() text; [0, 0] when it does not parse. */
export function parseVersion (version: string): [number, number] {
  const m = /^(\d+)\.(\d+)/.exec(version.trim())
  return m === null ? [0, 0] : [Number(m[1]), Number(m[2])]
}

function atLeast (have: readonly [number, number], want: readonly [number, number]): boolean {
  return have[0] > want[0] || (have[0] === want[0] && have[1] >= want[1])
}

export function serverFeatures (version: string): ServerFeatures {
  const have = parseVersion(version)
  const present = new Set((Object.keys(featureMinimums) as ServerFeature[]).filter((f) => atLeast(have, featureMinimums[f])))
  return { version, has: (feature) => present.has(feature) }
}

/** The portable schema's features: none (18.16, cluster mode, tests of the portable path). */
export const noFeatures: ServerFeatures = { version: '', has: () => false }
