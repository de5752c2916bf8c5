// The SQL filter and the live-tail matcher agree: for each q, ClickHouse selects exactly the events
// the JS predicate accepts. First over a fixed set of awkward events (absent fields, mixed case,
// Unicode that lowerUTF8 and toLowerCase treat differently, LIKE wildcards, quotes, backslashes,
// injection attempts, attributes), some queries also checked against the expected set; then on
// generated events and generated queries (nested AND, OR, NOT over columns and attributes,
// numeric comparisons on numeric and non-numeric text, regular expressions of the accepted
// subset, absent fields, Unicode); then the two halves that could drift on their own, the regex
// engines and the reading of numbers, each against ClickHouse directly.
import t from 'tap'
import type { Test } from 'tap'
import fc from 'fast-check'
import { createTestDatabase } from '../helpers/clickhouse.ts'
import type { ClickHouse } from '../../lib/storage/clickhouse.ts'
import { migration } from '../../lib/storage/migrations/002_events.ts'
import { migration as levelMigration } from '../../lib/storage/migrations/006_events_level.ts'
import { migration as attributesMigration } from '../../lib/storage/migrations/011_events_attributes.ts'
import { joinSql, rawSql, sql } from '../../lib/storage/sql.ts'
import type { SqlFragment } from '../../lib/storage/sql.ts'
import { maxFilterTerms, parseFilter } from '../../lib/query/filter-parser.ts'
import { detectFold, filterToSql, valuesPrefilterSql } from '../../lib/query/filter-sql.ts'
import { noLegacyRows } from '../../lib/query/attr-sql.ts'
import type { FoldMode } from '../../lib/query/filter-sql.ts'
import { compileMatcher } from '../../lib/query/filter-match.ts'
import { flattenAttrsText } from '../../lib/events/attr-flatten.ts'
import type { EventLike } from '../../lib/query/filter-match.ts'
import { parseRegex, matchesRegex } from '../../lib/query/filter-regex.ts'
import { numberValue, powersOfTen, readNumber } from '../../lib/query/filter-number.ts'
import { levelNames } from '../../lib/events/level.ts'

type Fixture = EventLike & { id: number }

// Fields not given are absent (NULL). `id` goes into ts, to name the rows.
const fixtures: Fixture[] = [
  { id: 1, host: 'api.example.com', path: '/api/users', method: 'GET', status: 200, src: '10.0.0.1', user_agent: 'curl/8.4.0', attrs: '{"user":{"id":42},"service":"checkout","order.total":129.5}' },
  { id: 2, host: 'API.example.com', path: '/api/orders', method: 'POST', status: 201, user_agent: 'Mozilla/5.0 (X11; Linux)', attrs: '{"user":{"id":"7"},"host":"inner","tags":["a","b"]}' },
  { id: 3, path: '/health', method: 'GET', status: 200, level: 'debug', service: 'checkout', trace_id: '5b8efff798038103d269b633813fc60c', attrs: '{"user_id":"42","flag":true,"nothing":null}' },
  { id: 4, message: 'Connection reset by peer', filename: '/var/log/app.log', level: 'warn', attrs: '{"n":"12abc","m":"1.985"}' },
  { id: 5, message: 'ERROR: disk full', filename: '/var/log/app.log', level: 'error', attrs: '{"n":-3,"m":1.985,"text":"line\\nbreak"}' },
  { id: 6, message: 'error: Disk Full on /dev/sda1', filename: '/var/log/other.log', level: 'fatal', attrs: '{"n":1e21,"uni":"Éé😀"}' },
  { id: 7, path: '/100%_done', status: 404 },
  { id: 8, path: '/100x-done', status: 404 },
  { id: 9, path: '/a_b', status: 500 },
  { id: 10, path: '/a b', status: 503, method: 'DELETE' },
  { id: 11, message: 'it\'s a "quoted" message', level: 'info' },
  { id: 12, message: 'back\\slash C:\\logs\\app' },
  { id: 13, message: "') OR 1=1 --", host: "'" },
  { id: 14, message: 'École fermée', path: '/ÉCOLE' },
  { id: 15, message: 'ΟΔΟΣ Σίσυφος' },
  { id: 16, message: 'Straße STRASSE ẞ' },
  { id: 17, message: 'İstanbul ıi' },
  { id: 18, message: 'Kelvin \u212a sign, ſ long s' },
  { id: 19, message: 'ǅemal titlecase' },
  { id: 20, message: 'Привет МИР', user_agent: 'ЯНДЕКС бот' },
  { id: 21, message: 'emoji 😀 and 𐐀 Deseret' },
  { id: 22, message: 'bad \ud800 surrogate' },
  { id: 23, message: 'tab\there\nnewline nul\u0000byte' },
  { id: 24, user_agent: 'Googlebot/2.1', path: '/robots.txt', status: 301, host: '\\' },
  { id: 25, status: 599, path: '/x', rt: 0.25, bytes: 1024 },
  { id: 26, status: 100, path: '/', rt: 1.985, bytes: 0 },
  { id: 27, src: '::1', host: 'localhost', status: 302 },
  { id: 28 },
  { id: 29, message: '', path: '', host: '', attrs: '{"empty":"","host":""}' },
  { id: 30, method: 'get', status: 499, path: '/API/Users' },
  { id: 31, filename: 'C:\\logs\\app.log', message: 'x*y literal star', status: 404 },
  { id: 32, message: '错误 日志 ERROR', path: '/中文' },
]

