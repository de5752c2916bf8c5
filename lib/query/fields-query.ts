// The fields present in a stream's matching events: GET /api/streams/{stream}/fields (docs/api.md
// section 7.6). Each field with its kind (column or attribute), type, the number of events that
// have it, and its top values with counts, for a field sidebar and for suggestions as one types.
//
// Contract and why:
// - Columns come from the field table (lib/events/fields.ts), attributes from attr_keys (rows from
//   before migration 11: their attrs text, flattened in Sluice, legacyAttributes); an
//   attribute's type is `number` when every value seen is a number as `q`'s comparisons read one
//   (filter-number.ts: so `name:>10` can hold for each), `boolean` for true/false, else `string`.
//   An attribute a column's name shadows is listed as `attrs.<path>`, the name `q` reads it by. Columns are listed first in the table's order, then attributes by
//   count descending (at most maxAttributes); fields no event has are left out.
// - Sampling: reading every attribute of 30 M events takes seconds, and a sidebar needs shapes,
//   not exact counts. The matching events are counted first (one pass over the filter's columns),
//   with the granules they fall in. When they are more than sampleRows (or the request's
//   `sample`), or their granules hold more than maxPassRows rows (a filter matching a few events
//   in every granule of a long range), the counts are taken over slices of the range holding at
//   most that many, placed where the events are (a histogram of their ts: sampleSlicesOf), each
//   slice's rows weighted by the events it stands for (sliceWeightSql: a burst is a stratum of its
//   own), and `sampled` is true. Slices, not every n-th row: ts is the sort key, so ClickHouse
//   then reads only those slices' granules. The filter is in PREWHERE: the other columns are read
//   only in granules where it holds.
// - Top values: the `top` most frequent per field (values as text, numbers as they are written),
//   count descending, ties by value. Exact when not sampled; sampled, the sums of the sample's
//   weights, leaving out values seen once there: attributes and numeric columns grouped, text
//   columns by their topK candidates (columnCandidates).
import { ClickHouseError, clickhouseCodes } from '../storage/clickhouse.ts'
import type { ClickHouse } from '../storage/clickhouse.ts'
import { joinSql, rawSql, sql, uint64List } from '../storage/sql.ts'
import type { SqlFragment } from '../storage/sql.ts'
import { eventFields, isStringField } from '../events/fields.ts'
import { columnSql, legacyRowSql, promotedKeys } from './attr-sql.ts'
import { flattenAttrsText } from '../events/attr-flatten.ts'
import { readNumber } from './filter-number.ts'
import type { AttrScope } from './attr-sql.ts'
import { isNumberSql, numberTextRe2 } from './filter-sql.ts'
import { attributeFieldName, byCountThenValue } from './field-ref.ts'

const minuteMs = 60_000
/** An unfiltered count over this much or more (ms) reads the minute rollup (countMatching). */
const rollupCountMinRangeMs = 3_600_000
/**
 * Events counted exactly when `sample` is not given; more are sampled. 50,000 answers a day of
 * 30 M events in about 250 ms (bench/README.md, "Find anything", d2) where 200,000 took 1.8 s.
 */
export const sampleRows = 50_000
/** The most a caller may ask for (`sample`). */
export const maxSampleRows = 200_000
/**
 * The least a caller may ask for (`sample`): the dashboard's sidebar asks for 50,000, which reads
 * a quarter of the rows (bench/README.md, "Explore: first render").
 */
export const minSampleRows = 1000
/** A histogram bin this many times as dense as its range (or more) may be a burst (sampleSlicesOf). */
const burstDensity = 4
/** Slices a sampled range is read in, at most. */
const sampleSlices = 48
/**
 * Slices a sampled range is read in, at least: a smaller `sample` makes them narrower, not
 * fewer. One slice of `sample=1000` stood for the whole day: a field of some hours was off by
 * -61%, and a burst of 9% of the events was no stratum of its own (explore30). Twelve read at
 * least twelve granules, about 100,000 rows.
 */
const minSampleSlices = 12
/**
 * Events a slice holds at least: ClickHouse reads whole granules (8,192 rows), so a slice much
 * smaller reads mostly rows it does not count. 48 slices of 1,000 events (sample=50,000) read
 * about 800,000 rows; 12 of 4,000 about 150,000.
 */
const minSliceRows = 4096
/** Rows of a granule (MergeTree's index_granularity): a read of one matching row reads its granule. */
export const granuleRows = 8192
/**
 * Rows a read's passes may read at most before it samples (docs/api.md section 7.6): each pass
 * reads every column of the granules holding a match, about 0.5 s per million rows on 18.16 here.
 */
const maxPassRows = 2_000_000
/**
 * At most this many matching events are read by their ts (the sort key) in each pass: a rare
 * attribute's /fields over 30 M events took 56 s on 18.16 with the filter evaluated over the range
 * by each of its ~20 statements. The list is in every statement, beside `q`: read-limits.ts raises
 * the parser's limits for reads to hold them.
 */
const maxKeyTimes = 500
/** Attributes listed at most (the most frequent). */
export const maxAttributes = 200
/**
 * A sampled text column's candidate top values: ClickHouse's topK of the sample, Space-Saving
 * with 3 counters per value asked for, lists every value more frequent than 1/600 of the sample
 * (a user id of 0.3% of events among ids seen once or twice: explore15 F1); they are counted
 * exactly. An exact GROUP BY of every column's text over 150,000 sampled rows took 350-500 ms of
 * the request, this 250-300 (bench/README.md, "Find anything"). Numeric columns are grouped
 * exactly.
 */
const columnCandidates = 200
export const defaultFieldsTop = 5
export const maxFieldsTop = 50

