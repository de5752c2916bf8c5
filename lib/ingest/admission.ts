// Admission control for ingest, decided before the body is read (docs/api.md section 6.8): the org's
// request rate, the org's concurrent requests, and the server's bytes accepted but not yet
// committed. Refusals are 429 with Retry-After and the reason's code; every ingest response after
// authentication carries the X-RateLimit-* headers.
//
// An admitted request then waits for one of `maxReadingRequests` reading slots before its body is
// read (ticket.startReading), and hands the slot back once its rows are with the writer, so a
// request waiting for its commit holds none. This bounds the memory of bodies in progress (split
// lines, parse tasks) when thousands of clients upload at once: a waiting request's socket stays
// paused, its body in the kernel's buffers. Slots turn over in milliseconds; a request that waits
// `maxReadingWaitMs` for one gets 429 server_busy (VictoriaLogs' -maxConcurrentInserts and
// -insert.maxQueueDuration work the same way).
//
// Fair shares between orgs (a slow or noisy org cannot starve the others):
// - Reading slots: the orgs holding or waiting for slots are "active"; an org's share is
//   ceil(maxReadingRequests / active orgs). A freed slot goes to the waiting orgs in turn
//   (round-robin, each org's own requests first come first served), skipping an org that holds
//   its share or more while another waiting org holds less. With no one else waiting an org may
//   use every slot. While a request of an org under its share waits, a body of an org over its
//   share that lags the minimum data rate is cut at once (408: when the wait starts, or when the
//   body starts to lag) instead of after its grace period.
// - Uncommitted bytes: a request is refused server_busy when the server's uncommitted bytes plus
//   its reservation pass `maxUncommittedBytes`, unless its org, counting that reservation, stays
//   within its share (maxUncommittedBytes / orgs with requests in progress). An org's bytes are
//   those of its requests not yet answered, in their bodies or with the batch writer: an org
//   whose rows fill the writer holds them until they are committed. The total never passes twice
//   the limit: past it, no org is admitted (shares shrink as orgs arrive, and what an org was
//   admitted with under a larger share stays until answered).
// - The writer's backlog (writerNeedsDrain: rows held for want of room, or its oldest write past
//   a third of its time) refuses new requests and keeps bodies from being read, except those of
//   an org within its share while the writer is not stalled (#passesDrain): one org's flood then
//   does not refuse the others (explore27d M2).
// - Reading bytes: the decoded bytes of the bodies being read, server-wide, stay within
//   `maxReadingBytes`: a request whose next chunk does not fit waits for room with its socket
//   paused (addBytes returns a promise), first come first served, except that the request
//   reading longest never waits, so that one always finishes and frees room (the bound is
//   therefore maxReadingBytes plus one body of at most ingest.maxDecodedBytes). This is what
//   keeps concurrent compression bombs, each stopped at the decoded limit, from holding their
//   limits' worth of lines, tasks and rows all at once. A wait past maxReadingWaitMs is 429.
import { SluiceError } from '../errors.ts'
import type { Config, OrgLimits } from '../config.ts'
import { RateLimiter } from '../limits/rate-limiter.ts'
import type { RateDecision } from '../limits/rate-limiter.ts'
import { ConcurrencyLimiter } from '../limits/concurrency-limiter.ts'

export type RejectReason = 'rate_limited' | 'too_many_concurrent_requests' | 'server_busy'

/** How admission asks a reading request whether its client keeps up, and cuts it when not. */
export interface RateProbe {
  /** The client has sent less than the minimum data rate asks for the time waited so far. */
  isBehind (): boolean
  /** Ends the request (408); its slot comes back through release(). */
  cut (): void
}