const queries = [
  '', 'host:api.example.com', '-host:api.example.com', 'host:API.example.com', 'host:*', '-host:*',
  'path:/api/*', '-path:/api/*', 'path:/100%_*', 'path:/100%*', 'path:/a_b', 'path:/a?b', 'path:"/a b"', 'path:"/a b"*',
  'path:/a*', 'path:*', '-path:*', 'method:GET', 'method:get', '-method:GET', 'src:::1', 'user_agent:curl/*',
  'filename:/var/log/*', '-filename:/var/log/app.log', 'filename:"C:\\logs\\app.log"',
  'status:404', '-status:404', 'status:5xx', '-status:5xx', 'status:1xx', 'status:>=500', 'status:<200', 'status:>499',
  'status:<=301', 'status:=200', 'status:4*', 'status:50*', 'status:*', '-status:*', 'status:2xx method:GET',
  'error', 'ERROR', '"disk full"', '-error', 'error -"disk full"', 'api users', 'api -users', 'users',
  'école', 'ÉCOLE', 'straße', 'strasse', 'ß', 'ẞ', 'σ', 'ς', 'ΟΔΟΣ', 'ίσυφος', 'istanbul', 'ı', 'i̇',
  'k', 'kelvin', '\u212a', 's', 'ſ', 'ǆ', 'ǅ', 'мир', 'ПРИВЕТ', 'яндекс', '😀', '𐐨', '𐐀', '错误', '"\ufffd"', '"bad \ufffd"',
  '"it\'s"', '"\\"quoted\\""', '"C:\\\\logs"', '"\\\\slash"', '"x*y"', '"x*"', '"tab\there"', '"nul\u0000byte"',
  "\"') OR 1=1 --\"", '"\')"', "host:'", 'host:\\', 'host:"\\\\"', 'host:"\'"', "\"'; DROP TABLE events; --\"",
  'host:"x)OR(1=1"', '"%"', '"_"', 'host:""*', '-"e"', 'e -e', 'host:""', '-host:""', 'path:""', 'message:""', 'attrs.host:""', 'empty:""',
  'level:error', 'level:ERROR', 'level:err', 'level:>=warn', '-level:>=warn', 'level:>error', 'level:<info', 'level:<=info',
  'level:=info', 'level:*', '-level:*', 'level:warning error', 'level:>fatal', 'level:<trace',
  // Boolean structure.
  'level:error OR status:5xx', 'NOT level:error', '-(level:error OR status:5xx)', 'status:404 OR status:500 path:/a_b',
  '(status:404 OR status:500) path:/a_b', 'error AND NOT "disk full"', 'and', 'or', 'a OR (b AND NOT (c OR -d))',
  // Attributes, numbers, regexes.
  'user.id:42', 'user.id:7', 'user.id:*', '-user.id:*', 'user_id:42', 'user.id:>10', 'user.id:>=7', 'user.id:<=7',
  'service:checkout', 'attrs.service:checkout', 'service:*', 'trace_id:5b8e*', 'span_id:*', 'attrs.host:inner', 'host:inner', 'attrs.host:*', '"order.total":>100', 'order.total:129.5',
  'n:>0', 'n:<0', 'n:=-3', 'n:*', '-n:>0', 'n:12*', 'm:=1.985', 'm:>=1.985', 'm:>1.985', 'm:1.985', 'flag:true', 'nothing:null',
  'nothing:*', 'tags:*', 'tags:~"^\\[\\"a"', 'text:~"line.break"', 'uni:~"^.{4}$"', 'uni:É*', 'missing:>1', '-missing:>1',
  'rt:>0.25', 'rt:>=0.25', 'rt:1.985', 'rt:<1.985', 'bytes:>=0', 'bytes:1*', 'ts:>=30', 'ts:<3', 'ts:1*', 'host:>1',
  'path:~"^/api/"', 'path:~"^/[a-z]+$"', 'message:~"\\d"', 'message:~"[ÉE]cole"', 'message:~"😀"', 'message:~"^$"', 'status:~"^5"',
  'user_agent:~"\\(X11"', 'message:~"tab\\sh"', 'level:~"^e"', 'message:*', 'message:""*', 'message:"ERROR: disk full"',
]