export interface FieldsParams {
  orgId: string
  stream: string
  from: number
  to: number
  where?: SqlFragment
  /** A pre-filter of `where` for PREWHERE (filter-sql.ts valuesPrefilterSql); `where` then goes to WHERE. */
  prewhere?: SqlFragment
  scope: AttrScope
  hiddenBefore: number
  top: number
  /** false while a deleted stream of the same name may still have rows in the rollups: raw rows only. */
  rollupsPurged?: boolean
  /** Events counted exactly, more are sampled; default sampleRows. */
  sampleRows?: number
  /** The reads' query.maxGroupKeys (max_rows_to_group_by): a pass of columnValues groups at most this many values. */
  maxGroupKeys: number
}

export interface FieldInfo {
  name: string
  kind: 'column' | 'attribute'
  type: string
  count: number
  top: Array<{ value: string | number, count: number }>
}

/**
 * A key with its counts: `n` of events (weighted when sampled), `seen` in the rows read, and of
 * those how many values were numbers, had an exponent, were booleans (the type).
 */
interface KeyRow { key: string, key_hash: string, n: number, seen: number, numbers: number, exponents: number, booleans: number }

export interface FieldsResult {
  fields: FieldInfo[]
  sampled: boolean
  /** Matching events over the range (exact). */
  total: number
}

/** The columns a field list shows: every field of the table but ts (every event has one). */
const listedColumns = eventFields.flatMap((f, i) => f.name === 'ts' ? [] : [{ name: f.name, column: f.column, numeric: !isStringField[i] }])

/**
 * The listed columns in two halves (text columns by turns, the numeric ones with the half of
 * fewer), read by two chains side by side when sampled: a sampled read's columns take two
 * statements one after the other (topK, then the count), the longest chain of the request.
 */
const columnHalves: ReadonlyArray<readonly number[]> = (() => {
  const text = listedColumns.flatMap((c, i) => c.numeric ? [] : [i])
  const halves: number[][] = [text.filter((_, k) => k % 2 === 0), text.filter((_, k) => k % 2 === 1)]
  halves[1].push(...listedColumns.flatMap((c, i) => c.numeric ? [i] : []))
  return halves.map((h) => h.sort((a, b) => a - b))
})()
const allColumns: readonly number[] = listedColumns.map((_, i) => i)

/**
 * Each attribute pair with how many times its path occurred in the event up to it. A path an
 * event holds twice (`{"user.id":5,"user":{"id":6}}`) counts once, by its first value, as every
 * read takes it (attr-sql.ts: indexOf): firstOfPath keeps only that pair. (arrayEnumerateUniq
 * numbers the pairs once per event; `indexOf(attr_keys, key)` after the join copied attr_keys for
 * every pair and took /fields over 24 h from ~290 to ~450 ms.)
 */
const pairsJoin = rawSql('ARRAY JOIN attr_keys AS key, attr_values AS value, arrayEnumerateUniq(attr_keys) AS occurrence')
// An attribute with an empty key ({"": 1}) is left out: no q, by= or same= can name it.
const firstOfPath = rawSql("occurrence = 1 AND key != ''")

function typeOfColumn (name: string): string {
  const field = eventFields.find((f) => f.name === name)
  return field === undefined || field.rule === 'string' || field.rule === 'level' ? 'string' : 'number'
}

