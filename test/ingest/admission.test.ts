// Admission's fair shares between orgs, with numbers: reading slots handed round-robin to the
// waiting orgs under their share, slow bodies of an org over its share cut when others wait,
// uncommitted bytes shared, reading bytes bounded without deadlock. Timers are the test's own.
import t from 'tap'
import { Admission } from '../../lib/ingest/admission.ts'
import type { AdmissionTicket } from '../../lib/ingest/admission.ts'
import { loadConfig } from '../../lib/config.ts'
import type { Config } from '../../lib/config.ts'
import { SluiceError } from '../../lib/errors.ts'

function limits (over: Partial<Config['limits']>): Config['limits'] {
  return { ...loadConfig({ env: {} }).limits, requestsPerMinute: 1_000_000, concurrentRequests: 1000, ...over }
}

/** An Admission whose wait deadlines fire only when the test says so. */
function setup (over: Partial<Config['limits']>, writerPendingBytes = 0, writer = { needsDrain: false, stalled: false }) {
  const timers = new Set<() => void>()
  const admission = new Admission({
    limits: limits(over),
    writerPendingBytes: () => writerPendingBytes,
    writerNeedsDrain: () => writer.needsDrain,
    writerStalled: () => writer.stalled,
    setTimer: (fn) => { timers.add(fn); return () => { timers.delete(fn) } },
  })
  const fireTimers = (): void => { for (const fn of [...timers]) { timers.delete(fn); fn() } }
  return { admission, fireTimers }
}

/** Starts reading; `granted` tells, after a tick, whether the slot came. */
function read (ticket: AdmissionTicket) {
  const state = { granted: false, error: null as unknown }
  ticket.startReading().then(() => { state.granted = true }, (err: unknown) => { state.error = err })
  return state
}

const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve))

t.test('a freed slot goes to the waiting org under its share, round-robin, not to the org holding them all', async (t) => {
  const { admission } = setup({ maxReadingRequests: 4 })
  const a = Array.from({ length: 6 }, () => admission.admit('A', 'a'))
  const aReads = a.map(read)
  await tick()
  t.same(aReads.map((r) => r.granted), [true, true, true, true, false, false], 'A takes every slot while no one else waits')
  const b = Array.from({ length: 2 }, () => admission.admit('B', 'b'))
  const c = admission.admit('C', 'c')
  const bReads = b.map(read)
  const cRead = read(c)
  await tick()
  t.equal(admission.waitingRequests, 5)
  // Three orgs: a share is ceil(4 / 3) = 2 slots. A's freed slots go to B and C in turn.
  a[0].release()
  await tick()
  t.same([bReads[0].granted, cRead.granted, aReads[4].granted], [true, false, false], 'B first (it queued before C)')
  a[1].release()
  await tick()
  t.equal(cRead.granted, true, 'then C')
  a[2].release()
  await tick()
  // A holds 1, B 1, C 1: A and B are under the share of 2, and A has waited its turn longest.
  t.same([aReads[4].granted, bReads[1].granted], [true, false])
  t.same([admission.readingOf('A'), admission.readingOf('B'), admission.readingOf('C')], [2, 1, 1])
  a[3].release()
  await tick()
  t.same([bReads[1].granted, aReads[5].granted], [true, false], 'then B again')
  for (const x of [...a, ...b, c]) x.release()
  await tick()
  t.equal(aReads[5].granted, true, 'the last waiter gets a slot once others are done')
  a[5].release()
  t.equal(admission.readingRequests, 0)
  t.equal(admission.waitingRequests, 0)
})

t.test('a wait past maxReadingWaitMs is 429 server_busy; an aborted wait ends with its reason', async (t) => {
  const { admission, fireTimers } = setup({ maxReadingRequests: 1 })
  const holder = admission.admit('A', 'a')
  await holder.startReading()
  const late = read(admission.admit('B', 'b'))
  const gone = admission.admit('C', 'c')
  const left = new AbortController()
  const goneRead = gone.startReading(left.signal).then(() => null, (err: unknown) => err)
  await tick()
  t.equal(admission.waitingRequests, 2)
  left.abort(new Error('client left'))
  t.match(await goneRead, { message: 'client left' })
  t.equal(admission.waitingRequests, 1)
  fireTimers()
  await tick()
  t.ok(late.error instanceof SluiceError && late.error.code === 'server_busy')
  t.equal(admission.waitingRequests, 0)
  holder.release()
  t.equal(admission.readingRequests, 0)
})

