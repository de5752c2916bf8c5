// The regular expressions of q on the tail's side: what the automaton matches (its agreement with
// ClickHouse is test/query/filter.test.ts's), and that it runs in linear time on patterns that
// make a backtracking engine take exponential or polynomial time.
import t from 'tap'
import { matchesRegex, maxRegexStates, parseRegex, RegexStepLimit, regexStepsLeft, setRegexStepLimit } from '../../lib/query/filter-regex.ts'

const matches = (pattern: string, text: string): boolean => matchesRegex(parseRegex(pattern, 0), text)

t.test('what matches: a search anywhere in the text, by code point', async (t) => {
  const cases: Array<[string, string, boolean]> = [
    ['b', 'abc', true],
    ['^b', 'abc', false],
    ['c$', 'abc', true],
    ['a$', 'a\n', false], // $ is the end of the text only
    ['^$', '', true],
    ['^$', '\n', false],
    ['a.b', 'a\nb', true], // . matches a newline
    ['^.$', 'é', true],
    ['^.$', '😀', true], // one code point, two UTF-16 units
    ['^..$', '😀', false],
    ['^[😀é]+$', 'é😀', true],
    ['^\\x{1F600}$', '😀', true],
    ['\\d+', 'ab12', true],
    ['^\\d+$', '１２', false], // \d is ASCII
    ['\\s', '\u00a0', false], // \s is RE2's: no Unicode spaces
    ['\\s', '\v', false],
    ['\\s', '\f', true],
    ['\\S', '\v', true],
    ['\\w', 'é', false],
    ['[^a]', '\n', true],
    ['^a{2,3}$', 'aaaa', false],
    ['^a{2,3}$', 'aaa', true],
    ['^a{2,}$', 'aaaaaa', true],
    ['^(ab|c)+?$', 'abcab', true],
    ['^(a|)b$', 'b', true],
    ['^(?:)$', '', true],
    ['x*', '', true],
    ['a^b', 'a^b', false],
    ['a\\^b', 'a^b', true],
    ['[\\]]', ']', true],
    ['[a-]', '-', true],
    ['Error', 'error', false], // case-sensitive
  ]
  for (const [pattern, text, expected] of cases) t.equal(matches(pattern, text), expected, `${JSON.stringify(pattern)} on ${JSON.stringify(text)}`)
})

t.test('linear time on patterns that make backtracking explode', async (t) => {
  const text = 'a'.repeat(50_000) + 'c'
  for (const pattern of ['(a|a)*b', '(a*)*b', '(a|aa)+$x', '.*.*.*.*b', '(.*a){20}b', '^(a+)+b', '(?:a?){30}a{30}b']) {
    const started = performance.now()
    t.equal(matches(pattern, text), false, pattern)
    const ms = performance.now() - started
    // A backtracking engine takes years on these; the automaton a few ms per pattern (generous
    // bound for a loaded machine).
    t.ok(ms < 3000, `${pattern} on 50,001 characters in ${ms.toFixed(0)} ms`)
  }
})

t.test('size limits: counted repetitions expanded', async (t) => {
  t.throws(() => parseRegex('(.*a){1000}', 7), { code: 'invalid_query', details: { position: 7 }, message: new RegExp(`more than ${maxRegexStates} states`) })
  t.doesNotThrow(() => parseRegex('a{1000}', 0))
})

t.test('setRegexStepLimit stops the automaton past its steps (the tail\'s budget); Infinity lifts it', async (t) => {
  const regex = parseRegex('[^z]{99}z', 0)
  const text = `${'a'.repeat(500)}z`
  setRegexStepLimit(1000)
  let thrown: unknown
  try { matchesRegex(regex, text) } catch (err) { thrown = err }
  t.ok(thrown instanceof RegexStepLimit, 'past the limit: RegexStepLimit')
  t.ok(regexStepsLeft() < 0, 'the steps were spent')
  setRegexStepLimit(Infinity)
  t.equal(matchesRegex(regex, text), true)
  setRegexStepLimit(1_000_000)
  t.equal(matchesRegex(regex, text), true, 'within the limit: the same answer')
  t.ok(regexStepsLeft() > 0 && regexStepsLeft() < 1_000_000, `and the steps it took are counted (${1_000_000 - regexStepsLeft()})`)
  setRegexStepLimit(Infinity)
})
