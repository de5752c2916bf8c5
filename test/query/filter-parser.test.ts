// The q parser: every operator, precedence, negation, quoting and escapes, attributes, numbers,
// the regular expression subset, and each error with its position.
import t from 'tap'
import { filterColumns, maxFilterDepth, maxFilterLength, maxFilterTerms, parseFilter, readsAttributes } from '../../lib/query/filter-parser.ts'
import type { FieldRef, FilterNode } from '../../lib/query/filter-parser.ts'
import { maxRegexLength } from '../../lib/query/filter-regex.ts'

// The error tap expects: an invalid_query SluiceError (400) pointing at `position`.
function invalidAt (position: number) {
  return { name: 'SluiceError', code: 'invalid_query', status: 400, details: { position } }
}

const col = (name: string): FieldRef => {
  const c = filterColumns.find((f) => f.name === name)
  if (c === undefined) throw new Error(`no column ${name}`)
  return c
}
const attr = (path: string): FieldRef => ({ kind: 'attribute', path })
const num = (value: number) => ({ value })

// A compact picture of a tree, to state precedence: (a & b), (a | b), !a, and terms by their text.
function shape (node: FilterNode | null): string {
  if (node === null) return '∅'
  switch (node.kind) {
    case 'and': return `(${node.children.map(shape).join(' & ')})`
    case 'or': return `(${node.children.map(shape).join(' | ')})`
    case 'not': return `!${shape(node.child)}`
    case 'text': return node.text
    case 'equals': return `${node.field.kind === 'column' ? node.field.name : '@' + node.field.path}=${node.value}`
    default: return node.kind
  }
}

t.test('terms, operators and negation', async (t) => {
  const cases: Array<[string, unknown]> = [
    ['', null],
    ['  \t ', null],
    ['*', null],
    [' * ', null],
    ['error', { kind: 'text', position: 0, text: 'error' }],
    ['  -error  ', { kind: 'not', position: 2, child: { kind: 'text', position: 3, text: 'error' } }],
    ['err*', { kind: 'text', position: 0, text: 'err' }],
    ['a*b', { kind: 'text', position: 0, text: 'a*b' }],
    ['err**', { kind: 'text', position: 0, text: 'err*' }],
    ['host:api.example.com', { kind: 'equals', position: 0, field: col('host'), value: 'api.example.com' }],
    ['-method:GET', { kind: 'not', position: 0, child: { kind: 'equals', position: 1, field: col('method'), value: 'GET' } }],
    ['src:::1', { kind: 'equals', position: 0, field: col('src'), value: '::1' }],
    ['path:/api/*', { kind: 'prefix', position: 0, field: col('path'), prefix: '/api/' }],
    ['path:/a*b', { kind: 'equals', position: 0, field: col('path'), value: '/a*b' }],
    ['path:*', { kind: 'present', position: 0, field: col('path') }],
    ['message:"disk full"', { kind: 'equals', position: 0, field: col('message'), value: 'disk full' }],
    ['filename:/var/log/app.log', { kind: 'equals', position: 0, field: col('filename'), value: '/var/log/app.log' }],
    ['status:404', { kind: 'compare', position: 0, field: col('status'), operator: '=', value: num(404) }],
    ['status:=404', { kind: 'compare', position: 0, field: col('status'), operator: '=', value: num(404) }],
    ['status:>=500', { kind: 'compare', position: 0, field: col('status'), operator: '>=', value: num(500) }],
    ['status:<300', { kind: 'compare', position: 0, field: col('status'), operator: '<', value: num(300) }],
    // With an operator any number bounds a status, as on the other numeric columns (explore27b F3).
    ['status:<600', { kind: 'compare', position: 0, field: col('status'), operator: '<', value: num(600) }],
    ['status:>=0', { kind: 'compare', position: 0, field: col('status'), operator: '>=', value: num(0) }],
    ['status:>=1e2', { kind: 'compare', position: 0, field: col('status'), operator: '>=', value: num(100) }],
    ['status:5xx', { kind: 'statusClass', position: 0, digit: 5 }],
    ['status:4XX', { kind: 'statusClass', position: 0, digit: 4 }],
    ['status:40*', { kind: 'prefix', position: 0, field: col('status'), prefix: '40' }],
    ['status:*', { kind: 'present', position: 0, field: col('status') }],
    ['status:"404"', { kind: 'compare', position: 0, field: col('status'), operator: '=', value: num(404) }],
    ['rt:>0.5', { kind: 'compare', position: 0, field: col('rt'), operator: '>', value: num(0.5) }],
    ['bytes:1024', { kind: 'compare', position: 0, field: col('bytes'), operator: '=', value: num(1024) }],
    ['bytes:10*', { kind: 'prefix', position: 0, field: col('bytes'), prefix: '10' }],
    ['ts:>=1763700000000', { kind: 'compare', position: 0, field: col('ts'), operator: '>=', value: num(1763700000000) }],
  ]
  for (const [q, expected] of cases) t.match(parseFilter(q), expected, JSON.stringify(q))
})