export interface AdmissionTicket {
  headers: Record<string, string>
  /**
   * Counts decoded bytes of this request as accepted-not-committed and as being read. Returns a
   * promise when the server's reading bytes are full: read no further until it resolves (it
   * rejects with 429 server_busy after maxReadingWaitMs, or with the abort reason).
   */
  addBytes (n: number): Promise<void> | undefined
  /**
   * Resolves once the request may read its body; throws 429 server_busy after maxReadingWaitMs,
   * or the signal's reason when it aborts first (the client left).
   */
  startReading (signal?: AbortSignal): Promise<void>
  /** Lets admission cut this request when it is slow and other orgs wait (see RateProbe). */
  setRateProbe (probe: RateProbe): void
  /** The body has started to lag the minimum rate: cut at once if another org waits for its slot. */
  reportBehind (): void
  /** The body is read: hands the request's bytes over to the writer's own accounting, and its slot back. */
  releaseBytes (): void
  /** Frees the concurrency slot and any bytes still counted; call once, when answered. */
  release (): void
}

/** Cancels a timer. */
type CancelTimer = () => void

export interface AdmissionOptions {
  limits: Config['limits']
  /** Bytes the batch writer holds (waiting and in flight). */
  writerPendingBytes: () => number
  /** The writer refuses more for now. */
  writerNeedsDrain: () => boolean
  /**
   * The writer sends nothing until ClickHouse answers again (lib/storage/stall-gate.ts): no org
   * is admitted past writerNeedsDrain then. Absent: never.
   */
  writerStalled?: () => boolean
  /** Clock (ms) of the rate limiter. */
  now?: () => number
  /** Runs `fn` after `ms` (the waits' deadlines); tests pass their own. Default: setTimeout. */
  setTimer?: (fn: () => void, ms: number) => CancelTimer
  onReject?: (reason: RejectReason) => void
  /**
   * Cluster mode: live Sluice nodes (lib/storage/node-registry.ts); each enforces the per-org
   * limits divided by it, rounded up. Absent: 1.
   */
  liveNodes?: () => number
}

/** The X-RateLimit headers of a rate decision (README "Limits"). */
function rateHeaders (r: RateDecision): Record<string, string> {
  return { 'x-ratelimit-limit': String(r.limit), 'x-ratelimit-remaining': String(r.remaining), 'x-ratelimit-reset': String(r.resetS) }
}

/** Seconds a client waits after too_many_concurrent_requests or server_busy: requests finish fast. */
const busyRetryAfterS = 1

interface Ticket {
  readonly orgId: string
  /** Bytes held in #bodyBytes: the larger of the reservation and the decoded bytes seen. */
  counted: number
  /** Bytes held in its org's `bytes`: as `counted`, but until the request is answered. */
  held: number
  seen: number
  /** Decoded bytes held in #readingBytes. */
  readBytes: number
  /** 'no' before startReading, 'waiting' for a slot, 'yes' holding one, 'done' after. */
  reading: 'no' | 'waiting' | 'yes' | 'done'
  probe: RateProbe | null
}

interface SlotWaiter {
  ticket: Ticket
  grant: () => void
}

interface ByteWaiter {
  ticket: Ticket
  bytes: number
  grant: () => void
}

/** What admission keeps per org with requests in progress; dropped when it has none. */
interface OrgState {
  /** Admitted requests not yet released. */
  tickets: number
  /** Reading slots held. */
  reading: number
  /**
   * Bytes of the org's requests not yet answered (each the larger of its reservation and its
   * decoded bytes): in their bodies, or with the writer once read.
   */
  bytes: number
  /** Requests waiting for a reading slot, oldest first. */
  waiting: SlotWaiter[]
}

const defaultSetTimer = (fn: () => void, ms: number): CancelTimer => {
  const timer = setTimeout(fn, ms)
  return () => clearTimeout(timer)
}