export async function queryFields (clickhouse: ClickHouse, params: FieldsParams): Promise<FieldsResult> {
  const hidden = params.hiddenBefore > 0 ? sql` AND received_at > ${params.hiddenBefore}` : sql``
  const base = sql`org_id = ${params.orgId} AND stream = ${params.stream}${hidden}`
  const filtered = params.where !== undefined && params.where.text.trim() !== '1'
  // The filter in PREWHERE (or its pre-filter, the filter then in WHERE, as events-query.ts does):
  // the other columns are read only in granules where it holds.
  const rowsIn = (range: SqlFragment): SqlFragment => !filtered
    ? sql`WHERE ${base} AND ${range}`
    : params.prewhere === undefined
      ? sql`PREWHERE ${params.where!} WHERE ${base} AND ${range}`
      : sql`PREWHERE ${params.prewhere} WHERE ${base} AND ${range} AND (${params.where!})`
  const inRange = sql`ts >= ${params.from} AND ts < ${params.to}`
  const sample = params.sampleRows ?? sampleRows
  const span = params.to - params.from
  let total: number
  let times: number[] | null = null
  // Where the matching events lie in time (a sampled read places its slices by it).
  let histogram: Bin[] | null = null
  // Rows a pass over the matching events reads: every row of a granule that holds one.
  let passRows: number
  if (!filtered) {
    total = await countInRange(clickhouse, params, base, inRange)
    passRows = total
  } else {
    // The range's events (the minute rollup: cheap), to know the width of a granule in time,
    // then the matching events and the granules they fall in, in one pass over the filter's columns.
    const rangeRows = await countInRange(clickhouse, params, base, inRange)
    const granuleMs = Math.max(1, Math.floor(span * granuleRows / Math.max(rangeRows, 1)))
    const binMs = histogramBinMs(span, 1)
    const [counts] = await clickhouse.query<{ n: number, granules: number, times: number[], hist: [number[], number[]] }>(sql`SELECT count() AS n,
        uniq(intDiv(ts, ${granuleMs})) AS granules, groupArray(${maxKeyTimes})(ts) AS times,
        sumMap([intDiv(ts - ${params.from}, ${binMs})], [toUInt64(1)]) AS hist
      FROM events ${rowsIn(inRange)}`)
    total = Number(counts.n)
    histogram = binsOf(counts.hist, params.from, binMs)
    passRows = Math.min(rangeRows, Number(counts.granules) * granuleRows)
    // Few matches: the passes look only at their milliseconds (the sort key finds their
    // granules), not at the whole range, where the filter would be evaluated again in each.
    if (total <= maxKeyTimes) times = [...new Set(counts.times.map(Number))]
  }
  if (total === 0) return { fields: [], sampled: false, total: 0 }
  let rows = times === null ? rowsIn(inRange) : rowsIn(sql`ts IN (${joinSql(times.map((ts) => sql`${ts}`), ', ')})`)
  let scale = 1
  // Events the passes below read (all matching ones, or the sample's).
  let rowsRead = total
  // Sampled: each row's weight, the events its slice stands for over those it holds (sliceWeightSql).
  let weight: SqlFragment | null = null
  // Sampled past `sample` matching events, or when the granules holding them hold more than
  // maxPassRows (a filter matching a few events in every granule of a long range: each pass would
  // read every column of the whole range, 10-20 s over 30 M events on 18.16). Never when they are
  // read by their ts: at most maxKeyTimes granules, and a sample of a few hundred says little.
  const fraction = times !== null ? 1 : Math.min(1, sample / total, maxPassRows / passRows)
  if (fraction < 1) {
    const sliceCount = Math.max(minSampleSlices, Math.min(sampleSlices, Math.floor(sample / minSliceRows)))
    let bins = histogram ?? await rangeHistogram(clickhouse, params, base, inRange)
    // Then a bin that alone holds more than the sample's half, down to the millisecond: a
    // request's events without a ts of their own share one (its arrival), and a burst of 30,000
    // in one millisecond of a refined one-second bin was missed by a slice of that second's
    // middle, its weight given to its neighbours (explore34d J1). Each pass reads only those
    // bins' ts; most reads need none or one.
    for (let pass = 0; pass < maxRefinePasses; pass++) {
      const refined = await refineDenseBins(clickhouse, bins, params, rowsIn, total * fraction / 2, pass > 0)
      if (refined === bins) break
      bins = refined
    }
    const inSlices = (slices: Slice[]): SqlFragment => rowsIn(sql`(${joinSql(slices.map((x) => sql`(ts >= ${x.lo} AND ts < ${x.hi})`), ' OR ')})`)
    let slices = sampleSlicesOf(bins, params.from, params.to, sliceCount, fraction)
    let reads = await sliceReads(clickhouse, inSlices(slices), slices)
    // Far fewer than planned: the events are bunched within the histogram's bins (a burst of
    // seconds in a minute of the rollup), away from the slices' middles. Wider slices, once.
    if (sum(reads) < total * fraction / 4) {
      slices = sampleSlicesOf(bins, params.from, params.to, sliceCount, fraction, 16)
      reads = await sliceReads(clickhouse, inSlices(slices), slices)
    }
    const read = sum(reads)
    if (read === 0) return { fields: [], sampled: true, total }
    rows = inSlices(slices)
    scale = total / read
    rowsRead = read
    weight = sliceWeightSql(slices, reads, total)
  }
  const top = params.top
  // Sampled, a value seen once in the sample is left out of the top values: its count would be the scale
  // itself (every value of a field of unique values, a trace id or a sequence number, listed at
  // 50 events each: explore14 F2), which says nothing about how frequent it is.
  const seenOnce = scale !== 1
  // Columns and attributes are independent: two chains of queries, side by side (as /stats runs
  // its parts), each query on one thread (the read's max_threads).
  const columnsChain = async (indexes: readonly number[]): Promise<ColumnValues[]> => {
    // Sampled, a text column's values are counted apart only for its candidates: the sample's
    // topK (columnCandidates), in one pass before. Exact, every value is.
    let candidates: string[][] | null = null
    if (scale !== 1) {
      const text = indexes.filter((i) => !listedColumns[i].numeric)
      const row = (await clickhouse.query<Record<string, string[]>>(sql`SELECT ${joinSql(text.map((i) =>
        sql`arrayMap(h -> toString(h), topK(${columnCandidates})(cityHash64(${columnSql(listedColumns[i].column, params.scope)}))) AS top_${rawSql(String(i))}`), ', ')}
        FROM events ${rows}`))[0]
      candidates = listedColumns.map((c, i) => c.numeric || !text.includes(i) ? [] : row[`top_${i}`])
    }
    // A pass groups every column's values at once; the columns are split so that one pass groups
    // at most maxGroupKeys values (a column has at most one value per matching event).
    const perPass = Math.max(1, Math.floor(params.maxGroupKeys / Math.max(1, rowsRead)))
    return await columnValues(clickhouse, rows, top, params.scope, indexes, candidates, seenOnce, weight, perPass)
  }
  // Sampled, the columns in two chains (columnHalves); their results fill disjoint columns.
  const columnsRead = async (): Promise<ColumnValues[]> => {
    if (scale === 1) return await columnsChain(allColumns)
    const [a, b] = await Promise.all(columnHalves.map(columnsChain))
    return a.map((values, i) => columnHalves[0].includes(i) ? values : b[i])
  }
  const attributesChain = async (): Promise<[KeyRow[], Map<string, Array<{ value: string, count: number }>>, boolean]> => {
    // Rows from before migration 11 (their attrs text) are read beside the arrays' keys.
    const legacyRead = params.scope.before === 0 ? Promise.resolve(null) : legacyAttributes(clickhouse, rows, params.scope)
    legacyRead.catch(() => {}) // awaited below; handled should the keys' statement fail first
    const keyRows = await attributeKeys(clickhouse, rows, top, seenOnce, weight)
    // Numbers written with an exponent may be out of q's scale (`1e400`): checked exactly, by
    // filter-sql.ts's numberSql, for the few keys whose values all look numeric and hold one.
    const withExponents = keyRows.filter((r) => r.numbers === r.seen && r.exponents > 0)
    if (withExponents.length > 0) {
      const outOfScale = await clickhouse.query<{ key: string }>(sql`
        SELECT key FROM events ${pairsJoin}
        ${rows} AND ${firstOfPath} AND cityHash64(key) IN (${uint64List(withExponents.map((r) => r.key_hash))}) AND match(value, '[eE]')
        GROUP BY key HAVING countIf(NOT ${isNumberSql(rawSql('value'))}) > 0`)
      const notNumbers = new Set(outOfScale.map((r) => r.key))
      for (const r of withExponents) if (notNumbers.has(r.key)) r.numbers = 0
    }
    const topByKey = new Map(keyRows.map((r) => [r.key, r.top]))
    const legacy = await legacyRead
    // The older rows' counts, scaled from those read to the sample's rows, then to the range's.
    if (legacy !== null) return [...mergeLegacyAttributes(keyRows, topByKey, { ...legacy, scale: legacy.scale * scale }, top), legacy.sampled]
    return [keyRows, topByKey, false]
  }
  let passes: [ColumnValues[], [KeyRow[], Map<string, Array<{ value: string, count: number }>>, boolean]]
  try {
    passes = await Promise.all([columnsRead(), attributesChain()])
  } catch (err) {
    // More distinct attribute values than query.maxGroupKeys even for the listed keys (events of
    // many unique-valued attributes: 45,000 events of 30 unique ids answered 422, explore30):
    // sampled again over a quarter of the events, down to minSampleRows, before a 422.
    const smaller = Math.max(minSampleRows, Math.floor(rowsRead / 4))
    if (!(err instanceof ClickHouseError && err.chCode === clickhouseCodes.TOO_MANY_ROWS) || times !== null || smaller >= Math.min(sample, rowsRead)) throw err
    return await queryFields(clickhouse, { ...params, sampleRows: smaller })
  }
  const [columns, [keyRows, topByKey, legacySampled]] = passes
  // Sampled, the counts are sums of the rows' weights: whole numbers of events once rounded.
  const rounded = (list: Array<{ value: string, count: number }>): Array<{ value: string, count: number }> =>
    list.map((v) => ({ value: v.value, count: Math.round(v.count) }))
  const fields: FieldInfo[] = []
  listedColumns.forEach((c, i) => {
    const { count, top: values } = columns[i]
    if (count === 0) return
    fields.push({
      name: c.name, kind: 'column', type: typeOfColumn(c.name), count: Math.round(count),
      top: rounded(values).map((v) => ({ value: c.numeric ? Number(v.value) : v.value, count: v.count }))
    })
  })
  for (const r of keyRows) {
    const type = r.numbers === r.seen ? 'number' : r.booleans === r.seen ? 'boolean' : 'string'
    fields.push({ name: attributeFieldName(r.key), kind: 'attribute', type, count: Math.round(r.n), top: rounded(topByKey.get(r.key) ?? []) })
  }
  return { fields, sampled: scale !== 1 || legacySampled, total }
}