t.test('attributes: any other name, a dotted path, attrs.<name>, a quoted name', async (t) => {
  t.match(parseFilter('user.id:42'), { kind: 'equals', field: attr('user.id'), value: '42' })
  t.match(parseFilter('user_id:>=10'), { kind: 'compare', field: attr('user_id'), operator: '>=', value: num(10) })
  t.match(parseFilter('order.total:<=129.5'), { kind: 'compare', field: attr('order.total'), operator: '<=', value: num(129.5) })
  t.match(parseFilter('k8s.io/app-name@v2:web'), { kind: 'equals', field: attr('k8s.io/app-name@v2'), value: 'web' })
  t.match(parseFilter('attrs.host:inner'), { kind: 'equals', field: attr('host'), value: 'inner' }, 'attrs. forces the attribute')
  t.match(parseFilter('hostname:web-1'), { kind: 'equals', field: col('host'), value: 'web-1' }, 'a field\'s alias is the field')
  t.match(parseFilter('service.name:checkout'), { kind: 'equals', field: col('service') })
  t.match(parseFilter('attrs.hostname:x'), { kind: 'equals', field: attr('hostname') }, 'attrs. reaches a key an alias shadows')
  t.match(parseFilter('attrs.attrs.x:1'), { kind: 'equals', field: attr('attrs.x') })
  t.match(parseFilter('"odd key: yes":*'), { kind: 'present', field: attr('odd key: yes') }, 'a quoted name takes any characters')
  t.match(parseFilter('"host":a'), { kind: 'equals', field: col('host') }, 'a quoted column name is the column')
  t.match(parseFilter('x:"a b"*'), { kind: 'prefix', field: attr('x'), prefix: 'a b' })
  t.match(parseFilter('x:">5"'), { kind: 'equals', field: attr('x'), value: '>5' }, 'quoted text is never a comparison')
  t.match(parseFilter('naïve:1'), { kind: 'equals', field: attr('naïve') }, 'letters are Unicode letters')
  t.match(parseFilter('C:\\logs'), { kind: 'equals', field: attr('C'), value: '\\logs' }, 'an unknown name is no longer an error')
  t.equal(readsAttributes(parseFilter('host:a OR NOT (x:1 b)')), true)
  t.equal(readsAttributes(parseFilter('host:a OR NOT (status:5xx b)')), false)
  t.equal(readsAttributes(null), false)
  for (const c of filterColumns) t.match(parseFilter(`${c.name}:*`), { kind: 'present', field: { kind: 'column', name: c.name } }, `${c.name} is a column`)
})

