// One live-tail client for the benchmarks: GET /api/streams/{stream}/tail?q= with a PAT over its
// own undici connection, read continuously (never paused, so the server's buffer for it stays
// empty), counting what arrives. Frames are split on the blank line that ends each; an `event`
// frame's JSON is parsed only when `onEvent` is given (the latency benchmark reads the marker's
// id; the throughput benchmark just counts, so that reading costs this process little).
import { Client } from 'undici'

export interface TailCounts {
  /** `event: event` frames. */
  events: number
  /** Sum of the counts of `event: dropped` frames: events the server left out for this client. */
  dropped: number
  /** `event: stats` frames. */
  stats: number
  bytes: number
}

export class TailReader {
  readonly q: string
  readonly counts: TailCounts = { events: 0, dropped: 0, stats: 0, bytes: 0 }
  #client: Client
  #abort = new AbortController()
  #done: Promise<void> = Promise.resolve()
  #error: Error | null = null

  private constructor (origin: string, q: string) {
    this.q = q
    this.#client = new Client(origin, { bodyTimeout: 0, headersTimeout: 10_000 })
  }

  /**
   * Opens the tail and resolves once its headers (200) came: from then on, every request the
   * server starts includes this client. `onEvent` gets each event's parsed JSON and the time its
   * bytes arrived (performance.now()).
   */
  static async open (baseUrl: string, stream: string, token: string, q: string, onEvent?: (event: Record<string, unknown>, at: number) => void): Promise<TailReader> {
    const reader = new TailReader(new URL(baseUrl).origin, q)
    const res = await reader.#client.request({
      method: 'GET',
      path: `/api/streams/${encodeURIComponent(stream)}/tail?q=${encodeURIComponent(q)}`,
      headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' },
      signal: reader.#abort.signal,
    })
    if (res.statusCode !== 200) {
      const text = await res.body.text()
      await reader.#client.close()
      throw new Error(`tail q=${JSON.stringify(q)}: ${res.statusCode} ${text}`)
    }
    reader.#done = reader.#read(res.body, onEvent)
    return reader
  }

  async #read (body: AsyncIterable<Buffer>, onEvent?: (event: Record<string, unknown>, at: number) => void): Promise<void> {
    const c = this.counts
    let rest = ''
    try {
      for await (const chunk of body) {
        const at = performance.now()
        c.bytes += chunk.length
        const text = rest + chunk.toString('utf8')
        let start = 0
        let end: number
        while ((end = text.indexOf('\n\n', start)) >= 0) {
          // A frame is `event: NAME\ndata: JSON` (comments and `retry:` have no event line).
          if (text.startsWith('event: event\n', start)) {
            c.events++
            if (onEvent) onEvent(JSON.parse(text.slice(text.indexOf('data: ', start) + 6, end)) as Record<string, unknown>, at)
          } else if (text.startsWith('event: dropped\n', start)) {
            const data = JSON.parse(text.slice(text.indexOf('data: ', start) + 6, end)) as { count: number }
            c.dropped += data.count
          } else if (text.startsWith('event: stats\n', start)) {
            c.stats++
          }
          start = end + 2
        }
        rest = text.slice(start)
      }
    } catch (err) {
      if (!this.#abort.signal.aborted) this.#error = err as Error
    }
  }

  /** A copy of the counts now (for differences over a window). */
  snapshot (): TailCounts {
    return { ...this.counts }
  }

  /** The read's error, if the stream failed before close(). */
  get error (): Error | null { return this.#error }

  async close (): Promise<void> {
    this.#abort.abort()
    await this.#done
    await this.#client.destroy().catch(() => {})
  }
}

/** Differences of counts: after - before, field by field. */
export function countsBetween (before: TailCounts, after: TailCounts): TailCounts {
  return {
    events: after.events - before.events,
    dropped: after.dropped - before.dropped,
    stats: after.stats - before.stats,
    bytes: after.bytes - before.bytes,
  }
}
