// The page's own logic that needs no browser: the SSE parser (the tail is read with fetch, not
// EventSource) and the q-term editing behind "click a row to filter". The modules are plain
// browser JS, loaded here by URL.
import t from 'tap'
import fc from 'fast-check'
import { parseFilter } from '../../lib/query/filter-parser.ts'
import { planStats } from '../../lib/query/stats-plan.ts'

const publicUrl = new URL('../../lib/dashboard/public/', import.meta.url)
const { SseParser } = await import(new URL('api.js', publicUrl).href) as { SseParser: new (cb: (type: string, data: string) => void) => { push (text: string): void } }
const format = await import(new URL('format.js', publicUrl).href) as {
  quoteValue (v: unknown): string
  quoteField (field: string): string
  filterTerm (field: string, v: unknown): string
  splitTerms (q: string): string[]
  addTerms (q: string, terms: string[]): string
  zoneLabel (ms?: number): string
}
const urlState = await import(new URL('url-state.js', publicUrl).href) as {
  formatRange (from: number, to: number): string
  writeColumns (columns: readonly string[]): string
  readColumns (text: string): string[]
  resolveWindow (state: { range: string, custom?: { from: number, to: number }, q?: string, by?: string }, now: number): { from: number, to: number } | null
}
const query = await import(new URL('explore-query.js', publicUrl).href) as {
  toggleFilter (q: string, name: string, value: string, options?: { exclude?: boolean }): string
  filterState (q: string, name: string, value: string): 'for' | 'against' | null
  setFilter (q: string, name: string, value: string, exclude: boolean): string
  excludedTerms (q: string): Array<{ name: string, label: string, term: string }>
  dropTerm (q: string, term: string): string
  wordAt (q: string, caret: number): { start: number, end: number, negated: boolean, field: string | null, text: string }
  emptySearchHints (q: string): Array<{ text: string, q: string }>
}

function parse (chunks: string[]): Array<[string, string]> {
  const out: Array<[string, string]> = []
  const parser = new SseParser((type, data) => out.push([type, data]))
  for (const chunk of chunks) parser.push(chunk)
  return out
}

t.test('SSE: events, default type, multi-line data, comments, field without value', async (t) => {
  const text = ': heartbeat\n\nevent: event\ndata: {"a":1}\n\nevent: stats\ndata:{"t":1}\n\n' +
    'data: line 1\ndata: line 2\nid: 7\nretry: 100\n\nevent: empty\n\ndata\n\nevent: dropped\ndata: {"count": 3}\n\n'
  t.same(parse([text]), [
    ['event', '{"a":1}'],
    ['stats', '{"t":1}'],
    ['message', 'line 1\nline 2'],
    ['message', ''],
    ['dropped', '{"count": 3}'],
  ])
})

t.test('SSE: the same answer however the stream is cut, with LF, CRLF or CR line ends', async (t) => {
  const lines = ['event: event', 'data: {"path":"/ä","message":"x: y"}', '', ': ping', '', 'event: stats', 'data: {"count":2}', '', '']
  const expected = [['event', '{"path":"/ä","message":"x: y"}'], ['stats', '{"count":2}']]
  for (const eol of ['\n', '\r\n', '\r']) {
    const text = lines.join(eol)
    for (let cut = 0; cut <= text.length; cut++) {
      t.same(parse([text.slice(0, cut), text.slice(cut)]), expected, `${JSON.stringify(eol)} cut at ${cut}`)
    }
    t.same(parse([...text]), expected, `${JSON.stringify(eol)} one character at a time`)
  }
})

t.test('SSE: an event without its blank line is not dispatched', async (t) => {
  t.same(parse(['event: event\ndata: {}\n']), [])
})