t.test('precedence: NOT over AND over OR; keywords upper case only', async (t) => {
  const cases: Array<[string, string]> = [
    ['a b', '(a & b)'],
    ['a AND b', '(a & b)'],
    ['a OR b', '(a | b)'],
    ['a b OR c', '((a & b) | c)'],
    ['a OR b c', '(a | (b & c))'],
    ['a AND b OR c AND d', '((a & b) | (c & d))'],
    ['NOT a b', '(!a & b)'],
    ['-a OR b', '(!a | b)'],
    ['NOT (a OR b)', '!(a | b)'],
    ['-(a OR b) c', '(!(a | b) & c)'],
    ['(a OR b) (c OR d)', '((a | b) & (c | d))'],
    ['a OR b OR c', '(a | b | c)'],
    ['NOT NOT a', '!!a'],
    ['--a', '!!a'],
    ['a and b', '(a & and & b)'],
    ['a or b', '(a & or & b)'],
    ['a Or b', '(a & Or & b)'],
    ['ORACLE ANDROID NOTE', '(ORACLE & ANDROID & NOTE)'],
    ['"OR"', 'OR'],
    ['(a)', 'a'],
    ['((a))', 'a'],
    ['a OR(b)', '(a | b)'],
    ['NOT(a)', '!a'],
    ['host:a OR host:b', '(host=a | host=b)'],
    ['x:1 OR attrs.host:b', '(@x=1 | @host=b)'],
  ]
  for (const [q, expected] of cases) t.equal(shape(parseFilter(q)), expected, JSON.stringify(q))
  t.match(parseFilter('a OR -b'), { kind: 'or', position: 0, children: [{ position: 0 }, { kind: 'not', position: 5, child: { position: 6 } }] })
})

t.test('quotes and escapes', async (t) => {
  const text = (q: string): unknown => parseFilter(q)
  t.same(text('"disk full"'), { kind: 'text', position: 0, text: 'disk full' })
  t.same(text('"say \\"hi\\""'), { kind: 'text', position: 0, text: 'say "hi"' })
  t.same(text('"a\\\\b"'), { kind: 'text', position: 0, text: 'a\\b' }, '\\\\ is one backslash')
  t.same(text('"C:\\logs\\n"'), { kind: 'text', position: 0, text: 'C:\\logs\\n' }, 'other backslashes are literal')
  t.same(text('"10:30"'), { kind: 'text', position: 0, text: '10:30' }, 'a quoted colon is text')
  t.same(text('"disk full"*'), { kind: 'text', position: 0, text: 'disk full' }, 'a star after a phrase is dropped')
  t.same(text('"x*"'), { kind: 'text', position: 0, text: 'x*' }, 'a star inside quotes is literal')
  t.same(text('"tab\there"'), { kind: 'text', position: 0, text: 'tab\there' }, 'whitespace inside quotes is kept')
  t.same(text('"a (b)"'), { kind: 'text', position: 0, text: 'a (b)' }, 'parentheses inside quotes are text')
})

t.test('regular expressions: the accepted subset, written for RE2', async (t) => {
  const re2 = (pattern: string): string => {
    const node = parseFilter(`message:~${JSON.stringify(pattern)}`)
    if (node === null || node.kind !== 'regex') throw new Error('not a regex term')
    return node.regex.re2
  }
  t.equal(re2('^/api/v[0-9]+$'), '^/api/v[\\x{30}-\\x{39}]+$')
  t.equal(re2('a.b'), 'a[\\x{0}-\\x{10FFFF}]b', '. is every code point, newline included')
  t.equal(re2('\\s'), '[\\x{9}-\\x{A}\\x{C}-\\x{D}\\x{20}]', '\\s is RE2\'s, without \\v')
  t.equal(re2('(a|b)+?c{2,3}'), '(?:a|b)+c{2,3}', 'groups do not capture; lazy is greedy for a yes/no match')
  t.equal(re2('\\d'), '[\\x{30}-\\x{39}]')
  t.equal(re2('é\\.x'), '\\x{E9}\\.x')
  t.match(parseFilter('message:~^err'), { kind: 'regex', regex: { source: '^err' } }, 'a bare pattern ends at whitespace')
  t.match(parseFilter('status:~"^5"'), { kind: 'regex', field: col('status') }, 'integer columns match their digits')
  t.match(parseFilter('user.id:~"\\d+"'), { kind: 'regex', field: attr('user.id'), regex: { source: '\\d+' } }, 'a backslash in a phrase is literal')
  t.match(parseFilter('level:~"^e"'), { kind: 'regex', field: col('level') })
  const refused: Array<[string, number]> = [
    ['(a)\\1', 3], ['(?=a)', 0], ['(?!a)', 0], ['(?<=a)', 0], ['(?<n>a)', 0], ['(?P<n>a)', 0], ['(?i)a', 0], ['\\b', 0], ['\\B', 0],
    ['\\p{L}', 0], ['\\A', 0], ['\\z', 0], ['\\Q.\\E', 0], ['a**', 2], ['a{2}{3}', 4], ['*a', 0], ['a|*', 2], ['{', 0], ['a{x}', 1], ['a}', 1],
    ['[[:alpha:]]', 1], ['[]a]', 1], ['[z-a]', 1], ['[a', 0], ['(a', 0], ['a)', 1], ['^*', 1], ['a{1001}', 1], ['a{3,2}', 1],
    ['\\', 0], ['\\x{110000}', 0], ['\\xZZ', 0], ['[^\\x{0}-\\x{10FFFF}]', 0],
  ]
  for (const [pattern, offset] of refused) {
    const q = `m:~${JSON.stringify(pattern)}`
    t.throws(() => parseFilter(q), invalidAt(4 + offset), `${pattern} is refused at ${offset}`)
  }
  t.throws(() => parseFilter('m:~"(a{40}){40}"'), invalidAt(4), 'nested counts past RE2\'s 1000')
  t.throws(() => parseFilter('m:~"\\\\.\\\\.(?=x)"'), invalidAt(10), 'a position in q, past the escapes of the quoted pattern')
  t.throws(() => parseFilter('m:~\\.(?=x)'), invalidAt(5), 'a bare pattern')
  t.throws(() => parseFilter(`m:~"${'a'.repeat(maxRegexLength + 1)}"`), invalidAt(4))
  t.throws(() => parseFilter('m:~""'), invalidAt(4), 'an empty pattern')
  t.throws(() => parseFilter('rt:~"1"'), invalidAt(3), 'a float column has no text to match')
})

