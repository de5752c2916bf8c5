// Putting a committed request's tail frames together for the clients. The workers' per-task
// outputs (LiveOutput: tail-frames.ts's `event: event` frames as one byte array, their end
// offsets, and per frame a bit mask of the filters it matched) come in body order; for one filter
// bit these give its frames in body order as views of those arrays (no copy), runs of adjacent
// frames as one view.
import type { LiveOutput } from './live-protocol.ts'

/** One filter's share of a request: its events' frames joined, how many, and what the workers dropped. */
export interface FilterFrames { bytes: Buffer, count: number, dropped: number }

/** Bytes [start, end) of the frames the worker wrote, as a view (no copy). */
function viewOf (out: LiveOutput, start: number, end: number): Buffer {
  return Buffer.from(out.frames.buffer, out.frames.byteOffset + start, end - start)
}

/** Frame i of `out`. */
function frameOf (out: LiveOutput, i: number): Buffer {
  return viewOf(out, i === 0 ? 0 : out.ends[i - 1], out.ends[i])
}

/** How many events matched filter `bit` across `outputs`: serialized (a frame each) and dropped by the workers' cap. */
export function countFor (outputs: readonly LiveOutput[], bit: number): { serialized: number, dropped: number } {
  let serialized = 0
  let dropped = 0
  for (const out of outputs) {
    for (const mask of out.masks) if (mask & (1 << bit)) serialized++
    dropped += out.dropped[bit]
  }
  return { serialized, dropped }
}

/** The frames of the events that matched filter `bit`, joined in body order (runs of them as one view each). */
export function framesFor (outputs: readonly LiveOutput[], bit: number): FilterFrames {
  const parts: Buffer[] = []
  let count = 0
  let dropped = 0
  for (const out of outputs) {
    dropped += out.dropped[bit]
    let runStart = -1
    let runEnd = 0
    for (let i = 0; i < out.ends.length; i++) {
      if ((out.masks[i] & (1 << bit)) === 0) continue
      const start = i === 0 ? 0 : out.ends[i - 1]
      if (start !== runEnd || runStart < 0) {
        if (runStart >= 0) parts.push(viewOf(out, runStart, runEnd))
        runStart = start
      }
      runEnd = out.ends[i]
      count++
    }
    if (runStart >= 0) parts.push(viewOf(out, runStart, runEnd))
  }
  return { bytes: parts.length === 1 ? parts[0] : Buffer.concat(parts), count, dropped }
}

/**
 * The frames of filter `bit` one by one in body order, each offered to `take`, which answers
 * whether the client has a token and room for it; the taken ones joined (an empty Buffer when none).
 */
export function framesWhile (outputs: readonly LiveOutput[], bit: number, take: (frame: Buffer, bytesSoFar: number) => boolean): Buffer {
  const parts: Buffer[] = []
  let bytes = 0
  for (const out of outputs) {
    for (let i = 0; i < out.ends.length; i++) {
      if ((out.masks[i] & (1 << bit)) === 0) continue
      const frame = frameOf(out, i)
      if (!take(frame, bytes)) continue
      parts.push(frame)
      bytes += frame.byteLength
    }
  }
  return Buffer.concat(parts, bytes)
}

/** Filter `bit`'s share of `outputs` as one output of that filter alone (its frames copied together, every mask 1): what a peer is forwarded. */
export function filterOutput (outputs: readonly LiveOutput[], bit: number, stats: LiveOutput['stats']): LiveOutput {
  const parts: Buffer[] = []
  const ends: number[] = []
  let bytes = 0
  let dropped = 0
  for (const out of outputs) {
    dropped += out.dropped[bit]
    for (let i = 0; i < out.ends.length; i++) {
      if ((out.masks[i] & (1 << bit)) === 0) continue
      const frame = frameOf(out, i)
      parts.push(frame)
      bytes += frame.byteLength
      ends.push(bytes)
    }
  }
  return { frames: Buffer.concat(parts, bytes), ends, masks: ends.map(() => 1), dropped: [dropped], stats }
}
