// The live tail's Server-Sent Events wire format on the server side, for every frame but the
// events themselves: `stats`, `dropped`, the opening retry and the comment heartbeat. The events'
// frames (`event: event`) are the same format written as bytes by tail-frames.ts, joined per
// filter for speed; what both write is read by the one parser, sse-parser.ts.
import type { ServerResponse } from 'node:http'

const lineEnd = /\r\n|\r|\n/

/**
 * One event as wire text: `event: NAME`, one `data:` line per line of `data`, a blank line.
 * `event` must hold no line end (it is one of ours); JSON.stringify output is a single line.
 */
export function sseEvent (event: string, data: string): string {
  const lines = lineEnd.test(data) ? data.split(lineEnd) : [data]
  return `event: ${event}\ndata: ${lines.join('\ndata: ')}\n\n`
}

/** Writes one event to a client; false as res.write returns it (the socket's buffer is full). */
export function writeSseEvent (res: ServerResponse, event: string, data: string): boolean {
  return res.write(sseEvent(event, data))
}

/** A comment block (a heartbeat): the parser hands it to onComment and dispatches nothing. */
export function sseComment (text: string): string {
  return `: ${text}\n\n`
}

/** A stream's first block: how long a client waits before reconnecting, and a comment. */
export function sseOpening (retryMs: number, comment: string): string {
  return `retry: ${retryMs}\n${sseComment(comment)}`
}