// Queries whose result is also known by hand (ids).
const all = fixtures.map((f) => f.id)
// The keys are queries, quoted alike whether or not JavaScript needs it.
/* eslint-disable @stylistic/quote-props */
const expected: Record<string, number[]> = {
  'level:error': [5],
  'level:err': [5],
  'level:>=warn': [4, 5, 6],
  '-level:>=warn': all.filter((id) => ![4, 5, 6].includes(id)),
  'level:<=info': [3, 11],
  'level:*': [3, 4, 5, 6, 11],
  // An object is present when something below it is (its keys are stored as its leaves' paths).
  'user:*': [1, 2],
  '-user:*': all.filter((id) => ![1, 2].includes(id)),
  'attrs.user:*': [1, 2],
  'us:*': [],
  'order:*': [1],
  'level:>fatal': [],
  'host:api.example.com': [1],
  '-host:api.example.com': all.filter((id) => id !== 1),
  'host:*': [1, 2, 13, 24, 27, 29],
  'host:""': [29],
  '-host:""': all.filter((id) => id !== 29),
  'empty:""': [29],
  'attrs.host:""': [29],
  '-path:*': [4, 5, 6, 11, 12, 13, 15, 16, 17, 18, 19, 20, 21, 22, 23, 27, 28, 31],
  'path:/100%_*': [7],
  'path:/a_b': [9],
  'path:"/a b"': [10],
  'status:5xx': [9, 10, 25],
  '-status:5xx': all.filter((id) => ![9, 10, 25].includes(id)),
  'status:4*': [7, 8, 30, 31],
  '"disk full"': [5, 6],
  'error -"disk full"': [32],
  'école': [14],
  'ÉCOLE': [14],
  'strasse': [16],
  'ß': [16],
  'σ': [15],
  'istanbul': [],
  'k': [5, 6, 12, 18],
  'ǆ': [],
  'мир': [20],
  'яндекс': [20],
  '"\ufffd"': [22],
  "\"') OR 1=1 --\"": [13],
  "host:'": [13],
  'host:\\': [24],
  '"\\"quoted\\""': [11],
  '"C:\\\\logs"': [12],
  'level:error OR status:5xx': [5, 9, 10, 25],
  '-(level:error OR status:5xx)': all.filter((id) => ![5, 9, 10, 25].includes(id)),
  'status:404 OR status:500 path:/a_b': [7, 8, 9, 31],
  '(status:404 OR status:500) path:/a_b': [9],
  'user.id:42': [1],
  'user.id:>=7': [1, 2],
  'user_id:42': [3],
  '-user.id:*': all.filter((id) => id !== 1 && id !== 2),
  'service:checkout': [3],
  'attrs.service:checkout': [1],
  'trace_id:5b8e*': [3],
  'attrs.host:inner': [2],
  'host:inner': [],
  '"order.total":>100': [1],
  'n:>0': [],
  'n:<0': [5],
  'n:*': [4, 5, 6],
  '-n:>0': all,
  'm:=1.985': [4, 5],
  'm:>1.985': [],
  'nothing:null': [3],
  'text:~"line.break"': [5],
  'uni:~"^.{4}$"': [],
  'uni:~"^.{3}$"': [6],
  'rt:>=0.25': [25, 26],
  'bytes:>=0': [25, 26],
  'ts:<3': [1, 2],
  'status:~"^5"': [9, 10, 25],
}
/* eslint-enable @stylistic/quote-props */