t.test('numbers: at most 19 digits and a scale within 10^±18, the same in SQL and JS', async (t) => {
  t.match(parseFilter('x:>-1.5e2'), { value: { value: -150, mantissa: 15, scale: 1, negative: true } })
  t.match(parseFilter('x:<=0.001'), { value: { value: 0.001, mantissa: 1, scale: -3 } })
  t.match(parseFilter('x:=123456789012345'), { value: { value: 123456789012345 } })
  // A double as JavaScript prints it: 16 digits, rounded to a double first (an ulp from the text).
  const printed = parseFilter('x:>99.81234567890123') as { value: { value: number, scale: number } }
  t.equal(printed.value.scale, -14)
  t.ok(Math.abs(printed.value.value - 99.81234567890122) <= 2 * Number.EPSILON * 100, 'within two ulps of the text')
  t.match(parseFilter('x:<0.30000000000000004'), { value: { scale: -17 } })
  const errors: Array<[string, number]> = [
    ['x:>abc', 3], ['x:>', 3], ['x:>=', 4], ['x:=12345678901234567890', 3], ['x:>1e19', 3], ['x:>1e-19', 3], ['x:>0x10', 3], ['x:>+5', 3],
    ['x:>inf', 3], ['x:>1.', 3], ['x:>.5', 3], ['bytes:abc', 6], ['rt:fast', 3], ['ts:now', 3], ['rt:1*', 3], ['bytes:a*', 6],
    // An operator then a star: no prefix that starts with the operator (explore34 F14).
    ['x:>abc*', 2], ['user.id:>=4*', 8], ['x:>*', 2], ['x:=4*', 2], ['bytes:>=*', 6],
  ]
  for (const [q, position] of errors) t.throws(() => parseFilter(q), invalidAt(position), `${q} fails at ${position}`)
  t.throws(() => parseFilter('x:>abc'), { message: /"abc" is not a number at position 3/ })
  t.match(parseFilter('x:">=4"*'), { kind: 'prefix', prefix: '>=4' }, 'quoted, it is that prefix')
})