/** An attribute key's count, types and top values (attributeKeys). */
type KeyWithTop = KeyRow & { top: Array<{ value: string, count: number }> }

/**
 * The most frequent attribute keys of `rows` (at most maxAttributes) with their counts, types
 * and `top` values, counted apart only when seen twice if `seenOnce`; sampled, counted by the
 * rows' `weight`. One pass: every pair grouped by key and value, then summed per key; counts and
 * top values took a pass each, and each pass evaluates q again (explore28b M3). When the pairs'
 * distinct values are more than query.maxGroupKeys (events of more keys than are listed, their
 * values unique), two passes: the keys counted first, then only the listed keys' values grouped.
 */
async function attributeKeys (clickhouse: ClickHouse, rows: SqlFragment, top: number, seenOnce: boolean, weight: SqlFragment | null): Promise<KeyWithTop[]> {
  const counted = (r: KeyRow): KeyRow => ({ ...r, n: Math.round(Number(r.n)), seen: Number(r.seen), numbers: Number(r.numbers), exponents: Number(r.exponents), booleans: Number(r.booleans) })
  const events = weightedCount(weight)
  try {
    const keyRows = await clickhouse.query<KeyRow & { top_values: string[], top_counts: number[] }>(sql`
      SELECT key, toString(cityHash64(key)) AS key_hash, sum(w) AS n, sum(c) AS seen, sumIf(c, match(value, ${numberTextRe2})) AS numbers,
        sumIf(c, match(value, '[eE]')) AS exponents, sumIf(c, value IN ('true', 'false')) AS booleans,
        ${topOf(sql`groupArrayIf((value, w), c >= ${seenOnce ? 2 : 1})`, top)}
      FROM (SELECT key, value, count() AS c, ${events} AS w FROM events ${pairsJoin}
        ${rows} AND ${firstOfPath}
        GROUP BY key, value)
      GROUP BY key ORDER BY round(n) DESC, key LIMIT ${maxAttributes}`)
    return keyRows.map((r) => ({ ...counted(r), top: topList(r.top_values, r.top_counts) }))
  } catch (err) {
    if (!(err instanceof ClickHouseError && err.chCode === clickhouseCodes.TOO_MANY_ROWS)) throw err
  }
  const keyRows = (await clickhouse.query<KeyRow>(sql`
    SELECT key, toString(cityHash64(key)) AS key_hash, ${events} AS n, count() AS seen, countIf(match(value, ${numberTextRe2})) AS numbers,
      countIf(match(value, '[eE]')) AS exponents, countIf(value IN ('true', 'false')) AS booleans
    FROM events ${pairsJoin}
    ${rows} AND ${firstOfPath}
    GROUP BY key ORDER BY round(n) DESC, key LIMIT ${maxAttributes}`)).map(counted)
  const values = keyRows.length === 0 ? [] : await clickhouse.query<{ key: string, value: string, n: number }>(sql`
    SELECT key, value, ${events} AS n
    FROM events ${pairsJoin}
    ${rows} AND ${firstOfPath} AND cityHash64(key) IN (${uint64List(keyRows.map((r) => r.key_hash))})
    GROUP BY key, value HAVING count() >= ${seenOnce ? 2 : 1} ORDER BY key, round(n) DESC, value LIMIT ${top} BY key`)
  const topByKey = new Map<string, Array<{ value: string, count: number }>>()
  for (const r of values) topByKey.set(r.key, [...topByKey.get(r.key) ?? [], { value: r.value, count: Math.round(Number(r.n)) }])
  return keyRows.map((r) => ({ ...r, top: (topByKey.get(r.key) ?? []).sort(byCountThenValue) }))
}