async function createEventsTable (clickhouse: ClickHouse): Promise<void> {
  for (const statement of [...migration.statements, ...levelMigration.statements, ...attributesMigration.statements]) await clickhouse.command(statement)
}

// A float as the row writer stores it (RowBinary, exact): 18.16 reads a literal such as 1.985
// one unit in the last place off, so it is written as digits over a power of ten (filter-number.ts).
function exactFloat (value: string | number | null | undefined): SqlFragment | null {
  if (typeof value !== 'number') return null
  const n = readNumber(String(value))
  if (n === null || n.value !== value) throw new Error(`no exact literal for ${value}`)
  return rawSql(`toFloat64(${n.mantissa}) ${n.scale >= 0 ? '*' : '/'} ${powersOfTen[Math.abs(n.scale)]}`)
}

async function insertEvents (clickhouse: ClickHouse, stream: string, events: readonly Fixture[]): Promise<void> {
  const rows = events.map((f) => {
    const attrs = typeof f.attrs === 'string' ? f.attrs : '{}'
    const { keys, values } = flattenAttrsText(attrs)
    return sql`('org', ${stream}, ${f.id}, 0, ${f.host ?? null}, ${f.path ?? null}, ${f.method ?? null}, ${f.status ?? null},
      ${exactFloat(f.rt)}, ${f.bytes ?? null}, ${f.src ?? null}, ${f.user_agent ?? null}, ${f.message ?? null}, ${f.filename ?? null},
      ${f.level ?? null}, ${f.service ?? null}, ${f.trace_id ?? null}, ${f.span_id ?? null}, ${attrs}, ${keys}, ${values})`
  })
  await clickhouse.command(sql`INSERT INTO events (org_id, stream, ts, received_at, host, path, method, status, rt, bytes,
    src, user_agent, message, filename, level, service, trace_id, span_id, attrs, attr_keys, attr_values) VALUES ${joinSql(rows, ', ')}`)
}

/** How the server folds text (lowerUTF8 on 18.16, case-fold.ts's table through translateUTF8 on 26.x). */
let fold: FoldMode | undefined

/**
 * The events q selects in ClickHouse; each query runs three times: with and without the
 * skip-index pre-filters of current versions (filter-sql.ts, docs/schema-versions.md), and with
 * 18.16's attribute-value pre-filter as the PREWHERE (valuesPrefilterSql). None may change a
 * result: their SQL is portable, so either engine checks them all (without the indexes).
 */
async function selectIds (clickhouse: ClickHouse, stream: string, q: string): Promise<number[]> {
  fold ??= await detectFold(clickhouse)
  const filter = parseFilter(q)
  const run = async (indexes: boolean, prewhere: SqlFragment | null = null): Promise<number[]> => (await clickhouse.query<{ ts: number }>(
    sql`SELECT ts FROM events ${prewhere === null ? sql`` : sql`PREWHERE ${prewhere}`}
      WHERE org_id = 'org' AND stream = ${stream} AND ${filterToSql(filter, undefined, { indexes, fold })} ORDER BY ts`))
    .map((r) => Number(r.ts))
  const exact = await run(false)
  const prefiltered = await run(true)
  if (JSON.stringify(exact) !== JSON.stringify(prefiltered)) {
    throw new Error(`${JSON.stringify(q)}: with pre-filters ${JSON.stringify(prefiltered)}, without ${JSON.stringify(exact)}`)
  }
  const values = valuesPrefilterSql(filter, noLegacyRows)
  if (values !== null) {
    const withValues = await run(false, values)
    if (JSON.stringify(exact) !== JSON.stringify(withValues)) {
      throw new Error(`${JSON.stringify(q)}: with the values pre-filter ${JSON.stringify(withValues)}, without ${JSON.stringify(exact)}`)
    }
    valuesPrefiltered++
  }
  return exact
}

/** Queries that had a values pre-filter (selectIds). */
let valuesPrefiltered = 0

function matchIds (events: readonly Fixture[], q: string): number[] {
  const matches = compileMatcher(parseFilter(q))
  return events.filter((f) => matches({ ...f, ts: f.id })).map((f) => f.id)
}

