// An attribute of an event as SQL (docs/api.md section 7.2, "Attributes"): the one place that
// knows how attributes are stored, used by the `q` compiler, `stats?by=`, `/fields` and export.
//
// Since migration 11 each row holds its attrs flattened into the parallel arrays attr_keys and
// attr_values (lib/events/attr-flatten.ts): an attribute `user.id` is
//   if(indexOf(attr_keys, 'user.id') > 0, attr_values[indexOf(attr_keys, 'user.id')], NULL)
// ClickHouse computes the identical indexOf once per block, so a term costs one scan of the keys
// of each row, with no JSON parsed at query time (bench/README.md, "Attribute layout").
//
// Rows from before migration 11 have empty arrays; their attributes are read from the attrs text
// with visitParamExtractRaw (ClickHouse 18.16 has no other JSON functions): the key spelt with its
// dots first, then the path through nested objects, a JSON string's text unescaped. Those functions
// find a key's first occurrence at any depth of the text, so for old rows a key that also occurs
// nested elsewhere may read the other value: the rule is documented as best effort for old rows,
// with what it leaves out (docs/api.md section 7.2).
// The legacy branch is only compiled into a read whose range can hold such rows (AttrScope), so a
// database created since pays nothing for it.
import { joinSql, rawSql, sql } from '../storage/sql.ts'
import type { SqlFragment } from '../storage/sql.ts'
import { eventFields, hexIdColumns } from '../events/fields.ts'

/**
 * Where a read's attribute expressions must cover rows from before migration 11: `before` is the
 * received_at (ms) at or before which a row may have no attr arrays; 0 when no such row exists.
 */
export interface AttrScope {
  readonly before: number
}

/** A read over rows that all carry attr arrays. */
export const noLegacyRows: AttrScope = { before: 0 }

/** Latest ts (ms) an event may carry past its receive time (docs/api.md section 6.4). */
const maxFutureMs = 2 * 86_400_000

/** The scope of a read of [from, ...): legacy rows only matter when the range can hold them. */
export function attrScopeFor (legacyBefore: number, from: number): AttrScope {
  return legacyBefore > 0 && from <= legacyBefore + maxFutureMs ? { before: legacyBefore } : noLegacyRows
}

function indexSql (path: string): SqlFragment {
  return sql`indexOf(attr_keys, ${path})`
}

/** The raw JSON text of attribute `path` in the attrs text ('' when absent): legacy rows only. */
function legacyRawSql (path: string): SqlFragment {
  const spelt = sql`visitParamExtractRaw(attrs, ${path})`
  const segments = path.split('.')
  if (segments.length === 1 || segments.some((s) => s === '')) return spelt
  let nested: SqlFragment = rawSql('attrs')
  for (const segment of segments) nested = sql`visitParamExtractRaw(${nested}, ${segment})`
  return sql`if(${spelt} != '', ${spelt}, ${nested})`
}

/** The text of `raw`, a JSON string's source (quotes and escapes), unescaped. */
function jsonStringTextSql (raw: SqlFragment): SqlFragment {
  return sql`visitParamExtractString(concat('{"v":', ${raw}, '}'), 'v')`
}

/** A legacy row's value text as the arrays would hold it: NULL when absent or an object. */
function legacyValueSql (path: string): SqlFragment {
  const raw = legacyRawSql(path)
  return sql`multiIf(${raw} = '' OR startsWith(${raw}, '{'), NULL, startsWith(${raw}, '"'), ${jsonStringTextSql(raw)}, ${raw})`
}

/** A legacy row's attribute `path` when it is a JSON string, unescaped; NULL otherwise. */
function legacyStringSql (path: string): SqlFragment {
  const raw = legacyRawSql(path)
  return sql`if(startsWith(${raw}, '"'), ${jsonStringTextSql(raw)}, NULL)`
}

// The columns migration 11 added from keys that were attributes before it (service, trace_id,
// span_id): a row from before it has them only in its attrs text, under the field's key or one of
// its aliases (lib/events/fields.ts), read in that order and as strings only, as ingest reads them.
const promotedColumns: ReadonlyMap<string, readonly string[]> = new Map(
  eventFields.filter((f) => f.name === 'service' || f.name === 'trace_id' || f.name === 'span_id')
    .map((f) => [f.column, [f.key, ...f.aliases]]))