/** The events a group stands for: count(), or sampled the sum of its rows' weights. */
function weightedCount (weight: SqlFragment | null): SqlFragment {
  return weight === null ? sql`count()` : sql`sum(${weight})`
}

/** Rows from before migration 11 whose attrs text /fields reads at most (a sample past that). */
const legacySampleRows = 5000

/** The attributes of the rows from before migration 11 among `rows`, counted in Sluice. */
interface LegacyAttributes {
  keys: Map<string, { n: number, numbers: number, booleans: number, values: Map<string, number> }>
  /** The rows' count over the rows read: their counts are multiplied by it. */
  scale: number
  sampled: boolean
}

/**
 * Rows from before migration 11 have no attribute arrays (attr-sql.ts): /fields reads their attrs
 * text, at most legacySampleRows of them, and flattens it as ingest does (attr-flatten.ts), so
 * their attributes are listed with the paths and values q finds them by (explore20 F2: the list
 * had none of them). The keys ingest now stores as the service, trace_id and span_id columns are
 * left out: those columns list them.
 */
async function legacyAttributes (clickhouse: ClickHouse, rows: SqlFragment, scope: AttrScope): Promise<LegacyAttributes | null> {
  const [row] = await clickhouse.query<{ n: number, texts: string[] }>(sql`SELECT count() AS n, groupArray(${legacySampleRows})(attrs) AS texts
    FROM events ${rows} AND ${legacyRowSql(scope)}`)
  const n = Number(row?.n ?? 0)
  if (n === 0 || row.texts.length === 0) return null
  const keys: LegacyAttributes['keys'] = new Map()
  for (const text of row.texts) {
    const pairs = flattenAttrsText(text)
    const seen = new Set<string>()
    pairs.keys.forEach((key, i) => {
      // The first value of a path, as every read takes it; no empty key (no q can name it).
      if (key === '' || seen.has(key) || promotedKeys.has(key)) return
      seen.add(key)
      const value = pairs.values[i]
      const k = keys.get(key) ?? { n: 0, numbers: 0, booleans: 0, values: new Map<string, number>() }
      k.n++
      if (readNumber(value) !== null) k.numbers++
      if (value === 'true' || value === 'false') k.booleans++
      k.values.set(value, (k.values.get(value) ?? 0) + 1)
      keys.set(key, k)
    })
  }
  return { keys, scale: n / row.texts.length, sampled: row.texts.length < n }
}

/** The attributes of the arrays and of the older rows together: counts added, top values merged. */
function mergeLegacyAttributes (keyRows: KeyRow[], topByKey: Map<string, Array<{ value: string, count: number }>>,
  legacy: LegacyAttributes, top: number): [KeyRow[], Map<string, Array<{ value: string, count: number }>>] {
  const byKey = new Map(keyRows.map((r) => [r.key, { ...r }]))
  const up = (x: number): number => Math.round(x * legacy.scale)
  for (const [key, k] of legacy.keys) {
    const r = byKey.get(key) ?? { key, key_hash: '', n: 0, seen: 0, numbers: 0, exponents: 0, booleans: 0 }
    r.n += up(k.n)
    r.seen += up(k.n)
    r.numbers += up(k.numbers)
    r.booleans += up(k.booleans)
    byKey.set(key, r)
    const values = new Map((topByKey.get(key) ?? []).map((v) => [v.value, v.count]))
    // A value seen once among sampled old rows says nothing of its frequency (as HAVING n >= 2).
    for (const [value, count] of k.values) if (!legacy.sampled || count >= 2) values.set(value, (values.get(value) ?? 0) + up(count))
    topByKey.set(key, [...values].map(([value, count]) => ({ value, count })))
  }
  for (const [key, list] of topByKey) topByKey.set(key, list.sort(byCountThenValue).slice(0, top))
  // Count descending, ties by key as the keys' statement orders them.
  const merged = [...byKey.values()].sort((a, b) => byCountThenValue({ value: a.key, count: a.n }, { value: b.key, count: b.n })).slice(0, maxAttributes)
  return [merged, topByKey]
}

/**
 * Whether the range's events (before q) are read from the minute rollup: over an hour or more,
 * when no row of the range is hidden and the rollups hold every row.
 */
function readsMinuteRollup (params: FieldsParams): boolean {
  return params.hiddenBefore === 0 && params.rollupsPurged === true && params.to - params.from >= rollupCountMinRangeMs
}

/** Events in [start, end) of the range, ms. */
export interface Bin { start: number, end: number, n: number }

/** Bins a histogram of the range has at most: a sampled read places its slices within them. */
const histogramBins = 4000

/** The width of a histogram's bins over `span`: about span / histogramBins, a multiple of `unit`. */
function histogramBinMs (span: number, unit: number): number {
  return Math.max(unit, Math.ceil(span / histogramBins / unit) * unit)
}

/** A sumMap([bin], [count]) answer as bins from `origin`, in time order. */
function binsOf (hist: [Array<number | string>, Array<number | string>], origin: number, binMs: number): Bin[] {
  const [keys, counts] = hist
  return keys.map((k, i) => ({ start: origin + Number(k) * binMs, end: origin + (Number(k) + 1) * binMs, n: Number(counts[i]) }))
    .sort((a, b) => a.start - b.start)
}

/**
 * Where the range's events lie (before q), for an unfiltered sampled read: over an hour or more
 * the minute rollup's counts (as countInRange), else a histogram of the rows' ts (at most an
 * hour of them).
 */