// On 26.x, whose lowerUTF8 lowers with ICU (İ, ẞ, final sigma, title case), the SQL folds with
// case-fold.ts's own table instead (filter-sql.ts detectFold), so both engines hold to this.
t.test('the SQL filter selects exactly what the matcher accepts', async (t) => {
  const { clickhouse } = await createTestDatabase(t)
  await createEventsTable(clickhouse)
  await insertEvents(clickhouse, 'fixed', fixtures)

  for (const q of queries) {
    const sqlIds = await selectIds(clickhouse, 'fixed', q)
    t.same(matchIds(fixtures, q), sqlIds, `${JSON.stringify(q)}: matcher agrees with ClickHouse`)
    const known = expected[q]
    if (known !== undefined) t.same(sqlIds, known, `${JSON.stringify(q)} selects the expected events`)
  }
  for (const q of Object.keys(expected)) if (!queries.includes(q)) t.same(matchIds(fixtures, q), expected[q], `${JSON.stringify(q)} matches the expected events`)
  const [{ n }] = await clickhouse.query<{ n: number }>('SELECT count() AS n FROM events')
  t.equal(Number(n), fixtures.length, 'the injection attempts changed nothing')

  // The widest q: every term a numeric comparison on an attribute, read also from the attrs text
  // of rows stored before migration 11 (their arrays empty): its SQL stays within ClickHouse's
  // max_query_size, and it holds where the matcher says.
  const wide = [...Array.from({ length: maxFilterTerms - 1 }, (_, i) => `deep.path.n${i}:>=${i}.5`), 'user.id:>41'].join(' OR ')
  const legacy = filterToSql(parseFilter(wide), { before: Number.MAX_SAFE_INTEGER })
  const wideRows = await clickhouse.query<{ ts: number }>(sql`SELECT ts FROM events WHERE stream = 'fixed' AND ${legacy} ORDER BY ts`)
  t.same(wideRows.map((r) => Number(r.ts)), matchIds(fixtures, wide), `${maxFilterTerms} numeric attribute terms in ${legacy.text.length} characters of SQL`)

  // ---- Generated events and queries ----
  const generatedEvents = fc.sample(eventArbitrary, { numRuns: 400, seed: 22 }).map((e, i) => ({ ...e, id: 1000 + i }))
  await insertEvents(clickhouse, 'generated', generatedEvents)
  let checked = 0
  await fc.assert(fc.asyncProperty(queryArbitrary, async (q) => {
    checked++
    const sqlIds = await selectIds(clickhouse, 'generated', q)
    const jsIds = matchIds(generatedEvents, q)
    if (process.env.FILTER_SHOW) console.error(jsIds.length, q)
    if (JSON.stringify(sqlIds) !== JSON.stringify(jsIds)) {
      throw new Error(`${JSON.stringify(q)}: ClickHouse ${JSON.stringify(sqlIds)}, matcher ${JSON.stringify(jsIds)}`)
    }
  }), { numRuns: 400, seed: Number(process.env.FILTER_SEED ?? 2222) })
  t.ok(checked >= 400, `${checked} generated queries agree on ${generatedEvents.length} generated events`)
  t.ok(valuesPrefiltered >= 20, `${valuesPrefiltered} queries ran with the attribute-value pre-filter as well`)
})

// ---- Generators ----

// Values chosen to collide across events and queries: numbers, almost-numbers, case and Unicode.
const textPool = ['a', 'A', 'ab', 'abc', 'aab', 'b', 'x y', 'é', 'É', 'ß', '😀', '', 'line\nbreak', '42', '-1.5', '007', '1e3',
  '1.985', '129.5', '0.1', '1e21', '1e-7', '12abc', ' 42', '+5', 'inf', 'true', 'null', '10.0.0.1', '/api/users', '/api/x', 'GET',
  'Error', 'error', 'ERROR disk', '{"x":1}', '[1,2]', 'a.b', 'ǅ', 'İ', '\ud800', 'tab\t', '1.0', '-0', '0', '99999999999999999',
  '1E+2', '0012.50', '-2e-3', '1e400', '1234567890123456789', '5.']
const numberPool = [0, 1, 7, 42, -3, -1.5, 1.985, 0.1, 129.5, 1e21, 1e-7, 123456789012345680, 2.5e-19, 0.30000000000000004]
const attrKeys = ['s', 'n', 'user', 'deep', 'flag', 'nul', 'arr', 'host', 'uni.é', 'k-8/s@x', 'a.b', 'service', 'a']

