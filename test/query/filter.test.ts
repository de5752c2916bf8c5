// The SQL filter and the live-tail matcher agree: for each q, ClickHouse selects exactly the events
// the JS predicate accepts, over a fixed set of awkward events (absent fields, mixed case, Unicode
// that lowerUTF8 and toLowerCase treat differently, LIKE wildcards, quotes, backslashes, injection
// attempts). Some queries also check the exact expected set.
import t from 'tap'
import { createTestDatabase } from '../helpers/clickhouse.ts'
import { migration } from '../../lib/storage/migrations/002_events.ts'
import { migration as levelMigration } from '../../lib/storage/migrations/006_events_level.ts'
import { joinSql, sql } from '../../lib/storage/sql.ts'
import { parseFilter } from '../../lib/query/filter-parser.ts'
import { filterToSql } from '../../lib/query/filter-sql.ts'
import { compileMatcher } from '../../lib/query/filter-match.ts'
import type { EventLike } from '../../lib/query/filter-match.ts'

interface Fixture extends EventLike { id: number }

// Fields not given are absent (NULL). `id` goes into ts, to name the rows.
const fixtures: Fixture[] = [
  { id: 1, host: 'api.example.com', path: '/api/users', method: 'GET', status: 200, src: '10.0.0.1', user_agent: 'curl/8.4.0' },
  { id: 2, host: 'API.example.com', path: '/api/orders', method: 'POST', status: 201, user_agent: 'Mozilla/5.0 (X11; Linux)' },
  { id: 3, path: '/health', method: 'GET', status: 200, level: 'debug' },
  { id: 4, message: 'Connection reset by peer', filename: '/var/log/app.log', level: 'warn' },
  { id: 5, message: 'ERROR: disk full', filename: '/var/log/app.log', level: 'error' },
  { id: 6, message: 'error: Disk Full on /dev/sda1', filename: '/var/log/other.log', level: 'fatal' },
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
  { id: 25, status: 599, path: '/x' },
  { id: 26, status: 100, path: '/' },
  { id: 27, src: '::1', host: 'localhost', status: 302 },
  { id: 28 },
  { id: 29, message: '', path: '', host: '' },
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
  "\"') OR 1=1 --\"", "')", "host:'", 'host:\\', 'host:"\\\\"', 'host:"\'"', "\"'; DROP TABLE events; --\"",
  'host:x)OR(1=1', '"%"', '"_"', 'host:""*', '-"e"', 'e -e',
  'level:error', 'level:ERROR', 'level:err', 'level:>=warn', '-level:>=warn', 'level:>error', 'level:<info', 'level:<=info',
  'level:=info', 'level:*', '-level:*', 'level:warning error', 'level:>fatal', 'level:<trace',
]

// Queries whose result is also known by hand (ids).
const expected: Record<string, number[]> = {
  'level:error': [5],
  'level:err': [5],
  'level:>=warn': [4, 5, 6],
  '-level:>=warn': fixtures.map((f) => f.id).filter((id) => ![4, 5, 6].includes(id)),
  'level:<=info': [3, 11],
  'level:*': [3, 4, 5, 6, 11],
  'level:>fatal': [],
  'host:api.example.com': [1],
  '-host:api.example.com': fixtures.map((f) => f.id).filter((id) => id !== 1),
  'host:*': [1, 2, 13, 24, 27, 29],
  '-path:*': [4, 5, 6, 11, 12, 13, 15, 16, 17, 18, 19, 20, 21, 22, 23, 27, 28, 31],
  'path:/100%_*': [7],
  'path:/a_b': [9],
  'path:"/a b"': [10],
  'status:5xx': [9, 10, 25],
  '-status:5xx': fixtures.map((f) => f.id).filter((id) => ![9, 10, 25].includes(id)),
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
}

t.test('the SQL filter selects exactly what the matcher accepts', async (t) => {
  const { clickhouse } = await createTestDatabase(t)
  for (const statement of [...migration.statements, ...levelMigration.statements]) await clickhouse.command(statement)
  const rows = fixtures.map((f) => sql`('org', 'stream', ${f.id}, 0, ${f.host ?? null}, ${f.path ?? null}, ${f.method ?? null},
    ${f.status ?? null}, NULL, NULL, ${f.src ?? null}, ${f.user_agent ?? null}, ${f.message ?? null}, ${f.filename ?? null}, ${f.level ?? null}, '{}')`)
  await clickhouse.command(sql`INSERT INTO events (org_id, stream, ts, received_at, host, path, method, status, rt, bytes,
    src, user_agent, message, filename, level, attrs) VALUES ${joinSql(rows, ', ')}`)

  for (const q of queries) {
    const nodes = parseFilter(q)
    const selected = await clickhouse.query<{ ts: number }>(sql`SELECT ts FROM events WHERE org_id = 'org' AND ${filterToSql(nodes)} ORDER BY ts`)
    const sqlIds = selected.map((r) => r.ts)
    const matches = compileMatcher(nodes)
    const jsIds = fixtures.filter((f) => matches(f)).map((f) => f.id)
    t.same(jsIds, sqlIds, `${JSON.stringify(q)}: matcher agrees with ClickHouse`)
    const known = expected[q]
    if (known !== undefined) t.same(sqlIds, known, `${JSON.stringify(q)} selects the expected events`)
  }
  const [{ n }] = await clickhouse.query<{ n: number }>('SELECT count() AS n FROM events')
  t.equal(n, fixtures.length, 'the injection attempts changed nothing')
})

t.test('an empty filter is the constant 1', async (t) => {
  t.equal(filterToSql([]).text, '1')
  t.equal(compileMatcher([])({}), true)
})
