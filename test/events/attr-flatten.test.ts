// attrs flattened to the attr_keys/attr_values pairs (lib/events/attr-flatten.ts): dotted paths,
// values as text, escapes decoded; held to a JSON.parse-based flattening on generated objects.
import t from 'tap'
import fc from 'fast-check'
import { flattenAttrsText } from '../../lib/events/attr-flatten.ts'

/** The pairs by JSON.parse: the meaning the byte walker must have (order aside). */
function reference (value: Record<string, unknown>, prefix = '', out: Array<[string, string]> = []): Array<[string, string]> {
  for (const key of Object.keys(value)) {
    const v = value[key]
    const path = prefix === '' ? key : prefix + '.' + key
    if (typeof v === 'object' && v !== null && !Array.isArray(v)) reference(v as Record<string, unknown>, path, out)
    else out.push([path, typeof v === 'string' ? Buffer.from(v).toString() : JSON.stringify(v)])
  }
  return out
}

const pairsOf = (json: string): Array<[string, string]> => {
  const { keys, values } = flattenAttrsText(json)
  return keys.map((k, i) => [k, values[i]])
}

t.test('paths, value texts and order', async (t) => {
  t.same(pairsOf('{}'), [])
  t.same(pairsOf('{"user":{"id":42,"name":"ann"},"order.total":129.5,"ok":true,"none":null,"tags":["a",{"b":1}],"e":{}}'), [
    ['user.id', '42'], ['user.name', 'ann'], ['order.total', '129.5'], ['ok', 'true'], ['none', 'null'], ['tags', '["a",{"b":1}]'],
  ])
  t.same(pairsOf('{"a.b":1,"a":{"b":2}}'), [['a.b', '1'], ['a.b', '2']], 'a path spelt twice gives two pairs, in text order')
  t.same(pairsOf('{"k\\"ey":"line\\nbreak \\u00e9 \\ud83d\\ude00 \\ud800 \\\\ \\/"}'),
    [['k"ey', 'line\nbreak é 😀 \ufffd \\ /']])
  t.same(pairsOf('{"a":{"b":{"c":{"d":"deep"}}},"z":"]}"}'), [['a.b.c.d', 'deep'], ['z', ']}']])
  t.same(pairsOf('{"\ufeff":"\ufeffv","\\ufeffk":1}'), [['\ufeff', '\ufeffv'], ['\ufeffk', '1']], 'a leading U+FEFF is kept')
})

t.test('generated objects: the same pairs as JSON.parse gives', async (t) => {
  const value = fc.letrec((tie) => ({
    any: fc.oneof({ depthSize: 'small' }, fc.string({ unit: 'binary' }), fc.double({ noNaN: true, noDefaultInfinity: true }),
      fc.integer(), fc.boolean(), fc.constant(null), fc.array(tie('any'), { maxLength: 3 }), tie('object')),
    object: fc.dictionary(fc.string({ unit: 'binary', maxLength: 6 }), tie('any'), { maxKeys: 5 }),
  }))
  const sort = (pairs: Array<[string, string]>): string => JSON.stringify(pairs.map((p) => JSON.stringify(p)).sort())
  const failure = fc.check(fc.property(value.object, (object) => {
    const json = JSON.stringify(object)
    return sort(pairsOf(json)) === sort(reference(JSON.parse(json) as Record<string, unknown>))
  }), { numRuns: 3000 })
  t.equal(failure.failed, false, failure.failed ? JSON.stringify(failure.counterexample) : 'every object')
})

t.test('text that is no attrs object: some pairs or none, never a hang', async (t) => {
  for (const text of ['', 'short', 'x'.repeat(43), '{"a', '{"a":', '{"a":"b', '{"a":[1,', '{"a":{"b":', '{"a":1', '{"\\u12":"\\u"}', '[1]']) {
    const { keys, values } = flattenAttrsText(text)
    t.equal(keys.length, values.length, JSON.stringify(text))
  }
})