const textArb = fc.oneof({ weight: 6, arbitrary: fc.constantFrom(...textPool) }, { weight: 1, arbitrary: fc.string({ maxLength: 6 }) }, { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 4 }) })
const leafArb = fc.oneof(textArb, fc.constantFrom(...numberPool), fc.boolean(), fc.constant(null),
  fc.array(fc.oneof(fc.constantFrom(...numberPool), fc.constantFrom('a', 'é')), { maxLength: 2 }))
const attrValueArb = fc.oneof(
  { weight: 4, arbitrary: leafArb },
  { weight: 1, arbitrary: fc.record({ id: leafArb, b: leafArb, a: fc.record({ b: leafArb }, { requiredKeys: [] }) }, { requiredKeys: [] }) },
)
const attrsArb = fc.dictionary(fc.constantFrom(...attrKeys), attrValueArb, { maxKeys: 5 }).map((o) => JSON.stringify(o))

const optional = <T>(arb: fc.Arbitrary<T>): fc.Arbitrary<T | null> => fc.option(arb, { freq: 3, nil: null })
const eventArbitrary: fc.Arbitrary<EventLike> = fc.record({
  host: optional(textArb),
  path: optional(fc.oneof(textArb, fc.constantFrom('/api/users', '/api/x', '/', '/é'))),
  method: optional(fc.constantFrom('GET', 'POST', 'get', '42')),
  status: optional(fc.integer({ min: 100, max: 599 })),
  rt: optional(fc.constantFrom(0, 0.1, 0.25, 1.985, 129.5, 1e-7, 3)),
  bytes: optional(fc.constantFrom(0, 1, 42, 1024, 123456789)),
  src: optional(textArb),
  user_agent: optional(textArb),
  message: optional(textArb),
  filename: optional(textArb),
  level: optional(fc.constantFrom(...levelNames)),
  service: optional(fc.constantFrom('checkout', 'api', 'é', '42')),
  trace_id: optional(fc.constantFrom('5b8efff798038103d269b633813fc60c', 'abc')),
  attrs: attrsArb,
})