async function rangeHistogram (clickhouse: ClickHouse, params: FieldsParams, base: SqlFragment, inRange: SqlFragment): Promise<Bin[]> {
  const span = params.to - params.from
  if (!readsMinuteRollup(params)) {
    const binMs = histogramBinMs(span, 1)
    const [{ hist }] = await clickhouse.query<{ hist: [number[], number[]] }>(sql`SELECT
      sumMap([intDiv(ts - ${params.from}, ${binMs})], [toUInt64(1)]) AS hist FROM events WHERE ${base} AND ${inRange}`)
    return binsOf(hist, params.from, binMs)
  }
  // The whole minutes from the rollup; the partial minutes at either end from raw rows, as
  // countInRange reads them: the rollup's count of an edge minute holds events outside the range,
  // and a burst just outside it made a burst slice of the few events inside (explore30).
  const { first, end, edges: edgeRows } = rangeMinutes(params)
  const binMs = histogramBinMs(span, minuteMs)
  const [rows, edges] = await Promise.all([
    clickhouse.query<{ b: number, n: number }>(sql`SELECT intDiv(minute_ts - ${first}, ${binMs}) AS b, sum(n) AS n
      FROM events_1m WHERE org_id = ${params.orgId} AND stream = ${params.stream} AND minute_ts >= ${first} AND minute_ts < ${end}
      GROUP BY b`),
    clickhouse.query<{ head: number, n: number }>(sql`SELECT ts < ${first} AS head, count() AS n FROM events
      WHERE ${base} AND ${edgeRows} GROUP BY head`),
  ])
  const bins = rows.map((r) => ({ start: first + Number(r.b) * binMs, end: Math.min(end, first + (Number(r.b) + 1) * binMs), n: Number(r.n) }))
  for (const r of edges) bins.push(Number(r.head) === 1 ? { start: params.from, end: first, n: Number(r.n) } : { start: end, end: params.to, n: Number(r.n) })
  return bins.filter((b) => b.n > 0 && b.end > b.start).sort((a, b) => a.start - b.start)
}

/** Bins a dense bin is split into when its events cannot all be read (refineDenseBins). */
const refineParts = 60
/** Refinements at most: a minute's bin, then seconds, then 16 ms, then milliseconds. */
const maxRefinePasses = 3

/**
 * The bins, with the dense ones (burstDensity times the range's density) split into refineParts
 * bins of their own events when together they hold more than `wholeBudget` events: a burst that
 * cannot be read whole is sampled in the part of its bin where its events are, not in the bin's
 * middle, which missed a burst in the first seconds of its minute and weighted the few events
 * there by the burst's count (explore30: 20,000 events counted as a neighbour's 50, 90 times over).
 * `overBudgetOnly` (a later pass): only the dense bins that alone hold more than `wholeBudget`,
 * of more than a millisecond. One statement over those bins' rows (their ts, and q's columns).
 */
async function refineDenseBins (clickhouse: ClickHouse, bins: Bin[], params: FieldsParams, rowsIn: (range: SqlFragment) => SqlFragment, wholeBudget: number,
  overBudgetOnly = false): Promise<Bin[]> {
  const isDense = denseTest(bins, params.from, params.to)
  const dense = overBudgetOnly
    ? bins.filter((b) => b.end - b.start > 1 && b.n > wholeBudget && isDense(b))
    : bins.filter((b) => b.end - b.start >= refineParts && isDense(b))
  if (dense.length === 0) return bins
  if (dense.reduce((sum, b) => sum + b.n, 0) <= wholeBudget) return bins
  const fineMs = Math.max(1, Math.floor(Math.min(...dense.map((b) => b.end - b.start)) / refineParts))
  const [{ hist }] = await clickhouse.query<{ hist: [number[], number[]] }>(sql`SELECT
    sumMap([intDiv(ts - ${params.from}, ${fineMs})], [toUInt64(1)]) AS hist
    FROM events ${rowsIn(sql`(${joinSql(dense.map((b) => sql`(ts >= ${b.start} AND ts < ${b.end})`), ' OR ')})`)}`)
  const fine = binsOf(hist, params.from, fineMs).map((b) => {
    // A fine bin at a dense bin's edge is cut to it (the dense bins need not start on fineMs).
    const within = dense.find((d) => b.start < d.end && b.end > d.start)
    return within === undefined ? b : { ...b, start: Math.max(b.start, within.start), end: Math.min(b.end, within.end) }
  })
  return [...bins.filter((b) => !dense.includes(b)), ...fine].filter((b) => b.n > 0 && b.end > b.start).sort((a, b) => a.start - b.start)
}

/** A test of whether a bin is burstDensity times as dense as the events of `bins` over [from, to), or more. */
function denseTest (bins: readonly Bin[], from: number, to: number): (b: Bin) => boolean {
  const density = sum(bins.map((x) => x.n)) / Math.max(1, to - from)
  return (b) => b.n >= burstDensity * density * (b.end - b.start)
}

/** A slice of a sampled range: [lo, hi), and the events of the histogram it stands for. */
export interface Slice { lo: number, hi: number, events: number }

/**
 * About `count` slices [lo, hi), in time order and apart, holding about `fraction` of the events
 * the bins count, each with the events it stands for.
 * - A burst is a stratum of its own: adjacent bins each at least burstDensity times as dense as
 *   the range, holding a thirty-second of a share (1/count of the events) or more together; the `count`
 *   largest. They are read whole while they hold at most half the sample (`fraction` of the
 *   events), else each the same part of its middle; each slice stands for its burst's events.
 * - The other bins' events are split into equal shares: slice k centred where their cumulative
 *   count reaches the middle of share k (linear within a bin), as wide as `fraction` of the share
 *   takes at its bin's density (times `widen`), kept out of the bursts' bins.
 * Events spread evenly give evenly spaced slices of equal width. A burst is neither missed
 * between two slices nor, read by one, taken for its share of the range (explore28a M1: a service
 * that logged only in a burst was listed at +50%, or not at all). Evenly spaced slices scaled by
 * one ratio missed a burst between them and scaled up whatever else they held (60,000 events in
 * 10 s of an hour gave no fields; one event beside a burst of 2,000 was counted 2,001 times).
 */
