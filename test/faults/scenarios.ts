// The fault scenarios, parameterized by duration: the CI tests (test/faults/*.test.ts) run them
// short, `npm run soak` (test/faults/soak.ts) long. Each runs sequence-numbered load through
// Sluice (a child process) while the fault happens, then classifies every event with check().
import { readFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { request } from 'undici'
import { createLogger } from '../../lib/logger.ts'
import { startManagedClickHouse } from '../../lib/storage/managed-clickhouse.ts'
import type { ManagedClickHouse } from '../../lib/storage/managed-clickhouse.ts'
import { check, checkerClient, createStream, runLoad, sleep, startSluiceProcess } from './harness.ts'
import type { CheckResult, LoadOptions, LoadResult, SluiceProcess } from './harness.ts'
import { waitFor } from '../helpers/wait-for.ts'

export interface ScenarioResult extends CheckResult {
  scenario: string
  /** Answers to /readyz probes that ran wholly during the fault (probesDuring): status and ms. */
  readyz?: Array<{ status: number, ms: number }>
}

/** A ClickHouse of the scenario's own, supervised by the test process, in a temporary directory. */
export async function ownClickHouse (restart: boolean): Promise<{ ch: ManagedClickHouse, cleanup: () => Promise<void> }> {
  const dataDir = await mkdtemp(join(tmpdir(), 'sluice-faults-ch-'))
  const ch = await startManagedClickHouse({ dataDir, startTimeoutMs: 60_000, log: createLogger({ level: 'silent' }), restart })
  return {
    ch,
    async cleanup () {
      await ch.stop()
      await rm(dataDir, { recursive: true, force: true })
    },
  }
}

interface LoadShape { clients: number, linesPerRequest: number }
const defaultShape: LoadShape = { clients: 4, linesPerRequest: 200 }

/** Starts load, runs `fault` under it, keeps the load going `afterMs`, stops it and checks. */
async function underLoad (
  sluice: () => SluiceProcess, stream: string, token: string, shape: LoadShape,
  fault: () => Promise<void>, afterMs: number, beforeMs = 2_000, load: Pick<LoadOptions, 'giveUpWhenStopped'> = {},
): Promise<LoadResult> {
  let stopped = false
  let firstAcknowledged = (): void => {}
  const acknowledged = new Promise<void>((resolve) => { firstAcknowledged = resolve })
  const result = runLoad({
    url: () => sluice().url, stream, token, ...shape, ...load, stopped: () => stopped,
    onAnswer: (answer) => { if (answer.status === 200) firstAcknowledged() },
  })
  // Steady state before the fault: `beforeMs` of load and a first event acknowledged (a loaded CI
  // machine once took over 2 s for it, and a fault before it tests nothing). Bounded: a Sluice that
  // acknowledges nothing meets the fault after a minute, and the checks say so.
  await sleep(beforeMs)
  let bound: NodeJS.Timeout | undefined
  await Promise.race([acknowledged, new Promise<void>((resolve) => { bound = setTimeout(resolve, 60_000) })])
  clearTimeout(bound)
  await fault()
  await sleep(afterMs)
  stopped = true
  return result
}

/** Probes /readyz every `everyMs` until `until()`; records each answer's status, time, and when it ran (performance.now()). */
async function probeReadyz (url: string, until: () => boolean, everyMs: number): Promise<ReadyzProbe[]> {
  const out: ReadyzProbe[] = []
  while (!until()) {
    const started = performance.now()
    let status = 0
    try {
      const res = await request(`${url}/readyz`, { headersTimeout: 30_000, bodyTimeout: 30_000 })
      await res.body.dump()
      status = res.statusCode
    } catch {}
    const ended = performance.now()
    out.push({ status, ms: Math.round(ended - started), started, ended })
    await sleep(everyMs)
  }
  return out
}

interface ReadyzProbe { status: number, ms: number, started: number, ended: number }

/**
 * The probes that ran wholly inside the stop, from `settleMs` after SIGSTOP (the signal stops
 * every thread of the server only once the kernel has delivered it) to SIGCONT: a probe that
 * began before the stop took hold, or was answered after SIGCONT, may rightly say 200.
 */
function probesDuring (probes: ReadyzProbe[], stoppedAt: number, resumedAt: number, settleMs = 300): Array<{ status: number, ms: number }> {
  return probes.filter((p) => p.started >= stoppedAt + settleMs && p.ended <= resumedAt).map(({ status, ms }) => ({ status, ms }))
}

/**
 * ClickHouse SIGSTOPped for `stopMs` under load, then SIGCONT. Sluice's writer has
 * retryTimeoutMs and attemptTimeoutMs as given; /readyz is probed during the stop.
 */
export async function hungClickHouse (o: { stopMs: number, retryTimeoutMs: number, attemptTimeoutMs: number, afterMs?: number, shape?: LoadShape }): Promise<ScenarioResult> {
  const { ch, cleanup } = await ownClickHouse(false)
  let sluice: SluiceProcess | undefined
  try {
    sluice = await startSluiceProcess({
      clickhouseUrl: ch.url, config: { writer: { retryTimeoutMs: o.retryTimeoutMs, attemptTimeoutMs: o.attemptTimeoutMs } },
    })
    const s = sluice
    const token = await createStream(s.url, s.adminToken, 'hung')
    let readyz: Array<{ status: number, ms: number }> = []
    const load = await underLoad(() => s, 'hung', token, o.shape ?? defaultShape, async () => {
      process.kill(ch.pid!, 'SIGSTOP')
      const stoppedAt = performance.now()
      let resumed = false
      const probes = probeReadyz(s.url, () => resumed, 500)
      await sleep(o.stopMs)
      process.kill(ch.pid!, 'SIGCONT')
      const resumedAt = performance.now()
      resumed = true
      readyz = probesDuring(await probes, stoppedAt, resumedAt)
    }, o.afterMs ?? 3_000)
    const checker = checkerClient(ch.url, s.database)
    try {
      return { scenario: `ClickHouse SIGSTOP ${o.stopMs} ms (retry ${o.retryTimeoutMs} ms, attempt ${o.attemptTimeoutMs} ms)`, ...await check(checker, 'hung', await load), readyz }
    } finally {
      await checker.close()
    }
  } finally {
    try { process.kill(ch.pid!, 'SIGCONT') } catch {}
    await sluice?.stop()
    await cleanup()
  }
}

/** ClickHouse (not Sluice's) SIGKILLed `kills` times under load; its supervisor restarts it on the same port. */
export async function killedClickHouse (o: { kills: number, betweenMs: number, afterMs?: number, shape?: LoadShape }): Promise<ScenarioResult> {
  const { ch, cleanup } = await ownClickHouse(true)
  let sluice: SluiceProcess | undefined
  try {
    sluice = await startSluiceProcess({ clickhouseUrl: ch.url })
    const s = sluice
    const token = await createStream(s.url, s.adminToken, 'killed')
    const load = await underLoad(() => s, 'killed', token, o.shape ?? defaultShape, async () => {
      for (let i = 0; i < o.kills; i++) {
        const restarted = new Promise<void>((resolve) => ch.once('restart', () => resolve()))
        process.kill(ch.pid!, 'SIGKILL')
        await restarted
        await sleep(o.betweenMs)
      }
    }, o.afterMs ?? 3_000)
    const checker = checkerClient(ch.url, s.database)
    try {
      return { scenario: `ClickHouse SIGKILLed and restarted x${o.kills}`, ...await check(checker, 'killed', await load) }
    } finally {
      await checker.close()
    }
  } finally {
    await sluice?.stop()
    await cleanup()
  }
}

/** Sluice runs its own ClickHouse; that one is SIGKILLed `kills` times under load and Sluice restarts it. */
export async function killedManagedClickHouse (o: { kills: number, betweenMs: number, afterMs?: number, shape?: LoadShape }): Promise<ScenarioResult> {
  const sluice = await startSluiceProcess({ clickhouseUrl: null })
  try {
    const token = await createStream(sluice.url, sluice.adminToken, 'managed')
    const pidFile = join(sluice.dataDir, 'clickhouse', 'sluice-clickhouse.pid')
    const chPid = (): number => Number(readFileSync(pidFile, 'utf8').trim().split(/\s+/)[0])
    const checker = checkerClient(sluice.clickhouseUrl, sluice.database)
    try {
      const load = await underLoad(() => sluice, 'managed', token, o.shape ?? defaultShape, async () => {
        for (let i = 0; i < o.kills; i++) {
          const before = chPid()
          process.kill(before, 'SIGKILL')
          // Restarted once a new pid answers: the pid file changes at the spawn, the ping follows.
          await waitFor(async () => {
            let now = before
            try { now = chPid() } catch {}
            return now !== before && await checker.ping()
          }, { what: 'the managed ClickHouse to be restarted', timeoutMs: 60_000, intervalMs: 200 })
          await sleep(o.betweenMs)
        }
      }, o.afterMs ?? 3_000)
      return { scenario: `managed ClickHouse SIGKILLed x${o.kills} (Sluice restarts it)`, ...await check(checker, 'managed', await load) }
    } finally {
      await checker.close()
    }
  } finally {
    await sluice.stop()
  }
}

/** Sluice sent `signal` under load, against `clickhouseUrl` (a ClickHouse that outlives it). */
export async function signalledSluice (o: { signal: 'SIGTERM' | 'SIGKILL', clickhouseUrl: string, afterMs?: number, shape?: LoadShape }): Promise<ScenarioResult & { exit: string }> {
  const sluice = await startSluiceProcess({ clickhouseUrl: o.clickhouseUrl })
  const checker = checkerClient(o.clickhouseUrl, sluice.database)
  try {
    const token = await createStream(sluice.url, sluice.adminToken, 'signalled')
    let exit = ''
    const load = await underLoad(() => sluice, 'signalled', token, { ...(o.shape ?? defaultShape) }, async () => {
      sluice.child.kill(o.signal)
      exit = await sluice.exited
    }, o.afterMs ?? 500)
    // Retries against the stopped Sluice are refused: a few give up quickly; cap the wait.
    const result = await check(checker, 'signalled', await load)
    return { scenario: `Sluice ${o.signal} under load`, ...result, exit }
  } finally {
    await checker.command(`DROP DATABASE IF EXISTS \`${sluice.database}\``).catch(() => {})
    await checker.close()
    await sluice.stop()
  }
}

/** Peak resident memory of a process so far (VmHWM), in bytes; 0 when /proc does not say. */
function peakRssBytes (pid: number): number {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
    return m ? Number(m[1]) * 1024 : 0
  } catch {
    return 0
  }
}

