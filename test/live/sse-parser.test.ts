// The one SSE parser (lib/dashboard/public/sse-parser.js, typed by lib/live/sse-parser.ts) fed
// bytes: a multibyte UTF-8 character split across chunks decodes whole, whatever the cut and the
// line ends; comments reach onComment; a BOM is dropped.
import t from 'tap'
import { SseParser } from '../../lib/live/sse-parser.ts'

interface Parsed { events: Array<[string, string]>, comments: string[] }

function parseBytes (chunks: Uint8Array[]): Parsed {
  const out: Parsed = { events: [], comments: [] }
  const parser = new SseParser((type, data) => out.events.push([type, data]), (text) => out.comments.push(text))
  for (const chunk of chunks) parser.push(chunk)
  return out
}

const message = 'héllo — 日本語 🎉'
const data = JSON.stringify({ path: '/ü', message })

t.test('bytes cut at every offset, LF, CRLF and CR: the same events and comments', async (t) => {
  const lines = [': connected', '', 'event: event', `data: ${data}`, 'data: ∑ second line', '', 'event: stats', 'data: {"count":1}', '', '']
  const expected: Parsed = {
    events: [['event', `${data}\n∑ second line`], ['stats', '{"count":1}']],
    comments: ['connected'],
  }
  for (const eol of ['\n', '\r\n', '\r']) {
    const bytes = new TextEncoder().encode(lines.join(eol))
    let failures = 0
    for (let cut = 0; cut <= bytes.length; cut++) {
      const got = parseBytes([bytes.subarray(0, cut), bytes.subarray(cut)])
      if (JSON.stringify(got) !== JSON.stringify(expected)) {
        failures++
        t.same(got, expected, `${JSON.stringify(eol)} cut at byte ${cut}`)
      }
    }
    t.equal(failures, 0, `${JSON.stringify(eol)}: every one of ${bytes.length + 1} two-chunk cuts decodes the same`)
    t.same(parseBytes([...bytes].map((b) => Uint8Array.of(b))), expected, `${JSON.stringify(eol)} one byte at a time`)
  }
  t.equal(JSON.parse(parseBytes([new TextEncoder().encode(`data: ${data}\n\n`)]).events[0][1]).message, message)
})

t.test('a chunk that decodes to no text between a CR and its LF: one line end, not two', async (t) => {
  const enc = new TextEncoder()
  const e = enc.encode('é') // two bytes: the first alone decodes to nothing yet
  const got = parseBytes([enc.encode('data: a\r'), new Uint8Array(0), enc.encode('\ndata: b\r'), e.subarray(0, 1), Uint8Array.of(e[1], 10, 10)])
  t.same(got.events, [['message', 'a\nb']], 'the pending CR survives an empty chunk')
  t.same(parseBytes([enc.encode('data: a\r'), e.subarray(0, 1), Uint8Array.of(e[1], 10, 10)]).events, [['message', 'a']], 'CR, then "é" in two chunks: "é" starts a line (a field without value)')
})

t.test('a leading BOM is dropped; text chunks are taken too', async (t) => {
  const bom = Uint8Array.of(0xef, 0xbb, 0xbf)
  const body = new TextEncoder().encode('event: event\ndata: x\n\n')
  t.same(parseBytes([bom.subarray(0, 2), bom.subarray(2), body]).events, [['event', 'x']])
  const events: Array<[string, string]> = []
  const parser = new SseParser((type, d) => events.push([type, d]))
  parser.push('event: dropped\ndata: {"count":2}\n')
  parser.push('\n')
  t.same(events, [['dropped', '{"count":2}']])
})

t.test('an event without its blank line is not dispatched', async (t) => {
  t.same(parseBytes([new TextEncoder().encode('event: event\ndata: {}\n')]).events, [])
})