export function sampleSlicesOf (bins: readonly Bin[], from: number, to: number, count: number, fraction: number, widen = 1): Slice[] {
  const total = bins.reduce((sum, b) => sum + b.n, 0)
  if (total === 0) {
    // Nothing counted (a rollup that holds none of these events): evenly spaced, as if spread.
    return sampleSlicesOf([{ start: from, end: to, n: 1 }], from, to, count, fraction, widen)
  }
  const share = total / count
  const isDense = denseTest(bins, from, to)
  // Runs of adjacent dense bins (a burst across a bin's edge is one), the `count` largest.
  const runs: Bin[] = []
  let run: Bin | null = null
  for (const b of bins) {
    if (!isDense(b)) {
      run = null
    } else if (run !== null && run.end === b.start) {
      run.end = b.end
      run.n += b.n
    } else {
      run = { ...b }
      runs.push(run)
    }
  }
  const bursts = runs.filter((b) => b.n >= share / 32).sort((x, y) => y.n - x.n).slice(0, count)
  // Whole bins while they hold half the sample or less, else the same part of each.
  const burstEvents = bursts.reduce((sum, b) => sum + b.n, 0)
  const part = Math.min(1, widen * fraction * total / 2 / Math.max(1, burstEvents))
  const slices: Slice[] = bursts.map((b) => {
    const width = Math.max(1, part * (b.end - b.start))
    const lo = Math.max(b.start, Math.floor((b.start + b.end - width) / 2))
    return { lo, hi: Math.min(b.end, Math.max(lo + 1, Math.ceil((b.start + b.end + width) / 2))), events: b.n }
  })
  const rest = bins.filter((b) => !bursts.some((burst) => b.start >= burst.start && b.end <= burst.end))
  const restTotal = rest.reduce((sum, b) => sum + b.n, 0)
  // The bursts are strata besides the shares of the rest, not instead of some of them: five
  // slices for the rest of a day of seven bursts counted a service of two hours 2.9 times (explore30).
  const restCount = restTotal === 0 ? 0 : count
  let bin = 0
  let before = 0
  for (let k = 0; k < restCount; k++) {
    // The middle of share k: where the cumulative count reaches restTotal * (k + 0.5) / restCount.
    const c = restTotal * (k + 0.5) / restCount
    while (bin < rest.length - 1 && before + rest[bin].n < c) before += rest[bin++].n
    const b = rest[bin]
    const center = b.start + (b.end - b.start) * Math.min(1, Math.max(0, (c - before) / b.n))
    // Wide enough to hold `fraction` of the share's events at the bin's density.
    const width = Math.max(1, widen * fraction * (restTotal / restCount) * (b.end - b.start) / b.n)
    let lo = Math.max(from, Math.floor(center - width / 2))
    let hi = Math.min(to, Math.ceil(center + width / 2))
    for (const burst of bursts) {
      if (burst.end <= center) lo = Math.max(lo, burst.end)
      else if (burst.start >= center) hi = Math.min(hi, burst.start)
    }
    slices.push({ lo, hi: Math.max(lo + 1, hi), events: restTotal / restCount })
  }
  slices.sort((x, y) => x.lo - y.lo)
  const merged: Slice[] = []
  for (const x of slices) {
    const last = merged[merged.length - 1]
    // Overlapping slices of the other bins are one; a burst's slice only touches its neighbours
    // (each keeps its own weight).
    if (last !== undefined && x.lo < last.hi) {
      last.hi = Math.max(last.hi, x.hi)
      last.events += x.events
    } else {
      merged.push({ ...x })
    }
  }
  return merged
}

/** The rows of each slice among `rows` (which hold only the slices' rows), in the slices' order. */
async function sliceReads (clickhouse: ClickHouse, rows: SqlFragment, slices: readonly Slice[]): Promise<number[]> {
  // Aliases here and in the passes must not be names a filter's lambdas use (attr-sql.ts, filter-sql.ts: q_*).
  const counts = await clickhouse.query<{ slice: number, n: number }>(sql`SELECT ${sliceIndexSql(slices, slices.map((_, k) => k))} AS slice, count() AS n
    FROM events ${rows} GROUP BY slice`)
  const reads = slices.map(() => 0)
  for (const r of counts) reads[Number(r.slice)] = Number(r.n)
  return reads
}

/** values[k] for a row of slice k (slices in time order and apart; the row in one of them). */
export function sliceIndexSql (slices: ReadonlyArray<{ hi: number }>, values: readonly number[]): SqlFragment {
  if (slices.length === 1) return sql`${values[0]}`
  return sql`multiIf(${joinSql(slices.slice(0, -1).map((x, k) => sql`ts < ${x.hi}, ${values[k]}`), ', ')}, ${values[values.length - 1]})`
}

/**
 * Each sampled row's weight: the events its slice stands for over the rows it holds, all scaled
 * so that the weights of the rows read add up to `total` (a slice that read none gives its
 * events to the others).
 */
function sliceWeightSql (slices: readonly Slice[], reads: readonly number[], total: number): SqlFragment {
  const standing = slices.reduce((sum, x, k) => sum + (reads[k] > 0 ? x.events : 0), 0)
  const weights = slices.map((x, k) => reads[k] > 0 ? x.events / reads[k] * total / standing : 0)
  return sql`toFloat64(${sliceIndexSql(slices, weights)})`
}

function sum (values: readonly number[]): number {
  return values.reduce((a, b) => a + b, 0)
}