// A q phrase holding `text` exactly: \ and " escaped, as filter-parser.ts reads them.
const quote = (text: string): string => '"' + text.replace(/[\\"]/g, (c) => '\\' + c) + '"'

// Regular expressions of the accepted subset, as text.
const regexLiteralArb = fc.constantFrom('a', 'b', 'é', 'É', '😀', '1', '4', ' ', '\\.', '\\n', '\\t', '\\\\', '\\[', '\\*', '\\x41', '\\x{e9}', '/', '-', '"')
const regexClassArb = fc.constantFrom('[ab]', '[^a]', '[a-z]', '[0-9.]', '[é😀]', '[^\\d]', '[\\s]', '[\\w-]', '[\\]]', '\\d', '\\w', '\\s', '\\D', '\\W', '\\S', '.')
const regexArb: fc.Arbitrary<string> = fc.letrec<{ re: string, atom: string }>((tie) => ({
  atom: fc.oneof(
    { maxDepth: 3, depthIdentifier: 're' },
    { weight: 4, arbitrary: regexLiteralArb },
    { weight: 3, arbitrary: regexClassArb },
    { weight: 1, arbitrary: tie('re').map((r) => `(${r})`) },
    { weight: 1, arbitrary: tie('re').map((r) => `(?:${r})`) },
  ),
  re: fc.oneof(
    { weight: 3, arbitrary: fc.array(fc.tuple(tie('atom'), fc.constantFrom('', '', '', '*', '+', '?', '{2}', '{1,3}', '{0,}', '*?', '+?')).map(([a, q]) => a + q), { minLength: 1, maxLength: 4 }).map((parts) => parts.join('')) },
    { weight: 1, arbitrary: fc.tuple(tie('re'), tie('re')).map(([a, b]) => `${a}|${b}`) },
    { weight: 1, arbitrary: fc.tuple(fc.constantFrom('^', ''), tie('re'), fc.constantFrom('$', '')).map(([a, r, b]) => a + r + b) },
  ),
})).re

const attrNames = ['s', 'n', 'user.id', 'deep', 'user.a.b', 'flag', 'nul', 'arr', 'attrs.host', 'uni.é', '"uni.é"', 'k-8/s@x', 'a.b', 'missing']
const numberArb = fc.constantFrom('0', '1', '7', '42', '-3', '-1.5', '1.985', '0.1', '129.5', '1e-7', '100', '1024', '500', '-0', '1.5e2')
const stringColumns = ['host', 'path', 'method', 'src', 'message', 'filename', 'user_agent', 'service', 'trace_id', 'span_id']

const termArb: fc.Arbitrary<string> = fc.oneof(
  {
    weight: 3, arbitrary: fc.tuple(fc.constantFrom(...attrNames, ...stringColumns), fc.oneof(
      fc.constant('*'),
      textArb.filter((v) => v !== '').map(quote),
      textArb.filter((v) => v !== '').map((v) => quote(v) + '*'),
      fc.constantFrom('a*', 'e*', '1*', '/api*', '4*', 'G*'),
      fc.tuple(fc.constantFrom('>', '>=', '<', '<=', '='), numberArb).map(([op, n]) => op + n),
      regexArb.map((r) => '~' + quote(r)),
    )).map(([name, value]) => `${name}:${value}`)
  },
  {
    weight: 1, arbitrary: fc.tuple(fc.constantFrom('status', 'bytes', 'ts', 'rt'), fc.oneof(
      fc.constant('*'),
      fc.tuple(fc.constantFrom('>', '>=', '<', '<=', '=', ''), numberArb).map(([op, n]) => op + n),
    )).map(([name, value]) => `${name}:${value}`)
  },
  { weight: 1, arbitrary: fc.constantFrom('status:5xx', 'status:4*', 'status:~"^2"', 'bytes:1*', 'ts:10*', 'level:>=warn', 'level:error', 'level:*', 'level:~"a"') },
  { weight: 1, arbitrary: textArb.filter((v) => v.trim() !== '').map(quote) },
  { weight: 1, arbitrary: fc.constantFrom('error', 'api', 'é', 'x', 'ß', '😀') },
)

const queryArbitrary: fc.Arbitrary<string> = fc.letrec<{ q: string, unary: string }>((tie) => ({
  unary: fc.oneof(
    { maxDepth: 3, depthIdentifier: 'q' },
    { weight: 5, arbitrary: termArb },
    { weight: 1, arbitrary: tie('unary').map((u) => `-${u}`) },
    { weight: 1, arbitrary: tie('unary').map((u) => `NOT ${u}`) },
    { weight: 1, arbitrary: tie('q').map((q) => `(${q})`) },
  ),
  q: fc.array(fc.tuple(tie('unary'), fc.constantFrom(' ', ' AND ', ' OR ')), { minLength: 1, maxLength: 3 })
    .map((parts) => parts.map(([u, op], i) => i === 0 ? u : op + u).join('')),
})).q.filter((q) => {
  try {
    parseFilter(q)
    return true
  } catch {
    return false // past the caps on terms or depth
  }
})

// ---- The two halves that could drift apart ----

const probeTexts = ['', 'a', 'b', 'ab', 'ba', 'aab', 'abab', 'é', 'É', 'éé', '😀', 'a😀b', 'a\nb', '\n', 'line\nbreak', '1', '42', '4.2',
  ' ', '\t', '\v', '\u00a0', 'a b', 'x-y', 'a.b', '[a', ']', '*', '\\', 'A', 'ABC', '/', '"', 'a"b', '[1,2]', 'ﬀ', 'ǅ', '\u2028', 'abcdefgh']

t.test('regular expressions: ClickHouse match() and the tail automaton agree on the accepted subset', async (t) => {
  const { clickhouse } = await createTestDatabase(t)
  let checked = 0
  await fc.assert(fc.asyncProperty(regexArb, async (source) => {
    const regex = parseRegex(source, 0)
    const rows = await clickhouse.query<{ m: number[] }>(sql`SELECT arrayMap(s -> match(s, ${regex.re2}), ${probeTexts}) AS m`)
    const js = probeTexts.map((s) => matchesRegex(regex, s) ? 1 : 0)
    const ch = rows[0].m.map(Number)
    checked++
    if (JSON.stringify(js) !== JSON.stringify(ch)) {
      const diff = probeTexts.flatMap((s, i) => js[i] === ch[i] ? [] : [`${JSON.stringify(s)}: ClickHouse ${ch[i]}, tail ${js[i]}`])
      throw new Error(`${JSON.stringify(source)} as ${JSON.stringify(regex.re2)}: ${diff.join('; ')}`)
    }
  }), { numRuns: 300, seed: Number(process.env.FILTER_SEED ?? 2222) })
  t.ok(checked >= 300, `${checked} generated patterns agree on ${probeTexts.length} texts`)
})

t.test('numbers in text: numberSql in ClickHouse and numberValue in the tail read the same value', async (t) => {
  const { clickhouse } = await createTestDatabase(t)
  const digits = (n: number): fc.Arbitrary<string> => fc.string({ unit: fc.constantFrom(...'0123456789'), minLength: 1, maxLength: n })
  const textArb = fc.oneof(
    fc.tuple(fc.constantFrom('', '-'), digits(10), fc.option(digits(9)), fc.option(fc.tuple(fc.constantFrom('e', 'E'), fc.constantFrom('', '+', '-'), digits(3))))
      .map(([sign, int, frac, exp]) => sign + int + (frac === null ? '' : '.' + frac) + (exp === null ? '' : exp.join(''))),
    fc.constantFrom(...textPool),
    fc.double().map(String),
  )
  const texts = fc.sample(textArb, { numRuns: 2000, seed: 22 })
  const events: Fixture[] = texts.map((x, i) => ({ id: i, attrs: JSON.stringify({ x }) }))
  await createEventsTable(clickhouse)
  await insertEvents(clickhouse, 'numbers', events)
  // Thresholds at the values themselves, where one unit in the last place decides.
  const bounds = texts.filter((x) => numberValue(x) !== null).slice(0, 60)
  t.ok(bounds.length >= 50, 'enough numeric texts')
  for (const bound of bounds) {
    for (const q of [`x:=${bound}`, `x:<${bound}`, `x:>${bound}`]) {
      const sqlIds = await selectIds(clickhouse, 'numbers', q)
      t.same(matchIds(events, q), sqlIds, `${q}: the same events`)
    }
  }
})

/** Events inserted into `stream`, then each q of `expected` selects its ids in ClickHouse and in the tail. */
async function expectSelected (t: Test, stream: string, events: Fixture[], expected: Record<string, number[]>): Promise<void> {
  const { clickhouse } = await createTestDatabase(t)
  await createEventsTable(clickhouse)
  await insertEvents(clickhouse, stream, events)
  for (const [q, ids] of Object.entries(expected)) {
    t.same(await selectIds(clickhouse, stream, q), ids, `${q} in ClickHouse`)
    t.same(matchIds(events, q), ids, `${q} in the tail`)
  }
}

t.test('a hex prefix of a trace id with capitals finds a hex id (stored lowercase) and an id that is not hex, kept as sent (explore34 F11)', async (t) => {
  await expectSelected(t, 'ids', [
    { id: 1, trace_id: '3F2504E0-4F89-11D3-9A0C-0305E82C3301' }, // a UUID: not hex, kept as sent
    { id: 2, trace_id: '3f2504e0aa' }, // hex: stored in lowercase
    { id: 3, trace_id: 'beef-cafe' },
  ], {
    'trace_id:3F2504E0*': [1, 2],
    'trace_id:3f2504e0*': [2],
    'trace_id:3F2504E0-*': [1],
    'trace_id:3F2504E0AA': [2],
    'trace_id:beef*': [3],
    '-trace_id:3F2504E0*': [3],
  })
})

t.test('a number of 17 digits in q is also the double its text denotes: found as a JSON number and as that text (explore34 F1)', async (t) => {
  // JSON.stringify writes the JSON number 99.81234567890123 as 99.81234567890122, as Sluice stores it.
  const events: Fixture[] = [
    { id: 1, attrs: JSON.stringify({ x: Number('99.81234567890123') }) },
    { id: 2, attrs: JSON.stringify({ x: '99.81234567890123' }) },
    { id: 3, attrs: JSON.stringify({ x: 99.8123456789012 }) },
    { id: 4, attrs: JSON.stringify({ x: 99.8123456789013 }) },
  ]
  t.equal(JSON.parse(events[0].attrs as string).x, 99.81234567890122)
  await expectSelected(t, 'digits', events, {
    'x:=99.81234567890123': [1, 2],
    'x:=99.81234567890122': [1],
    'x:>=99.81234567890123': [1, 2, 4],
    'x:<=99.81234567890123': [1, 2, 3],
    'x:>99.81234567890123': [4],
    'x:<99.81234567890123': [3],
    'x:=99.8123456789012': [3],
  })
})
