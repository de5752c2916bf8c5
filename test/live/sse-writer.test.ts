// The server's SSE writer (lib/live/sse-writer.ts) read back by the one parser: what is written
// is what a client gets, multi-line data included; comments and the opening dispatch nothing.
import t from 'tap'
import { sseComment, sseEvent, sseOpening } from '../../lib/live/sse-writer.ts'
import { SseParser } from '../../lib/live/sse-parser.ts'

function read (text: string): { events: Array<[string, string]>, comments: string[] } {
  const out = { events: [] as Array<[string, string]>, comments: [] as string[] }
  new SseParser((type, data) => out.events.push([type, data]), (c) => out.comments.push(c)).push(new TextEncoder().encode(text))
  return out
}

t.test('events round-trip through the parser', async (t) => {
  t.equal(sseEvent('dropped', '{"count":3}'), 'event: dropped\ndata: {"count":3}\n\n', 'the wire format')
  const stats = JSON.stringify({ count: 2, message: 'héllo 🎉\nline' })
  t.same(read(sseEvent('stats', stats)).events, [['stats', stats]])
  t.same(read(sseEvent('x', 'a\nb\r\nc\rd')).events, [['x', 'a\nb\nc\nd']], 'each line of data is its own data: line')
  t.same(read(sseEvent('x', '')).events, [['x', '']])
})

t.test('the opening and the heartbeat are comments: nothing dispatched', async (t) => {
  t.equal(sseOpening(2000, 'connected'), 'retry: 2000\n: connected\n\n')
  t.same(read(sseOpening(2000, 'connected') + sseComment('heartbeat')), { events: [], comments: ['connected', 'heartbeat'] })
})
