// The version-aware part of the `events` schema (docs/schema-versions.md): per column, the type
// and codec a server with those features stores it with, and the skip indexes that serve `q`.
// The portable schema (migrations 002, 006, 011) is what 18.16 and cluster mode keep; this is
// applied over it by schema-reconcile.ts. The query side (lib/query/filter-sql.ts) writes its
// pre-filters with the very expressions below, which is how ClickHouse matches them to an index.
//
// Measured on the find data set (bench/README.md, "Version-aware schema"): 30 M events,
// ClickHouse 26.7. Codecs: DoubleDelta for the time order (ts), Delta for counters that grow by
// small steps (received_at, seq), T64 for small integers, ZSTD for text (level 3 where the text is
// large and repetitive: message, attrs, attr values, ids). LowCardinality for the strings with at
// most some thousands of values per part (host, method, user agent, file name, level, service,
// attribute keys, path). Gorilla and FPC measured worse than plain ZSTD on rt (rounded random
// values). On the query data set (bench/README.md, "Version-aware schema", the bytes change):
// path as LowCardinality 3.06 -> 1.24 bytes per event (and a 4-5x faster text scan of it), rt
// ZSTD(3) 2.29 -> 1.88, src ZSTD(3) 3.20 -> 3.02; src as LowCardinality (~20,000 addresses) took
// 3.57, and message ZSTD(9) saves 0.6 more at several times the compression CPU, so neither is
// used. A path column of high cardinality (millions of ids a day) costs as LowCardinality about
// what it does as String on disk, but inserts and scans it more slowly (same section).
import { rawSql, sql } from './sql.ts'
import type { SqlFragment } from './sql.ts'

export interface ColumnSpec {
  /** Type with the lowCardinality feature (the portable type otherwise). */
  lowCardinalityType?: string
  /** Type the codec is declared on when there is no LowCardinality change: the portable type. */
  type: string
  /** CODEC(...) as system.columns reports it, with the codecs feature. */
  codec?: string
}

const zstd1 = 'CODEC(ZSTD(1))'
const zstd3 = 'CODEC(ZSTD(3))'

/** `events` columns by name; a column not listed keeps its portable definition. */
export const eventColumnSpecs: Readonly<Record<string, ColumnSpec>> = {
  ts: { type: 'UInt64', codec: 'CODEC(DoubleDelta, ZSTD(1))' },
  received_at: { type: 'UInt64', codec: 'CODEC(Delta(8), ZSTD(1))' },
  host: { type: 'Nullable(String)', lowCardinalityType: 'LowCardinality(Nullable(String))' },
  path: { type: 'Nullable(String)', lowCardinalityType: 'LowCardinality(Nullable(String))', codec: zstd1 },
  method: { type: 'Nullable(String)', lowCardinalityType: 'LowCardinality(Nullable(String))' },
  status: { type: 'Nullable(UInt16)', codec: 'CODEC(T64, ZSTD(1))' },
  rt: { type: 'Nullable(Float64)', codec: zstd3 },
  bytes: { type: 'Nullable(UInt64)', codec: 'CODEC(T64, ZSTD(1))' },
  src: { type: 'Nullable(String)', codec: zstd3 },
  user_agent: { type: 'Nullable(String)', lowCardinalityType: 'LowCardinality(Nullable(String))' },
  message: { type: 'Nullable(String)', codec: zstd3 },
  filename: { type: 'Nullable(String)', lowCardinalityType: 'LowCardinality(Nullable(String))' },
  level: { type: 'Nullable(String)', lowCardinalityType: 'LowCardinality(Nullable(String))' },
  service: { type: 'Nullable(String)', lowCardinalityType: 'LowCardinality(Nullable(String))' },
  trace_id: { type: 'Nullable(String)', codec: zstd3 },
  span_id: { type: 'Nullable(String)', codec: zstd3 },
  attrs: { type: 'String', codec: zstd3 },
  attr_keys: { type: 'Array(String)', lowCardinalityType: 'Array(LowCardinality(String))' },
  attr_values: { type: 'Array(String)', codec: zstd3 },
  seq: { type: 'UInt64', codec: 'CODEC(Delta(8), ZSTD(1))' },
  size: { type: 'UInt32', codec: 'CODEC(T64, ZSTD(1))' },
}

/** The text a `q` word or phrase is searched in (filter-sql.ts): message, path and user agent, folded, one per line. */
export const searchTextExpression = "arrayStringConcat([lowerUTF8(ifNull(message, '')), lowerUTF8(ifNull(path, '')), lowerUTF8(ifNull(user_agent, ''))], '\\n')"

/** Each attribute as one `key=value` string, so one bloom filter serves key and value together. */
export const attrPairsExpression = "arrayMap((k, v) -> concat(k, '=', v), attr_keys, attr_values)"

export interface IndexSpec {
  name: string
  expression: string
  type: string
  granularity: number
  /** Columns the expression reads: the index is added once they all exist. */
  requires: readonly string[]
}

/**
 * The skip indexes of `events` (skipIndexes feature). Granularity 1: one filter per 8,192-row
 * granule, so a rare value skips all but its own granules.
 * - search_text, tokenbf_v1 (32 KiB filter, 3 hashes): serves `LIKE '%phrase%'` by the phrase's
 *   whole words (a word with text on both sides in the phrase).
 * - attr_pairs, bloom_filter (1% false positives): serves has(pairs, 'key=value').
 */
export const eventIndexes: readonly IndexSpec[] = [
  { name: 'search_text', expression: searchTextExpression, type: 'tokenbf_v1(32768, 3, 0)', granularity: 1, requires: ['message', 'path', 'user_agent'] },
  { name: 'attr_pairs', expression: attrPairsExpression, type: 'bloom_filter(0.01)', granularity: 1, requires: ['attr_keys', 'attr_values'] },
]

/** A LIKE pattern matching `needle` anywhere: %, _ and \ escaped. */
function containsPattern (needle: string): string {
  return `%${needle.replace(/[\\%_]/g, (ch) => `\\${ch}`)}%`
}

/** Pre-filter of a folded text needle: true for every row whose message, path or user agent holds it. */
export function searchTextPrefilter (foldedNeedle: string): SqlFragment {
  return sql`like(${rawSql(searchTextExpression)}, ${containsPattern(foldedNeedle)})`
}

/** Pre-filter of `path = value` for an attribute: true for every row that has that pair. */
export function attrPairPrefilter (path: string, value: string): SqlFragment {
  return sql`has(${rawSql(attrPairsExpression)}, ${`${path}=${value}`})`
}
