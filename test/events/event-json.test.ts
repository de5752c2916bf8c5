// The one writer of the events API's JSON (lib/events/event-json.ts), against JSON.stringify of
// the same values: member order of the field table, nulls, numbers, string escapes, attrs spliced
// in as text, received_at last.
import t from 'tap'
import { eventFields } from '../../lib/events/fields.ts'
import { EventJsonBuffer, eventJsonText, parseEventId } from '../../lib/events/event-json.ts'
import { eventRow } from '../helpers/events.ts'

const receivedAt = 1763726400000

t.test('id first, members in the table order, absent ones null, attrs as sent, received_at last', async (t) => {
  const row = eventRow({ ts: 1763726399123, host: 'web-1', status: 404, rt: 0.25, bytes: 0, level: 'warn', service: 'checkout', attrs: '{"a":[1,{"b":null}]}' })
  const text = eventJsonText(row, receivedAt, 42)
  t.equal(text, JSON.stringify({
    id: '1763726399123-42',
    ts: 1763726399123, host: 'web-1', path: null, status: 404, rt: 0.25, bytes: 0, method: null, src: null, user_agent: null,
    message: null, filename: null, level: 'warn', service: 'checkout', trace_id: null, span_id: null, attrs: { a: [1, { b: null }] }, received_at: receivedAt,
  }))
  t.strictSame(Object.keys(JSON.parse(text)), ['id', ...eventFields.map((f) => f.name), 'attrs', 'received_at'])
  t.strictSame(parseEventId('1763726399123-42'), { ts: 1763726399123, seq: 42 })
  t.equal(parseEventId('1763726399123.42'), null)
  t.equal(parseEventId('99999999999999999-1'), null)
})

t.test('strings escaped as JSON.stringify escapes them; numbers as it writes them', async (t) => {
  const samples = ['', 'a"b', 'back\\slash', 'tab\tnl\ncr\r', '\u0000\u0001\u001f\u007f', 'é 日本 😀', '\u2028\u2029', '</script>']
  for (const text of samples) {
    const json = eventJsonText(eventRow({ ts: 0, message: text }), receivedAt)
    t.equal(JSON.parse(json).message, text, 'reads back')
    t.ok(json.includes(',"message":' + JSON.stringify(text) + ','), `sample ${samples.indexOf(text)} escaped as JSON.stringify does`)
  }
  for (const rt of [0, 1e-7, 1e21, 0.1 + 0.2, 123.456]) {
    t.ok(eventJsonText(eventRow({ ts: 0, rt }), receivedAt).includes(',"rt":' + JSON.stringify(rt) + ','), `rt ${rt}`)
  }
  t.ok(eventJsonText(eventRow({ ts: 2 ** 53 - 1, bytes: 9 }), receivedAt).startsWith('{"id":"9007199254740991-0","ts":9007199254740991,'))
})

t.test('a buffer of several events grows as needed', async (t) => {
  const out = new EventJsonBuffer()
  out.ascii('[')
  for (let i = 0; i < 100; i++) {
    if (i > 0) out.ascii(',')
    out.event(eventRow({ ts: i, message: 'x'.repeat(1000) + i }), receivedAt, i)
  }
  out.ascii(']')
  const events = JSON.parse(Buffer.from(out.view()).toString())
  t.equal(events.length, 100)
  t.equal(events[99].message, 'x'.repeat(1000) + 99)
})
