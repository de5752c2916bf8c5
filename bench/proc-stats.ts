// CPU and memory of the benchmark's processes, read from Linux /proc, so that a process we only
// spawned (Sluice, ClickHouse) can be measured from outside:
// - /proc/<pid>/stat: utime + stime of the whole process, in clock ticks;
// - /proc/<pid>/task/<tid>/stat: the same per thread; the thread's name (comm) tells Node's
//   threads apart: `MainThread`, `WorkerThread` (worker_threads: the parse pool), `libuv-worker`
//   (the thread pool: zlib, fs), `V8Worker` (GC and compiler helpers), the rest as `other`;
// - /proc/stat: the whole machine, to tell how much CPU other processes took during a run
//   (this machine is shared; a busy neighbour explains a slow run);
// - /proc/<pid>/status: VmRSS now and VmHWM (peak), the peak reset by writing 5 to clear_refs.
import { execFileSync } from 'node:child_process'
import { readdirSync, readFileSync, writeFileSync } from 'node:fs'

/** Clock ticks per second of the tick counts in /proc (USER_HZ); 100 on every common kernel. */
export const ticksPerSecond = ((): number => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100
  } catch {
    return 100
  }
})()

/** utime + stime of a /proc stat line, in ticks. The name field may hold spaces: skip past ')'. */
function ticksOfStatLine (line: string): number {
  const fields = line.slice(line.lastIndexOf(')') + 2).split(' ')
  return Number(fields[11]) + Number(fields[12]) // fields 14 and 15 of proc(5), counted from 1
}

/** CPU seconds the process has used so far (all its threads), or NaN when it is gone. */
export function processCpuSeconds (pid: number): number {
  try {
    return ticksOfStatLine(readFileSync(`/proc/${pid}/stat`, 'utf8')) / ticksPerSecond
  } catch {
    return NaN
  }
}

export const threadGroups = ['main', 'workers', 'libuv', 'v8', 'other'] as const
export type ThreadGroup = typeof threadGroups[number]

function groupOf (comm: string): ThreadGroup {
  if (comm === 'MainThread' || comm === 'node') return 'main'
  if (comm === 'WorkerThread') return 'workers'
  if (comm === 'libuv-worker') return 'libuv'
  if (comm === 'V8Worker') return 'v8'
  return 'other'
}

/** Each live thread of a process: its name (comm) and CPU seconds so far. */
function threadTimes (pid: number): Array<{ comm: string, seconds: number }> {
  let tids: string[]
  try {
    tids = readdirSync(`/proc/${pid}/task`)
  } catch {
    return []
  }
  const out: Array<{ comm: string, seconds: number }> = []
  for (const tid of tids) {
    try {
      const comm = readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim()
      out.push({ comm, seconds: ticksOfStatLine(readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8')) / ticksPerSecond })
    } catch {
      // the thread ended between readdir and read
    }
  }
  return out
}

/**
 * CPU seconds per thread group of a live process. Threads that exited are missing, so use the
 * differences of two readings only for threads that live through the run (the pool's do).
 */
export function threadCpuSeconds (pid: number): Record<ThreadGroup, number> {
  const out: Record<ThreadGroup, number> = { main: 0, workers: 0, libuv: 0, v8: 0, other: 0 }
  for (const { comm, seconds } of threadTimes(pid)) out[groupOf(comm)] += seconds
  return out
}

/**
 * CPU seconds so far of a live process's threads named `comm`, e.g. ClickHouse's merge threads
 * (`BackgrProcPool`, long-lived, so differences of two readings hold).
 */
export function namedThreadCpuSeconds (pid: number, comm: string): number {
  let total = 0
  for (const thread of threadTimes(pid)) if (thread.comm === comm) total += thread.seconds
  return total
}

/** Busy and total CPU seconds of the whole machine so far (all cores). */
export function machineCpuSeconds (): { busy: number, total: number } {
  const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]
  const [user, nice, system, idle, iowait, irq, softirq, steal] = line.trim().split(/\s+/).slice(1).map(Number)
  const busy = user + nice + system + irq + softirq + steal
  return { busy: busy / ticksPerSecond, total: (busy + idle + iowait) / ticksPerSecond }
}

function statusKiB (pid: number, field: 'VmRSS' | 'VmHWM'): number {
  try {
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
    return match ? Number(match[1]) : NaN
  } catch {
    return NaN
  }
}

/** Resident memory now, in bytes. */
export function rssBytes (pid: number): number {
  return statusKiB(pid, 'VmRSS') * 1024
}

/** Peak resident memory since the start or the last resetPeakRss(), in bytes. */
export function peakRssBytes (pid: number): number {
  return statusKiB(pid, 'VmHWM') * 1024
}

/** Starts a new peak (Linux >= 4.0; needs to own the process). Returns whether it could. */
export function resetPeakRss (pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5')
    return true
  } catch {
    return false
  }
}

/** Samples VmRSS every `intervalMs` until stop(), and resets VmHWM at the start. */
export class RssSampler {
  #pid: number
  #timer: NodeJS.Timeout
  #max = 0
  #hasPeakReset: boolean

  constructor (pid: number, intervalMs = 100) {
    this.#pid = pid
    this.#hasPeakReset = resetPeakRss(pid)
    this.#timer = setInterval(() => {
      const rss = rssBytes(this.#pid)
      if (rss > this.#max) this.#max = rss
    }, intervalMs)
  }

  /** Peak RSS in bytes since construction: sampled, and the kernel's VmHWM (NaN without reset). */
  stop (): { sampled: number, hwm: number } {
    clearInterval(this.#timer)
    return {
      sampled: Math.max(this.#max, rssBytes(this.#pid) || 0),
      hwm: this.#hasPeakReset ? peakRssBytes(this.#pid) : NaN,
    }
  }
}