t.test('filter terms: quoting follows the parser', async (t) => {
  t.equal(format.quoteValue('/api/users'), '/api/users')
  t.equal(format.quoteValue('Mozilla/5.0 (X11)'), '"Mozilla/5.0 (X11)"')
  t.equal(format.quoteValue('say "hi"'), '"say \\"hi\\""')
  t.equal(format.quoteValue('C:\\logs\\a.log'), '"C:\\\\logs\\\\a.log"')
  t.equal(format.quoteValue('/a*'), '"/a*"', 'a literal star is quoted, not a prefix match')
  t.equal(format.quoteValue(''), '""')
  t.equal(format.filterTerm('status', 404), 'status:404')
  t.equal(format.filterTerm('host', null), '-host:*', 'absent values filter on absence')
  t.equal(format.quoteValue('(none)'), '"(none)"', 'parentheses group when bare')
  t.equal(format.quoteValue('>5'), '">5"', 'a leading > would compare')
  t.equal(format.quoteValue('~x'), '"~x"', 'a leading ~ would be a regex')
  t.equal(format.filterTerm('user.id', 42), 'user.id:42')
  t.equal(format.filterTerm('odd key', 'v'), '"odd key":v')
  t.equal(format.filterTerm('-x', null), '-"-x":*')
  // Whatever the field and the (non-empty) value, the term the page writes is parsed back to exactly them.
  fc.assert(fc.property(fc.string({ minLength: 1, maxLength: 8 }), fc.string({ minLength: 1, maxLength: 8 }), (field, value) => {
    fc.pre(field.length <= 256 && field !== 'attrs.' && !field.startsWith('attrs.') && field.isWellFormed() && value.isWellFormed() && !/[\r\n]/.test(value))
    const node = parseFilter(format.filterTerm(`attrs.${field}`, value)) as unknown as { kind: string, field: { path: string }, value?: string }
    return node.field.path === field && node.kind === 'equals' && node.value === value
  }), { numRuns: 2000, seed: 22 })
})

t.test('filter terms: a value with a line break is filtered for by its first line', async (t) => {
  // The search box (an <input>) drops line breaks: an exact term could not be run again from it.
  const term = format.filterTerm('err.stack', 'Error: "x" at C:\\a\n    at foo\r\n')
  t.equal(term, 'err.stack:"Error: \\"x\\" at C:\\\\a"*')
  t.match(parseFilter(term), { kind: 'prefix', prefix: 'Error: "x" at C:\\a' })
})

t.test('sidebar clicks: for, against, dropped; NOT and OR read as q reads them', async (t) => {
  t.equal(query.toggleFilter('', 'service', 'cart'), 'service:cart')
  t.equal(query.toggleFilter('service:cart', 'service', 'cart'), '-service:cart')
  t.equal(query.toggleFilter('-service:cart', 'service', 'cart'), '')
  t.equal(query.toggleFilter('level:error', 'service', 'cart', { exclude: true }), 'level:error -service:cart')
  t.equal(query.filterState('NOT service:cart', 'service', 'cart'), 'against', 'NOT is a negation')
  t.equal(query.toggleFilter('NOT service:cart level:error', 'service', 'cart'), 'level:error', 'a third click drops NOT and its term')
  t.equal(query.toggleFilter('service:cart AND level:error', 'service', 'cart'), '-service:cart AND level:error')
  t.equal(query.toggleFilter('-service:cart AND level:error', 'service', 'cart'), 'level:error', 'with the AND that joined it')
  t.equal(query.toggleFilter('level:error AND -service:cart', 'service', 'cart'), 'level:error')
  t.equal(query.filterState('NOT service:cart OR level:error', 'service', 'cart'), null, 'a term in a branch of an OR is no condition of the query')
  t.equal(query.toggleFilter('NOT service:cart OR level:error', 'service', 'cart'), '(NOT service:cart OR level:error) service:cart')
  t.equal(query.filterState('(service:cart OR x) y', 'service', 'cart'), null)
  const excluded = query.excludedTerms('-service:cart NOT service:"a b" service:auth -"odd key":x -stack:"Error: \\"boom\\""* -word')
  t.same(excluded, [
    { name: 'service', label: 'cart', term: '-service:cart' },
    { name: 'service', label: 'a b', term: 'NOT service:"a b"' },
    { name: 'odd key', label: 'x', term: '-"odd key":x' },
    { name: 'stack', label: 'Error: "boom"…', term: '-stack:"Error: \\"boom\\""*' },
  ])
  t.same(query.excludedTerms('-service:cart OR y'), [], 'not under an OR')
  t.equal(query.dropTerm('a NOT service:"a b" AND b', 'NOT service:"a b"'), 'a b')
  t.equal(query.dropTerm('-stack:"x"* level:error', '-stack:"x"*'), 'level:error')
  // A row's + and − set the term: the same one twice changes nothing, the other kind turns it around.
  t.equal(query.setFilter('service:auth', 'service', 'auth', false), 'service:auth')
  t.equal(query.setFilter('service:auth', 'service', 'auth', true), '-service:auth')
  t.equal(query.setFilter('-service:auth x', 'service', 'auth', true), '-service:auth x')
  t.equal(query.setFilter('NOT service:auth', 'service', 'auth', false), 'service:auth')
  t.equal(query.setFilter('a OR b', 'service', 'auth', false), '(a OR b) service:auth')
  for (const q of ['', 'service:cart', '-service:cart', 'NOT service:cart', 'a AND -service:cart AND b']) {
    const once = query.toggleFilter(q, 'service', 'cart')
    t.doesNotThrow(() => parseFilter(once === '' ? '*' : once), `${q} -> ${once} parses`)
  }
})

