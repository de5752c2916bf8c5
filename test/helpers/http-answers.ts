// Where a proxy between a shipper and Sluice stands in an HTTP/1.1 exchange: whether the client's
// request is still waiting for its answer, read from the answer's bytes (Sluice's answers carry
// Content-Length; a 1xx such as 100 Continue has no body and is not the answer). The shipper
// tests take Sluice down only between exchanges: an answer cut on its way makes the shipper send
// a batch again that was stored (CI: rsyslog's and syslog-ng's storage-outage batches stored
// twice; reproduced with the answers 150 ms slower through the front).

export interface AnswerTracker {
  /** The client sent bytes of a request. */
  requested (): void
  /** Bytes of the answer passed; true when they ended it. */
  answered (d: Buffer): boolean
  /** A request sent and not yet answered in full. */
  readonly waiting: boolean
}

export function trackAnswers (): AnswerTracker {
  let waiting = false
  let head = '' // the answer's status line and headers so far
  let bodyLeft = -1 // bytes of the answer's body still to pass; -1 while reading its head
  return {
    requested () { waiting = true },
    answered (d: Buffer): boolean {
      let ended = false
      let at = 0
      while (at < d.length) {
        if (bodyLeft < 0) {
          const text = head + d.toString('latin1', at)
          const end = text.indexOf('\r\n\r\n')
          if (end < 0) { head = text; break }
          at += end + 4 - head.length
          head = ''
          const headers = text.slice(0, end)
          if (/^HTTP\/1\.[01] 1\d\d/.test(headers)) continue
          bodyLeft = Number(/\r\ncontent-length: *(\d+)/i.exec(headers)?.[1] ?? Infinity)
        }
        const take = Math.min(bodyLeft, d.length - at)
        bodyLeft -= take
        at += take
        if (bodyLeft === 0) {
          bodyLeft = -1
          waiting = false
          ended = true
        }
      }
      return ended
    },
    get waiting () { return waiting },
  }
}