t.test('when another org waits, a body of an org over its share that lags the minimum rate is cut', async (t) => {
  const { admission } = setup({ maxReadingRequests: 2 })
  const cut: string[] = []
  const slow = [admission.admit('A', 'a'), admission.admit('A', 'a')]
  for (const [i, ticket] of slow.entries()) {
    await ticket.startReading()
    ticket.setRateProbe({ isBehind: () => i === 1, cut: () => { cut.push(`A${i}`); ticket.release() } })
  }
  const b = read(admission.admit('B', 'b'))
  await tick()
  t.same(cut, ['A1'], 'the lagging body is cut, the one keeping up is not')
  t.equal(b.granted, true, 'and its slot goes to B')
  t.same([admission.readingOf('A'), admission.readingOf('B')], [1, 1])
})

t.test('uncommitted bytes: an org within its share is admitted while another holds the budget', async (t) => {
  const { admission } = setup({ maxUncommittedBytes: 1000 })
  const a = [admission.admit('A', 'a', 600), admission.admit('A', 'a', 400)]
  t.equal(admission.uncommittedBytes, 1000)
  t.throws(() => admission.admit('A', 'a', 1), { code: 'server_busy' }, 'A is at the limit')
  // Two orgs: a share is 500. A holds 500 beyond it, which does not count against B.
  const b = admission.admit('B', 'b', 500)
  t.equal(admission.uncommittedBytes, 1500)
  t.throws(() => admission.admit('B', 'b', 1), { code: 'server_busy' }, 'but not beyond its own share')
  t.throws(() => admission.admit('A', 'a', 1), { code: 'server_busy' })
  for (const x of [...a, b]) x.release()
  t.equal(admission.uncommittedBytes, 0)
  t.doesNotThrow(() => admission.admit('A', 'a', 1000).release(), 'one org alone may use it all')
})

t.test('the writer\'s backlog: an org within its share is admitted and reads past it, unless the writer is stalled', async (t) => {
  const writer = { needsDrain: false, stalled: false }
  const { admission, fireTimers } = setup({ maxUncommittedBytes: 1000, maxReadingBytes: 100 }, 0, writer)
  // A's bodies are read and with the writer; its bytes count until they are answered.
  const a = admission.admit('A', 'a', 900)
  await a.startReading()
  a.releaseBytes()
  const reader = admission.admit('A', 'a')
  await reader.startReading()
  const second = admission.admit('A', 'a')
  await second.startReading()
  writer.needsDrain = true
  t.throws(() => admission.admit('A', 'a', 10), { code: 'server_busy' }, 'the org whose rows fill the writer')
  t.equal(reader.addBytes(10), undefined, 'the first reader reads on')
  const held = second.addBytes(10)
  t.ok(held instanceof Promise, 'A\'s other bodies wait for the writer')
  const b = admission.admit('B', 'b', 100)
  await b.startReading()
  t.equal(b.addBytes(50), undefined, 'B, within its share (500), reads past A\'s waiting body')
  t.throws(() => admission.admit('B', 'b', 401), { code: 'server_busy' }, 'but not beyond its share')
  writer.stalled = true
  t.throws(() => admission.admit('C', 'c', 10), { code: 'server_busy' }, 'a stalled writer refuses every org')
  writer.stalled = false
  writer.needsDrain = false
  admission.writerProgressed()
  await held
  fireTimers()
  for (const x of [a, reader, second, b]) x.release()
  t.equal(admission.uncommittedBytes, 0)
})

