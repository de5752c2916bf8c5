// The body of POST /internal/live (docs/api.md section 10): what a node forwards to a peer that
// tails a stream, after a commit. One body holds one or more messages back to back; a message is
// a JSON header line, then the frames of its parts one after the other:
//   {"o":org id,"s":stream,"st":LiveStatsPartial,"p":[{"q":filter,"e":[frame ends],"d":dropped}]}\n
//   <part 0 frames: e[last] bytes><part 1 frames>...
// Frames are the `event: event` SSE frames the committing node's workers built (tail-frames.ts),
// sent as they are; `e` are each part's frame end offsets (relative to the part), `d` the
// filter's events left out (the workers' cap, or messages this link dropped before).
import { SluiceError } from '../errors.ts'
import type { LiveOutput } from './live-protocol.ts'
import type { LiveStatsPartial } from './live-stats.ts'

export interface ForwardMessage {
  orgId: string
  stream: string
  stats: LiveStatsPartial
  parts: Array<{ q: string, output: LiveOutput }>
}

interface Header {
  o: string
  s: string
  st: LiveStatsPartial
  p: Array<{ q: string, e: number[], d: number }>
}

const emptyStats: LiveStatsPartial = { count: 0, status: [0, 0, 0, 0], bytes: 0, rt: [], paths: [] }

export function encodeForward (m: ForwardMessage): Buffer {
  const header: Header = {
    o: m.orgId,
    s: m.stream,
    st: m.stats,
    p: m.parts.map((x) => ({ q: x.q, e: x.output.ends, d: x.output.dropped[0] })),
  }
  return Buffer.concat([Buffer.from(JSON.stringify(header) + '\n'), ...m.parts.map((x) => x.output.frames)])
}

function malformed (why: string): SluiceError {
  return new SluiceError('bad_request', `Malformed forwarded tail body: ${why}`)
}

function isCounts (v: unknown): v is number[] {
  return Array.isArray(v) && v.every((n) => Number.isSafeInteger(n) && n >= 0)
}

function checkHeader (h: unknown): Header {
  const x = h as Header
  if (typeof x !== 'object' || x === null || typeof x.o !== 'string' || typeof x.s !== 'string' || !Array.isArray(x.p)) throw malformed('header fields')
  const st = x.st
  if (typeof st !== 'object' || st === null || !Number.isSafeInteger(st.count) || !isCounts(st.status) || st.status.length !== 4 ||
      typeof st.bytes !== 'number' || !isCounts(st.rt) || st.rt.length % 2 !== 0 || !Array.isArray(st.paths) ||
      !st.paths.every((p) => Array.isArray(p) && typeof p[0] === 'string' && Number.isSafeInteger(p[1]))) throw malformed('stats')
  for (let i = 0; i < st.rt.length; i += 2) if (st.rt[i] >= 1100) throw malformed('stats bucket')
  for (const part of x.p) {
    if (typeof part !== 'object' || part === null || typeof part.q !== 'string' || !isCounts(part.e) || !Number.isSafeInteger(part.d) || part.d < 0) throw malformed('part')
    for (let i = 1; i < part.e.length; i++) if (part.e[i] <= part.e[i - 1]) throw malformed('frame ends')
  }
  return x
}

/** The messages of a body; a SluiceError bad_request when it is not one this codec wrote. */
export function decodeForward (body: Buffer): ForwardMessage[] {
  const out: ForwardMessage[] = []
  let at = 0
  while (at < body.length) {
    const nl = body.indexOf(10, at)
    if (nl < 0) throw malformed('no header line')
    let parsed: unknown
    try { parsed = JSON.parse(body.toString('utf8', at, nl)) } catch { throw malformed('header JSON') }
    const header = checkHeader(parsed)
    at = nl + 1
    const parts: ForwardMessage['parts'] = []
    for (const p of header.p) {
      const size = p.e.length === 0 ? 0 : p.e[p.e.length - 1]
      if (at + size > body.length) throw malformed('frames cut short')
      parts.push({ q: p.q, output: { frames: body.subarray(at, at + size), ends: p.e, masks: p.e.map(() => 1), dropped: [p.d], stats: emptyStats } })
      at += size
    }
    out.push({ orgId: header.o, stream: header.s, stats: header.st, parts })
  }
  return out
}