/**
 * The number of events over the range, before q. Over an hour or more it comes from the minute
 * rollup (events_1m: every event of the stream, since migration 3) for the whole minutes of the
 * range, plus raw rows for the partial minutes at either end: over 30 M events a count of the
 * range read 240 MB of ts for a second, the rollup a few thousand rows in milliseconds
 * (bench/README.md, "Explore: first render").
 */
async function countInRange (clickhouse: ClickHouse, params: FieldsParams, base: SqlFragment, inRange: SqlFragment): Promise<number> {
  if (!readsMinuteRollup(params)) {
    const [{ n }] = await clickhouse.query<{ n: number }>(sql`SELECT count() AS n FROM events WHERE ${base} AND ${inRange}`)
    return Number(n)
  }
  const { first, end, edges: edgeRows } = rangeMinutes(params)
  const [[{ n: whole }], [{ n: edges }]] = await Promise.all([
    clickhouse.query<{ n: number }>(sql`SELECT sum(n) AS n FROM events_1m
      WHERE org_id = ${params.orgId} AND stream = ${params.stream} AND minute_ts >= ${first} AND minute_ts < ${end}`),
    clickhouse.query<{ n: number }>(sql`SELECT count() AS n FROM events WHERE ${base} AND ${edgeRows}`),
  ])
  return Number(whole) + Number(edges)
}

/**
 * The range's whole minutes [first, end), which the minute rollup counts, and its partial minutes
 * at either end as a condition on raw rows (the rollup's counts of those hold events outside it).
 */
function rangeMinutes (params: FieldsParams): { first: number, end: number, edges: SqlFragment } {
  const first = Math.ceil(params.from / minuteMs) * minuteMs
  const end = Math.max(first, Math.floor(params.to / minuteMs) * minuteMs)
  return { first, end, edges: sql`((ts >= ${params.from} AND ts < ${first}) OR (ts >= ${end} AND ts < ${params.to}))` }
}

/** A column's count and its top values, count descending. */
interface ColumnValues { count: number, top: Array<{ value: string, count: number }> }

/**
 * The `top` pairs of a groupArray of (value, count) tuples (a count or a sum of weights), count descending and ties by value
 * as ClickHouse orders strings, as `top_values` and `top_counts` (two arrays: 26.x may write a
 * tuple as a JSON object).
 */
function topOf (pairs: SqlFragment, top: number): SqlFragment {
  return sql`arraySlice(arraySort(x -> (-round(x.2), x.1), ${pairs}), 1, ${top}) AS sorted,
    arrayMap(x -> x.1, sorted) AS top_values, arrayMap(x -> x.2, sorted) AS top_counts`
}

function topList (values: string[], counts: Array<number | string>): Array<{ value: string, count: number }> {
  return values.map((value, i) => ({ value, count: Math.round(Number(counts[i])) })).sort(byCountThenValue)
}

/**
 * The count and `top` most frequent values of the listed columns `indexes` (a numeric column's
 * as toString writes them), count descending and ties by value, over `rows`: one pass per
 * `perPass` columns, which ARRAY JOINs each event's (column, value) pairs and groups them. A
 * value is counted apart when `candidates` is null (exact) or it is one of its text column's
 * candidates (hashes of their text, a sample's topK), and a numeric column's always (a number
 * hashes cheaply); the others only add to the column's count. `seenOnce` leaves values counted once out of the top values;
 * sampled, the counts are sums of the rows' `weight`.
 * A pass per column (a UNION ALL of GROUP BYs) evaluated q in each: 1.7 of the 2.9 s a /fields
 * of 13,500 matches among 1.2 M events took on 18.16 (explore28b M3; bench/README.md).
 */
async function columnValues (clickhouse: ClickHouse, rows: SqlFragment, top: number, scope: AttrScope, indexes: readonly number[],
  candidates: string[][] | null, seenOnce: boolean, weight: SqlFragment | null, perPass: number): Promise<ColumnValues[]> {
  const out = listedColumns.map((): ColumnValues => ({ count: 0, top: [] }))
  for (let first = 0; first < indexes.length; first += perPass) {
    const pass = indexes.slice(first, first + perPass).map((i) => ({ c: listedColumns[i], i }))
    const pairs = pass.map(({ c, i }) => sql`(${rawSql(String(i))}, ${c.numeric ? sql`toString(${rawSql(c.column)})` : columnSql(c.column, scope)})`)
    // Whether pair p's value is counted apart: a text column's when it is one of its candidates,
    // by multiIf on the column; a numeric column's always (a pass may hold numeric columns only).
    const textKept = candidates === null ? [] : pass.flatMap(({ c, i }) => c.numeric
      ? []
      : [sql`p.1 = ${rawSql(String(i))}, ${candidates[i].length === 0 ? sql`0` : sql`cityHash64(assumeNotNull(p.2)) IN (${uint64List(candidates[i])})`}`])
    const kept = textKept.length === 0 ? sql`1` : sql`multiIf(${joinSql(textKept, ', ')}, 1)`
    const result = await clickhouse.query<{ i: number, n: number, top_values: string[], top_counts: number[] }>(sql`
      SELECT i, sum(w) AS n, ${topOf(sql`groupArrayIf((v, w), kept AND c >= ${seenOnce ? 2 : 1})`, top)}
      FROM (SELECT p.1 AS i, ${kept} AS kept, if(kept, assumeNotNull(p.2), '') AS v, count() AS c, ${weightedCount(weight)} AS w
        FROM events ARRAY JOIN arrayFilter(x -> isNotNull(x.2), [${joinSql(pairs, ', ')}]) AS p
        ${rows}
        GROUP BY i, kept, v)
      GROUP BY i`)
    for (const r of result) out[Number(r.i)] = { count: Number(r.n), top: topList(r.top_values, r.top_counts) }
  }
  return out
}