t.test('uncommitted bytes: no org is admitted past twice the limit, within its share or not', async (t) => {
  let writerBytes = 0
  const admission = new Admission({ limits: limits({ maxUncommittedBytes: 1000 }), writerPendingBytes: () => writerBytes, writerNeedsDrain: () => false })
  const a = admission.admit('A', 'a', 0)
  // The writer then holds 1,950 bytes of A's rows (A's request not answered yet); the limit is 1,000.
  writerBytes = 1950
  t.doesNotThrow(() => admission.admit('B', 'b', 50).release(), 'B within its share: 2,000 in all')
  t.throws(() => admission.admit('B', 'b', 51), { code: 'server_busy' }, 'past twice the limit')
  a.release()
})

t.test('reading bytes: past maxReadingBytes a body waits, the first reader never does, and each wakes in turn', async (t) => {
  const { admission, fireTimers } = setup({ maxReadingBytes: 100 })
  const [first, second, third] = ['A', 'B', 'C'].map((org) => admission.admit(org, org))
  for (const x of [first, second, third]) await x.startReading()
  t.equal(second.addBytes(80), undefined, 'fits')
  const thirdWaits = third.addBytes(40)
  t.ok(thirdWaits instanceof Promise, 'does not fit: waits')
  t.equal(first.addBytes(500), undefined, 'the first reader passes whatever the total')
  t.equal(admission.readingBytes, 580)
  let woke = false
  void thirdWaits!.then(() => { woke = true })
  first.releaseBytes() // its body is read: 500 bytes back
  await tick()
  t.equal(woke, false, '80 + 40 is still over 100')
  second.releaseBytes()
  await tick()
  t.equal(woke, true, 'woken once it fits (or is the first reader)')
  t.equal(admission.readingBytes, 40)
  const late = admission.admit('D', 'd')
  await late.startReading()
  third.addBytes(60)
  const timedOut = late.addBytes(10)!.then(() => null, (err: unknown) => err)
  fireTimers()
  t.match(await timedOut, { code: 'server_busy' })
  for (const x of [first, second, third, late]) x.release()
  t.equal(admission.readingBytes, 0)
  t.equal(admission.uncommittedBytes, 0)
})

t.test('a body that starts to lag while another org waits is cut then, not only when the wait starts', async (t) => {
  const { admission } = setup({ maxReadingRequests: 2 })
  const cut: number[] = []
  const slow = [admission.admit('A', 'a'), admission.admit('A', 'a')]
  for (const [i, ticket] of slow.entries()) {
    await ticket.startReading()
    ticket.setRateProbe({ isBehind: () => false, cut: () => { cut.push(i); ticket.release() } })
  }
  slow[0].reportBehind()
  t.same(cut, [], 'no one waits: it keeps its slot')
  const b = read(admission.admit('B', 'b'))
  await tick()
  t.same(cut, [], 'B waits; neither body lags yet')
  slow[1].reportBehind()
  await tick()
  t.same(cut, [1], 'cut as soon as it lags')
  t.equal(b.granted, true)
  slow[0].reportBehind()
  t.same(cut, [1], 'A is down to its share of 1: not cut')
})

t.test('idleMs: 0 while a request reads or waits, then the time since the last one stopped (a read\'s idle threads)', async (t) => {
  let now = 1_000_000
  let pending = 0
  const admission = new Admission({
    limits: limits({ maxReadingRequests: 1 }),
    writerPendingBytes: () => pending,
    writerNeedsDrain: () => false,
    now: () => now,
    setTimer: () => () => {},
  })
  t.ok(admission.idleMs() >= 1_000_000, 'never busy: idle since forever')
  const a = admission.admit('A', 'a')
  await a.startReading()
  const b = admission.admit('B', 'b')
  const bRead = read(b)
  now += 5000
  t.equal(admission.idleMs(), 0, 'reading')
  a.release()
  await tick()
  t.equal(bRead.granted, true)
  now += 300
  t.equal(admission.idleMs(), 0, 'the waiter reads now')
  b.release()
  now += 700
  t.equal(admission.idleMs(), 700, 'since the last request stopped reading')
  pending = 100
  t.equal(admission.idleMs(), 0, 'bytes accepted and not yet committed count as busy')
})