/** The keys a row from before migration 11 holds service, trace_id and span_id under (they are read as those columns). */
export const promotedKeys: ReadonlySet<string> = new Set([...promotedColumns.values()].flat())

/** The condition that a row is from before migration 11 and has attributes (in `scope`, whose before is not 0). */
export function legacyRowSql (scope: AttrScope): SqlFragment {
  // The ts bound first: ts is the sort key, so ClickHouse reads only the granules that can hold one.
  return sql`ts <= ${scope.before + maxFutureMs} AND received_at <= ${scope.before} AND empty(attr_keys) AND attrs NOT IN ('', '{}')`
}

/**
 * A column of the field table as a read sees it: the column itself, or for service, trace_id and
 * span_id over a range that can hold rows from before migration 11, the value those rows hold in
 * their attrs text (docs/api.md section 7.2, "Attributes of events from before the upgrade").
 */
export function columnSql (column: string, scope: AttrScope = noLegacyRows): SqlFragment {
  const keys = promotedColumns.get(column)
  if (keys === undefined || scope.before === 0) return rawSql(column)
  let legacy = keys.length === 1 ? legacyStringSql(keys[0]) : sql`coalesce(${joinSql(keys.map(legacyStringSql), ', ')})`
  // A trace or span id in hex, in lowercase as ingest now stores it (fields.ts `hexId`): one trace
  // sent before and after the upgrade is one group, and q's lowercased id finds both (explore20).
  if (hexIdColumns.has(column)) legacy = sql`if(match(${legacy}, '^[0-9A-Fa-f]+$'), lower(${legacy}), ${legacy})`
  return sql`if(received_at <= ${scope.before} AND empty(attr_keys), ${legacy}, ${rawSql(column)})`
}

/** Attribute `path`'s value as Nullable(String): NULL when the event has none. */
export function attrValueSql (path: string, scope: AttrScope = noLegacyRows): SqlFragment {
  const index = indexSql(path)
  const current = sql`if(${index} > 0, attr_values[${index}], NULL)`
  if (scope.before === 0) return current
  return sql`if(received_at <= ${scope.before} AND empty(attr_keys), ${legacyValueSql(path)}, ${current})`
}

/** Whether the event has attribute `path`, as UInt8. */
export function attrPresentSql (path: string, scope: AttrScope = noLegacyRows): SqlFragment {
  return presentSql(path, sql`${indexSql(path)} > 0`, scope)
}

/**
 * Whether the event has attribute `path` or any below it (`error:*` for `{"error":{"kind":..}}`,
 * whose stored keys are its leaves' dotted paths), as UInt8: `q`'s `name:*` (docs/api.md 7.2).
 */
export function attrPresentUnderSql (path: string, scope: AttrScope = noLegacyRows): SqlFragment {
  const present = sql`(${indexSql(path)} > 0 OR arrayExists(q_key -> startsWith(q_key, ${path + '.'}), attr_keys))`
  if (scope.before === 0) return present
  // Rows from before migration 11: the key with any value, an object included, or a key spelt
  // with the path and a dot (`"order.total"` for `order:*`; explore20 F4).
  const legacy = sql`(${legacyRawSql(path)} != '' OR position(attrs, ${'"' + path + '.'}) > 0)`
  return sql`if(received_at <= ${scope.before} AND empty(attr_keys), ${legacy}, ${present})`
}

/** `present` over the arrays; rows from before migration 11 (in `scope`) when their attrs text holds a value (not an object) under the path. */
function presentSql (path: string, present: SqlFragment, scope: AttrScope): SqlFragment {
  if (scope.before === 0) return present
  return sql`if(received_at <= ${scope.before} AND empty(attr_keys), isNotNull(${legacyValueSql(path)}), ${present})`
}

/** Several attributes' values, for a SELECT list. */
export function attrValuesSql (paths: readonly string[], scope: AttrScope = noLegacyRows): SqlFragment {
  return joinSql(paths.map((p) => attrValueSql(p, scope)), ', ')
}

/**
 * True for every row whose attributes hold `value` under some key: a pre-filter of an equality
 * on any attribute (filter-sql.ts valuesPrefilterSql), reading one array of the two. Rows from
 * before migration 11 have none, so it is only for reads whose scope has no such rows.
 */
export function attrHasValueSql (value: string): SqlFragment {
  return sql`has(attr_values, ${value})`
}