/**
 * Overload: `shape.clients` clients each send large bodies back to back (a refused one again
 * after 100 ms) for `durationMs`, far more than the node stores, with the per-org limits lifted
 * so that the server-wide ones (uncommitted bytes, reading slots, the writer's queue) are what
 * push back. Reports the offered/stored ratio and Sluice's peak RSS.
 */
export async function overloadedSluice (o: { clickhouseUrl: string, durationMs: number, shape: LoadShape, limits?: Record<string, number>, settings?: Record<string, Record<string, number>> }): Promise<ScenarioResult & { peakRssBytes: number, offeredPerStored: number, dropCauses: Record<string, number> }> {
  const sluice = await startSluiceProcess({
    clickhouseUrl: o.clickhouseUrl,
    config: { ...o.settings, limits: { concurrentRequests: 100_000, requestsPerMinute: 10_000_000, ...o.limits } },
  })
  const checker = checkerClient(o.clickhouseUrl, sluice.database)
  try {
    const token = await createStream(sluice.url, sluice.adminToken, 'overload')
    const load = await underLoad(() => sluice, 'overload', token, o.shape, () => sleep(o.durationMs), 0, 0, { giveUpWhenStopped: true })
    const peak = peakRssBytes(sluice.child.pid!)
    const result = await check(checker, 'overload', load)
    const stored = result.answerCounts['200'] ?? 0
    const dropCauses: Record<string, number> = {}
    for (const a of load.answers) if (a.cause !== undefined) dropCauses[a.cause] = (dropCauses[a.cause] ?? 0) + 1
    return {
      dropCauses,
      scenario: `overload: ${o.shape.clients} clients x ${o.shape.linesPerRequest} lines for ${o.durationMs} ms`,
      ...result, peakRssBytes: peak, offeredPerStored: stored === 0 ? Infinity : load.answers.length / stored,
    }
  } finally {
    await checker.command(`DROP DATABASE IF EXISTS \`${sluice.database}\``).catch(() => {})
    await checker.close()
    await sluice.stop()
  }
}