t.test('the word under the caret, for suggestions, reads quotes as the parser does', async (t) => {
  const at = (q: string, caret = q.length): unknown => query.wordAt(q, caret)
  t.same(at('serv'), { start: 0, end: 4, negated: false, field: null, text: 'serv' }, 'a field name being typed')
  t.same(at('level:error serv'), { start: 12, end: 16, negated: false, field: null, text: 'serv' })
  t.same(at('service:ch'), { start: 0, end: 10, negated: false, field: 'service', text: 'ch' })
  t.same(at('-service:ch'), { start: 1, end: 11, negated: true, field: 'service', text: 'ch' })
  // explore28a L2: a quoted name with a space was split at it, and taken for a phrase.
  t.same(at('"odd key":ev'), { start: 0, end: 12, negated: false, field: '"odd key"', text: 'ev' }, 'a quoted field name')
  t.same(at('x -"odd key":'), { start: 3, end: 13, negated: true, field: '"odd key"', text: '' })
  t.same(at('"a \\"b":v'), { start: 0, end: 9, negated: false, field: '"a \\"b"', text: 'v' }, 'an escaped quote inside')
  t.same(at('message:"card iss'), { start: 0, end: 17, negated: false, field: 'message', text: 'card iss' }, 'a quoted value being typed')
  t.same(at('message:"card issuer" lev', 12), { start: 0, end: 21, negated: false, field: 'message', text: 'card issuer' }, 'the caret inside a quoted value')
  t.same(at('"card iss'), { start: 0, end: 9, negated: false, field: null, text: '"card iss' }, 'a phrase: no field')
  t.same(at('(a OR serv)', 10), { start: 6, end: 10, negated: false, field: null, text: 'serv' }, 'parentheses end a word')
  t.same(at('a  b', 2), { start: 2, end: 2, negated: false, field: null, text: '' }, 'between words')
})

t.test('filter terms: adding to q', async (t) => {
  t.same(format.splitTerms('status:5xx  path:"/a b" -host:x "two words"'), ['status:5xx', 'path:"/a b"', '-host:x', '"two words"'])
  t.equal(format.addTerms('', ['path:/x']), 'path:/x')
  t.equal(format.addTerms('status:5xx', ['path:/x']), 'status:5xx path:/x')
  t.equal(format.addTerms('path:/a status:5xx', ['path:/b']), 'status:5xx path:/b', 'a second path replaces the first')
  t.equal(format.addTerms('path:/x', ['path:/x']), 'path:/x', 'no duplicates')
  t.equal(format.addTerms('-path:/a', ['path:/b']), '-path:/a path:/b', 'negations stay')
  t.equal(format.addTerms('timeout', ['path:/x', 'status:404']), 'timeout path:/x status:404')
  t.equal(format.addTerms('level:error OR status:5xx', ['path:/x']), '(level:error OR status:5xx) path:/x', 'a top-level OR is kept whole')
  t.equal(format.addTerms('(a OR b) c', ['path:/x']), '(a OR b) c path:/x', 'an OR inside parentheses needs none')
  t.equal(format.addTerms('"x OR y" c', ['path:/x']), '"x OR y" c path:/x', 'an OR inside quotes is text')
})

