// The q parser: every operator, negation, quoting and escapes, and each error with its position.
import t from 'tap'
import { maxFilterLength, maxFilterTerms, parseFilter } from '../../lib/query/filter-parser.ts'

// The error tap expects: an invalid_query SluiceError (400) pointing at `position`.
function invalidAt (position: number) {
  return { name: 'SluiceError', code: 'invalid_query', status: 400, details: { position } }
}

t.test('terms, operators and negation', async (t) => {
  const cases: Array<[string, unknown[]]> = [
    ['', []],
    ['  \t ', []],
    ['error', [{ kind: 'text', negated: false, position: 0, text: 'error' }]],
    ['  -error  ', [{ kind: 'text', negated: true, position: 2, text: 'error' }]],
    ['err*', [{ kind: 'text', negated: false, position: 0, text: 'err' }]],
    ['a*b', [{ kind: 'text', negated: false, position: 0, text: 'a*b' }]],
    ['err**', [{ kind: 'text', negated: false, position: 0, text: 'err*' }]],
    ['host:api.example.com', [{ kind: 'equals', negated: false, position: 0, field: 'host', value: 'api.example.com' }]],
    ['-method:GET', [{ kind: 'equals', negated: true, position: 0, field: 'method', value: 'GET' }]],
    ['src:::1', [{ kind: 'equals', negated: false, position: 0, field: 'src', value: '::1' }]],
    ['path:/api/*', [{ kind: 'prefix', negated: false, position: 0, field: 'path', prefix: '/api/' }]],
    ['path:/a*b', [{ kind: 'equals', negated: false, position: 0, field: 'path', value: '/a*b' }]],
    ['path:*', [{ kind: 'prefix', negated: false, position: 0, field: 'path', prefix: '' }]],
    ['-user_agent:*', [{ kind: 'prefix', negated: true, position: 0, field: 'user_agent', prefix: '' }]],
    ['filename:/var/log/app.log', [{ kind: 'equals', negated: false, position: 0, field: 'filename', value: '/var/log/app.log' }]],
    ['status:404', [{ kind: 'status', negated: false, position: 0, operator: '=', value: 404 }]],
    ['status:=404', [{ kind: 'status', negated: false, position: 0, operator: '=', value: 404 }]],
    ['status:>=500', [{ kind: 'status', negated: false, position: 0, operator: '>=', value: 500 }]],
    ['status:>499', [{ kind: 'status', negated: false, position: 0, operator: '>', value: 499 }]],
    ['status:<=299', [{ kind: 'status', negated: false, position: 0, operator: '<=', value: 299 }]],
    ['status:<300', [{ kind: 'status', negated: false, position: 0, operator: '<', value: 300 }]],
    ['status:5xx', [{ kind: 'statusClass', negated: false, position: 0, digit: 5 }]],
    ['-status:4XX', [{ kind: 'statusClass', negated: true, position: 0, digit: 4 }]],
    ['status:40*', [{ kind: 'prefix', negated: false, position: 0, field: 'status', prefix: '40' }]],
    ['status:*', [{ kind: 'prefix', negated: false, position: 0, field: 'status', prefix: '' }]],
    ['status:"404"', [{ kind: 'status', negated: false, position: 0, operator: '=', value: 404 }]],
  ]
  for (const [q, expected] of cases) t.same(parseFilter(q), expected, JSON.stringify(q))
})

t.test('several terms keep their positions', async (t) => {
  t.same(parseFilter('host:a  -"disk full" status:5xx x'), [
    { kind: 'equals', negated: false, position: 0, field: 'host', value: 'a' },
    { kind: 'text', negated: true, position: 8, text: 'disk full' },
    { kind: 'statusClass', negated: false, position: 21, digit: 5 },
    { kind: 'text', negated: false, position: 32, text: 'x' },
  ])
})