t.test('errors say where', async (t) => {
  const cases: Array<[string, number]> = [
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
    ['a -', 2],
    ['- a', 0],
    ['""', 0],
    ['* *', 0],
    ['-*', 1],
    ['error *', 6],
    ['say"hi"', 3],
    ['host:a"b', 6],
    ['"a"b', 3],
    ['path:"/a"x', 9],
    ['level:loud', 6],
    ['level:>=', 6],
    ['level:x*', 6],
    ['level:', 6],
    ['"":a', 0],
    ['attrs.:a', 0],
    ['x ' + 'k'.repeat(257) + ':a', 2],
    ['a OR', 2],
    ['OR a', 0],
    ['a AND', 2],
    ['AND a', 0],
    ['a AND OR b', 2],
    ['a OR OR b', 2],
    ['NOT', 0],
    ['a NOT', 2],
    ['(a', 0],
    ['a (b', 2],
    ['a)', 1],
    ['(a))', 3],
    [')', 0],
    ['()', 0],
    ['( )', 0],
    ['-(', 1],
    ['path:/a(b)', 9],
    ["')", 1],
  ]
  for (const [q, position] of cases) {
    t.throws(() => parseFilter(q), invalidAt(position), `${JSON.stringify(q)} fails at ${position}`)
  }
})

t.test('an error message names the problem and the place', async (t) => {
  t.throws(() => parseFilter('status:abc'), { message: /status:abc is not a status at position 7/ })
  t.throws(() => parseFilter('a "b'), { message: /unterminated quote starting at position 2/ })
  t.throws(() => parseFilter('level:loud'), { message: /level:loud is not a level at position 6/ })
  t.throws(() => parseFilter('a OR'), { message: /nothing after OR at position 2/ })
  t.throws(() => parseFilter('(a'), { message: /unclosed "\(" at position 0/ })
  t.throws(() => parseFilter('m:~"(?=a)"'), { message: /only \(\.\.\.\) and \(\?:\.\.\.\) groups are supported .* at position 4/ })
})

t.test('level: a name, a synonym, or a comparison in order of severity (issue 15)', async (t) => {
  const levelsOf = (q: string): readonly number[] => (parseFilter(q) as unknown as { levels: number[] }).levels
  t.strictSame(parseFilter('level:error'), { kind: 'level', position: 0, levels: [4] })
  t.strictSame(levelsOf('level:WARNING'), [3], 'synonyms and any case')
  t.strictSame(levelsOf('level:>=warn'), [3, 4, 5], 'warn or worse')
  t.strictSame(levelsOf('level:>warn'), [4, 5])
  t.strictSame(levelsOf('level:<=debug'), [0, 1])
  t.strictSame(levelsOf('level:<info'), [0, 1])
  t.match(parseFilter('level:*'), { kind: 'present', field: col('level') }, 'present')
  t.strictSame(levelsOf('level:er*'), [4], 'a prefix of a name')
  t.strictSame(levelsOf('level:E*'), [4], 'in any case')
  t.strictSame(levelsOf('level:t*'), [0], 'trace')
  t.strictSame(levelsOf('level:warn*'), [3])
  t.match(parseFilter('-level:=fatal'), { kind: 'not', child: { kind: 'level', levels: [5] } })
})

t.test('limits on length, terms and depth', async (t) => {
  const terms = Array.from({ length: maxFilterTerms }, (_, i) => `t${i}`)
  t.equal((parseFilter(terms.join(' ')) as unknown as { children: unknown[] }).children.length, maxFilterTerms)
  const tooMany = [...terms, 'extra'].join(' ')
  t.throws(() => parseFilter(tooMany), invalidAt(tooMany.indexOf('extra')))
  const tooManyOr = [...terms, 'extra'].join(' OR ')
  t.throws(() => parseFilter(tooManyOr), invalidAt(tooManyOr.indexOf('extra')), 'terms count under OR too')
  t.match(parseFilter('x'.repeat(maxFilterLength)), { kind: 'text' })
  t.throws(() => parseFilter('x'.repeat(maxFilterLength + 1)), invalidAt(maxFilterLength))
  const deep = '('.repeat(maxFilterDepth) + 'a' + ')'.repeat(maxFilterDepth)
  t.equal(shape(parseFilter(deep)), 'a')
  const tooDeep = '('.repeat(maxFilterDepth + 1) + 'a' + ')'.repeat(maxFilterDepth + 1)
  t.throws(() => parseFilter(tooDeep), invalidAt(maxFilterDepth))
  const nots = 'NOT '.repeat(maxFilterDepth + 1) + 'a'
  t.throws(() => parseFilter(nots), invalidAt(4 * maxFilterDepth), 'negations count as nesting')
})