t.test('a search that found nothing: hints for a bare trace or span id and lower-case keywords (explore32c F7)', async (t) => {
  const trace = '4bf92f3577b34da6a3ce929d0e0e4736'
  t.same(query.emptySearchHints(trace).map((h) => h.q), [`trace_id:${trace}`])
  t.same(query.emptySearchHints('level:error 00f067aa0ba902b7').map((h) => h.q), ['level:error span_id:00f067aa0ba902b7'])
  t.same(query.emptySearchHints('service:users or service:payments').map((h) => h.q), ['service:users OR service:payments'])
  t.same(query.emptySearchHints('level:error timeout'), [], 'nothing to say')
  t.same(query.emptySearchHints('"or"'), [], 'a quoted word is meant')
})

t.test('times say their zone; a range with seconds shows them (explore32c F13, F14)', async (t) => {
  t.match(format.zoneLabel(), /^UTC([+-]\d\d:\d\d)?$/)
  const from = Date.UTC(2026, 10, 29, 9, 52, 50)
  t.match(urlState.formatRange(from, from + 190_000), /\d\d:\d\d:50 → \d\d:\d\d:00$/, 'a zoom\'s seconds')
  t.match(urlState.formatRange(from - 50_000, from + 250_000), /\d\d:\d\d → \d\d:\d\d$/, 'whole minutes without')
})

t.test('the URL\'s columns: any names, commas, quotes and backslashes in them too, read back as written (explore34c H4)', async (t) => {
  t.equal(urlState.writeColumns(['ts', 'level', 'a,b', 'say "hi"']), 'ts,level,"a,b","say \\"hi\\""')
  t.same(urlState.readColumns('ts,level,"a,b",user.id'), ['ts', 'level', 'a,b', 'user.id'])
  fc.assert(fc.property(fc.array(fc.string({ minLength: 1, maxLength: 8, unit: fc.constantFrom('a', ',', '"', '\\', ' ', 'é', '.') }), { maxLength: 5 }), (columns) => {
    return JSON.stringify(urlState.readColumns(urlState.writeColumns(columns))) === JSON.stringify(columns)
  }), { numRuns: 300, seed: 34 })
  t.pass('300 generated column lists read back as written')
})

t.test('a preset\'s window starts where /stats starts it, so the histogram\'s legend counts what the hits count (explore34c H1)', async (t) => {
  let checked = 0
  for (const range of ['15m', '1h', '24h', '7d']) {
    for (let k = 0; k < 200; k++) {
      const now = Date.UTC(2026, 10, 29, 16, 0, 0) + k * 7_919 // every second of the minute, and more
      const window = urlState.resolveWindow({ range }, now)!
      for (const by of [{ isLevel: true }, { isLevel: false }]) {
        for (const filtered of [false, true]) {
          const plan = planStats({ orgId: 'o', stream: 's', from: window.from, to: window.to, by: by as never, rollupsPurged: true, ...(filtered ? { filter: { text: 'x' } as never } : {}) })
          if (plan.from !== window.from) t.fail(`${range} at ${new Date(now).toISOString()}: /stats from ${plan.from}, the window from ${window.from}`)
          checked++
        }
      }
    }
  }
  t.equal(checked, 3200)
})

t.test('a custom range is widened to the steps /stats reads it at, both ends: the legend counts what the hits count (explore34c H10)', async (t) => {
  let checked = 0
  let widened = 0
  const end = Date.UTC(2026, 10, 29, 16, 0, 0)
  fc.assert(fc.property(fc.integer({ min: 60_000, max: 6 * 365 * 86_400_000 }), fc.integer({ min: 0, max: 86_400_000 }), fc.boolean(), fc.constantFrom('level', 'service'),
    (span, back, filtered, by) => {
      const custom = { from: end - back - span, to: end - back }
      const window = urlState.resolveWindow({ range: 'custom', custom, q: filtered ? 'x' : '', by }, end)!
      const plan = planStats({ orgId: 'o', stream: 's', from: window.from, to: window.to, by: { isLevel: by === 'level' } as never, rollupsPurged: true, ...(filtered ? { filter: { text: 'x' } as never } : {}) })
      checked++
      if (window.from !== custom.from || window.to !== custom.to) widened++
      return plan.from === window.from && plan.to === window.to && window.from <= custom.from && window.to >= custom.to
    }), { numRuns: 2000, seed: 34 })
  t.equal(checked, 2000, `2,000 custom ranges, ${widened} widened, each as /stats reads it`)
})