t.test('quotes and escapes', async (t) => {
  const text = (q: string): unknown => parseFilter(q)[0]
  t.same(text('"disk full"'), { kind: 'text', negated: false, position: 0, text: 'disk full' })
  t.same(text('"say \\"hi\\""'), { kind: 'text', negated: false, position: 0, text: 'say "hi"' })
  t.same(text('"a\\\\b"'), { kind: 'text', negated: false, position: 0, text: 'a\\b' }, '\\\\ is one backslash')
  t.same(text('"C:\\logs\\n"'), { kind: 'text', negated: false, position: 0, text: 'C:\\logs\\n' }, 'other backslashes are literal')
  t.same(text('"10:30"'), { kind: 'text', negated: false, position: 0, text: '10:30' }, 'a quoted colon is text')
  t.same(text('"disk full"*'), { kind: 'text', negated: false, position: 0, text: 'disk full' }, 'a star after a phrase is dropped')
  t.same(text('"x*"'), { kind: 'text', negated: false, position: 0, text: 'x*' }, 'a star inside quotes is literal')
  t.same(text('"tab\there"'), { kind: 'text', negated: false, position: 0, text: 'tab\there' }, 'whitespace inside quotes is kept')
  t.same(text("')"), { kind: 'text', negated: false, position: 0, text: "')" })
  t.same(text('path:"/a b"'), { kind: 'equals', negated: false, position: 0, field: 'path', value: '/a b' })
  t.same(text('path:"/a b"*'), { kind: 'prefix', negated: false, position: 0, field: 'path', prefix: '/a b' })
  t.same(text('path:"/a*"'), { kind: 'equals', negated: false, position: 0, field: 'path', value: '/a*' })
  t.same(text('path:""*'), { kind: 'prefix', negated: false, position: 0, field: 'path', prefix: '' })
  t.same(text('host:\'\\'), { kind: 'equals', negated: false, position: 0, field: 'host', value: "'\\" })
  t.same(text('"bad \ud800"'), { kind: 'text', negated: false, position: 0, text: 'bad \ufffd' }, 'a lone surrogate becomes U+FFFD, as stored')
})

t.test('errors say where', async (t) => {
  const cases: Array<[string, number]> = [
    ['hots:a', 0],
    ['x -Host:a', 3],
    ['C:\\logs', 0],
    [':a', 0],
    ['error "disk full', 6],
    ['"a\\"', 0],
    ['status:abc', 7],
    ['a status:600', 9],
    ['status:>=5xx', 7],
    ['status:6*', 7],
    ['status:', 7],
    ['host:', 5],
    ['host: a', 5],
    ['path:""', 5],
    ['a -', 2],
    ['- a', 0],
    ['""', 0],
    ['*', 0],
    ['-*', 1],
    ['say"hi"', 3],
    ['host:a"b', 6],
    ['"a"b', 3],
    ['path:"/a"x', 9],
    ['level:loud', 6],
    ['level:>=', 6],
    ['level:er*', 6],
    ['level:', 6],
  ]
  for (const [q, position] of cases) {
    t.throws(() => parseFilter(q), invalidAt(position), `${JSON.stringify(q)} fails at ${position}`)
  }
})

t.test('an error message names the problem and the place', async (t) => {
  t.throws(() => parseFilter('hots:a'), { message: /unknown field "hots" at position 0 \(fields: host, path, method, src, status, filename, user_agent/ })
  t.throws(() => parseFilter('status:abc'), { message: /status:abc is not a status at position 7/ })
  t.throws(() => parseFilter('a "b'), { message: /unterminated quote starting at position 2/ })
  t.throws(() => parseFilter('level:loud'), { message: /level:loud is not a level at position 6/ })
})

t.test('level: a name, a synonym, or a comparison in order of severity (issue 15)', async (t) => {
  const levelsOf = (q: string): number[] => (parseFilter(q)[0] as { levels: number[] }).levels
  t.strictSame(parseFilter('level:error'), [{ kind: 'level', negated: false, position: 0, levels: [4] }])
  t.strictSame(levelsOf('level:WARNING'), [3], 'synonyms and any case')
  t.strictSame(levelsOf('level:>=warn'), [3, 4, 5], 'warn or worse')
  t.strictSame(levelsOf('level:>warn'), [4, 5])
  t.strictSame(levelsOf('level:<=debug'), [0, 1])
  t.strictSame(levelsOf('level:<info'), [0, 1])
  t.strictSame(levelsOf('level:*'), [0, 1, 2, 3, 4, 5], 'present')
  t.strictSame(parseFilter('-level:=fatal'), [{ kind: 'level', negated: true, position: 0, levels: [5] }])
})

t.test('limits on length and terms', async (t) => {
  const terms = Array.from({ length: maxFilterTerms }, (_, i) => `t${i}`)
  t.equal(parseFilter(terms.join(' ')).length, maxFilterTerms)
  const tooMany = [...terms, 'extra'].join(' ')
  t.throws(() => parseFilter(tooMany), invalidAt(tooMany.indexOf('extra')))
  t.equal(parseFilter('x'.repeat(maxFilterLength)).length, 1)
  t.throws(() => parseFilter('x'.repeat(maxFilterLength + 1)), invalidAt(maxFilterLength))
})