export class Admission {
  #limits: Config['limits']
  #rate: RateLimiter
  #concurrency = new ConcurrencyLimiter()
  #setTimer: (fn: () => void, ms: number) => CancelTimer
  #bodyBytes = 0
  #reading = 0
  #waitingCount = 0
  #readingBytes = 0
  /** When the last request stopped reading (-Infinity: none yet). */
  #lastDoneAt = -Infinity
  readonly #now: () => number
  readonly #orgs = new Map<string, OrgState>()
  /** Orgs with requests waiting for a slot, in the order they are served (round-robin). */
  #turn: string[] = []
  /** Tickets holding a reading slot, in the order they got it: the first never waits for bytes. */
  readonly #readers = new Set<Ticket>()
  #byteWaiters: ByteWaiter[] = []
  #options: AdmissionOptions

  constructor (options: AdmissionOptions) {
    this.#options = options
    this.#limits = options.limits
    this.#rate = new RateLimiter(options.now)
    this.#now = options.now ?? Date.now
    this.#setTimer = options.setTimer ?? defaultSetTimer
  }

  /** Requests reading and parsing their bodies. */
  get readingRequests (): number {
    return this.#reading
  }

  /** ms since an ingest request last held or waited for a reading slot or body bytes (0 while one does). */
  idleMs (): number {
    if (this.#reading > 0 || this.#waitingCount > 0 || this.uncommittedBytes > 0) return 0
    return Math.max(0, this.#now() - this.#lastDoneAt)
  }

  /** Admitted requests waiting for a reading slot. */
  get waitingRequests (): number {
    return this.#waitingCount
  }

  /** Decoded bytes of the bodies being read, server-wide. */
  get readingBytes (): number {
    return this.#readingBytes
  }

  /** Bytes accepted and not yet committed, server-wide. */
  get uncommittedBytes (): number {
    return this.#bodyBytes + this.#options.writerPendingBytes()
  }

  /** Reading slots an org holds (tests, metrics). */
  readingOf (orgId: string): number {
    return this.#orgs.get(orgId)?.reading ?? 0
  }

  limitsFor (orgName: string): OrgLimits {
    const o = this.#limits.orgs[orgName] ?? {}
    const nodes = Math.max(1, this.#options.liveNodes?.() ?? 1)
    return {
      requestsPerMinute: Math.ceil((o.requestsPerMinute ?? this.#limits.requestsPerMinute) / nodes),
      concurrentRequests: Math.ceil((o.concurrentRequests ?? this.#limits.concurrentRequests) / nodes),
    }
  }

  /**
   * Takes the request in, or throws the 429. `declaredBytes` (Content-Length, 0 when unknown) is
   * reserved at once, so that a burst of large requests is refused before their bodies are read.
   */
  admit (orgId: string, orgName: string, declaredBytes = 0): AdmissionTicket {
    const limits = this.limitsFor(orgName)
    const rate = this.#rate.take(orgId, limits.requestsPerMinute)
    const headers = rateHeaders(rate)
    if (!rate.allowed) {
      throw this.#reject('rate_limited', `More than ${limits.requestsPerMinute} ingest requests per minute for this org`, rate.retryAfterS, headers)
    }
    // Refused past the rate check, a request gives its token back: it stored nothing, and a
    // burst of senders over the org's concurrency would otherwise spend the minute's requests on
    // refusals and be rate limited with the concurrency free again (explore26c: 48 senders stored
    // 198 requests, then got rate_limited for the rest of the minute).
    if (!this.#concurrency.tryAcquire(orgId, limits.concurrentRequests)) {
      throw this.#reject('too_many_concurrent_requests', `More than ${limits.concurrentRequests} ingest requests at once for this org`, busyRetryAfterS,
        rateHeaders(this.#rate.refund(orgId, rate)))
    }
    if (!this.#bytesFit(orgId, declaredBytes) || (this.#options.writerNeedsDrain() && !this.#passesDrain(orgId, declaredBytes))) {
      this.#concurrency.release(orgId)
      throw this.#reject('server_busy', 'The server has too much data waiting to be stored; retry shortly', busyRetryAfterS,
        rateHeaders(this.#rate.refund(orgId, rate)))
    }
    const org = this.#org(orgId)
    org.tickets++
    const ticket: Ticket = { orgId, counted: declaredBytes, held: declaredBytes, seen: 0, readBytes: 0, reading: 'no', probe: null }
    this.#bodyBytes += declaredBytes
    org.bytes += declaredBytes
    let released = false
    return {
      headers,
      startReading: (signal) => this.#startReading(ticket, headers, signal),
      setRateProbe: (probe) => { ticket.probe = probe },
      reportBehind: () => { this.#cutForWaiters(ticket) },
      addBytes: (n) => {
        ticket.seen += n
        if (ticket.seen > ticket.counted) {
          this.#bodyBytes += ticket.seen - ticket.counted
          ticket.counted = ticket.seen
        }
        if (ticket.seen > ticket.held) {
          org.bytes += ticket.seen - ticket.held
          ticket.held = ticket.seen
        }
        return this.#takeReadingBytes(ticket, n, headers)
      },
      releaseBytes: () => { this.#doneReading(ticket) },
      release: () => {
        if (released) return
        released = true
        this.#doneReading(ticket)
        org.bytes -= ticket.held
        ticket.held = 0
        org.tickets--
        this.#concurrency.release(orgId)
        this.#forgetIfIdle(orgId)
      },
    }
  }

  /** Whether `bytes` more for the org fit the uncommitted budget, fairly (see the contract). */
  #bytesFit (orgId: string, bytes: number): boolean {
    const max = this.#limits.maxUncommittedBytes
    const total = this.uncommittedBytes + bytes
    return total <= max || (total <= 2 * max && this.#withinShare(orgId, bytes))
  }

  /**
   * Whether the org holds no more than its share of the uncommitted budget (maxUncommittedBytes /
   * orgs with requests in progress, the org counted) with `bytes` more, while another org has
   * requests in progress.
   */
  #withinShare (orgId: string, bytes: number): boolean {
    const own = this.#orgs.get(orgId)
    const active = this.#orgs.size + (own === undefined || own.tickets === 0 ? 1 : 0)
    return active >= 2 && (own?.bytes ?? 0) + bytes <= this.#limits.maxUncommittedBytes / active
  }

  /**
   * Whether the org's request goes on while the writer needs to drain: when the org is within
   * its share (#withinShare) and the writer is not stalled. The writer's backlog then is the other
   * orgs', which admission refuses meanwhile: the org's rows wait behind it, at most its share
   * more, instead of a 429 for a flood that is not its own (explore27d M2: one org's wide events
   * made another org's 10-line requests 429 server_busy).
   */
  #passesDrain (orgId: string, bytes: number): boolean {
    return this.#withinShare(orgId, bytes) && this.#options.writerStalled?.() !== true
  }

  async #startReading (ticket: Ticket, headers: Record<string, string>, signal: AbortSignal | undefined): Promise<void> {
    if (ticket.reading !== 'no') return
    signal?.throwIfAborted()
    const org = this.#org(ticket.orgId)
    if (this.#reading < this.#limits.maxReadingRequests && this.#waitingCount === 0) {
      this.#grantSlot(ticket, org)
      return
    }
    ticket.reading = 'waiting'
    await new Promise<void>((resolve, reject) => {
      const leave = (): void => {
        cancelTimer()
        signal?.removeEventListener('abort', onAbort)
        org.waiting.splice(org.waiting.indexOf(waiter), 1)
        this.#waitingCount--
        if (org.waiting.length === 0) this.#turn.splice(this.#turn.indexOf(ticket.orgId), 1)
        ticket.reading = 'done'
      }
      const onAbort = (): void => { leave(); reject(signal!.reason) }
      const cancelTimer = this.#setTimer(() => {
        leave()
        reject(this.#reject('server_busy', 'The server is reading as many request bodies as it can take; retry shortly', busyRetryAfterS, headers))
      }, this.#limits.maxReadingWaitMs)
      const waiter: SlotWaiter = {
        ticket,
        grant: () => {
          cancelTimer()
          signal?.removeEventListener('abort', onAbort)
          resolve()
        },
      }
      signal?.addEventListener('abort', onAbort, { once: true })
      if (org.waiting.length === 0) this.#turn.push(ticket.orgId)
      org.waiting.push(waiter)
      this.#waitingCount++
      this.#reclaimSlot(ticket.orgId)
    })
  }

  #grantSlot (ticket: Ticket, org: OrgState): void {
    this.#reading++
    org.reading++
    ticket.reading = 'yes'
    this.#readers.add(ticket)
  }

  /** Slots an org may hold while others wait: ceil(slots / orgs holding or waiting for one). */
  #slotShare (): number {
    let active = 0
    for (const o of this.#orgs.values()) if (o.reading > 0 || o.waiting.length > 0) active++
    return Math.ceil(this.#limits.maxReadingRequests / Math.max(1, active))
  }

  /**
   * A request of `orgId` waits: if another org holds more than its share and one of its bodies
   * is behind the minimum data rate, that body is cut now; its slot then comes back through
   * release() and #freeSlot.
   */
  #reclaimSlot (orgId: string): void {
    const share = this.#slotShare()
    const mine = this.#orgs.get(orgId)?.reading ?? 0
    if (mine >= share) return
    for (const ticket of this.#readers) {
      if (ticket.orgId === orgId || ticket.probe === null) continue
      if ((this.#orgs.get(ticket.orgId)?.reading ?? 0) <= share) continue
      if (ticket.probe.isBehind()) {
        const probe = ticket.probe
        ticket.probe = null // cut once
        probe.cut()
        return
      }
    }
  }

  /** Cuts a lagging body if its org holds more than its share while another org under it waits. */
  #cutForWaiters (ticket: Ticket): void {
    if (ticket.probe === null || this.#waitingCount === 0) return
    const share = this.#slotShare()
    if ((this.#orgs.get(ticket.orgId)?.reading ?? 0) <= share) return
    const othersWait = this.#turn.some((id) => id !== ticket.orgId && this.#orgs.get(id)!.reading < share)
    if (!othersWait) return
    const probe = ticket.probe
    ticket.probe = null // cut once
    probe.cut()
  }

  #doneReading (ticket: Ticket): void {
    this.#lastDoneAt = this.#now()
    const org = this.#orgs.get(ticket.orgId)!
    this.#bodyBytes -= ticket.counted
    ticket.counted = 0
    if (ticket.readBytes > 0) {
      this.#readingBytes -= ticket.readBytes
      ticket.readBytes = 0
    }
    const wasReader = this.#readers.delete(ticket)
    // A request torn down while it waited for bytes: its wait ends (its pipeline is gone).
    const own = this.#byteWaiters.filter((w) => w.ticket === ticket)
    if (own.length > 0) {
      this.#byteWaiters = this.#byteWaiters.filter((w) => w.ticket !== ticket)
      for (const w of own) w.grant()
    }
    if (ticket.reading === 'yes') {
      org.reading--
      this.#freeSlot()
    }
    ticket.reading = 'done'
    ticket.probe = null
    if (wasReader) this.#wakeByteWaiters()
  }

  /** Passes a freed reading slot to the next waiting org in turn that is under its share. */
  #freeSlot (): void {
    if (this.#turn.length === 0) {
      this.#reading--
      return
    }
    const share = this.#slotShare()
    let at = this.#turn.findIndex((id) => this.#orgs.get(id)!.reading < share)
    if (at === -1) at = 0 // every waiting org holds its share: no one else waits for this slot
    const orgId = this.#turn[at]
    const org = this.#orgs.get(orgId)!
    const waiter = org.waiting.shift()!
    this.#waitingCount--
    this.#turn.splice(at, 1)
    if (org.waiting.length > 0) this.#turn.push(orgId) // to the back of the turn
    this.#reading-- // handed over: #grantSlot counts it again
    this.#grantSlot(waiter.ticket, org)
    waiter.grant()
  }

  #takeReadingBytes (ticket: Ticket, n: number, headers: Record<string, string>): Promise<void> | undefined {
    const first = this.#readers.values().next().value === ticket
    // A body of an org within its share does not queue behind the others' (#passesDrain).
    if (first || ((this.#byteWaiters.length === 0 || this.#passesDrain(ticket.orgId, 0)) && this.#roomToRead(n, ticket))) {
      this.#readingBytes += n
      ticket.readBytes += n
      return undefined
    }
    return new Promise<void>((resolve, reject) => {
      const cancelTimer = this.#setTimer(() => {
        this.#byteWaiters = this.#byteWaiters.filter((w) => w !== waiter)
        reject(this.#reject('server_busy', 'The server is decoding as many request bytes as it can take; retry shortly', busyRetryAfterS, headers))
      }, this.#limits.maxReadingWaitMs)
      const waiter: ByteWaiter = { ticket, bytes: n, grant: () => { cancelTimer(); resolve() } }
      this.#byteWaiters.push(waiter)
    })
  }

  /** The first reader never waits: it always finishes, and frees room for the others. */
  #fitsReading (ticket: Ticket, n: number): boolean {
    return this.#roomToRead(n, ticket) || this.#readers.values().next().value === ticket
  }

  /**
   * Room for `n` more decoded bytes of `ticket`: within maxReadingBytes, and the writer is not
   * holding writes for want of room, unless the ticket's org passes that (#passesDrain). Bodies
   * read while the writer is full would only wait as parsed rows, in memory, for their turn: under
   * overload that doubled the bytes held (bench/README.md).
   */
  #roomToRead (n: number, ticket: Ticket): boolean {
    return this.#readingBytes + n <= this.#limits.maxReadingBytes &&
      (!this.#options.writerNeedsDrain() || this.#passesDrain(ticket.orgId, 0))
  }

  /** The writer finished an insert: bodies that waited for it to make room may read on. */
  writerProgressed (): void {
    this.#wakeByteWaiters()
  }

  #wakeByteWaiters (): void {
    while (this.#byteWaiters.length > 0) {
      // The first reader jumps the queue; otherwise first come first served, except that a body
      // of an org within its share passes those the writer's backlog holds back (#passesDrain).
      const first = this.#readers.values().next().value
      let at = this.#byteWaiters.findIndex((w) => w.ticket === first)
      if (at === -1) at = 0
      if (!this.#fitsReading(this.#byteWaiters[at].ticket, this.#byteWaiters[at].bytes)) {
        at = this.#byteWaiters.findIndex((w) => this.#passesDrain(w.ticket.orgId, 0) && this.#fitsReading(w.ticket, w.bytes))
        if (at === -1) return
      }
      const w = this.#byteWaiters[at]
      this.#byteWaiters.splice(at, 1)
      this.#readingBytes += w.bytes
      w.ticket.readBytes += w.bytes
      w.grant()
    }
  }

  #org (orgId: string): OrgState {
    let org = this.#orgs.get(orgId)
    if (org === undefined) {
      org = { tickets: 0, reading: 0, bytes: 0, waiting: [] }
      this.#orgs.set(orgId, org)
    }
    return org
  }

  #forgetIfIdle (orgId: string): void {
    const org = this.#orgs.get(orgId)
    if (org !== undefined && org.tickets === 0 && org.reading === 0 && org.waiting.length === 0) this.#orgs.delete(orgId)
  }

  #reject (code: RejectReason, message: string, retryAfter: number, headers: Record<string, string>): SluiceError {
    this.#options.onReject?.(code)
    return new SluiceError(code, message, { retryAfter, headers })
  }
}
