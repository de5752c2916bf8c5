// Micro-benchmark of what tail clients cost the parse worker, in this thread (no pool): µs per
// line of the worker's function (lib/ingest/parse-worker.ts) without a tail, and with the live
// request a stream with tail clients sends (LiveCollector: live stats for every row, each filter
// matched against every row, matching rows serialized up to the filter's cap). Input: seeded
// ~200-byte lines from payload.ts in 570-line tasks (about 120 KiB, as the ingest pipeline sends them).
//
//   node bench/live.bench.ts [lines=100000] [rounds=6]
//
// Caps 0 is what a busy stream's requests mostly get once the second's allowance is spent (the
// matches are still counted, for `dropped`); caps 2000 makes the worker serialize every match.
import { cpus, loadavg } from 'node:os'
import parseTask from '../lib/ingest/parse-worker.ts'
import type { ParseTask } from '../lib/ingest/parse-task.ts'
import type { LiveRequest } from '../lib/live/live-protocol.ts'
import { generateLines } from './payload.ts'

const lineCount = Number(process.argv[2] ?? 100_000)
const rounds = Number(process.argv[3] ?? 6)
const receivedAt = Date.now()
const day = 86_400_000
const linesPerTask = 570

const lines = generateLines(lineCount, 42, receivedAt)
const tasks: Array<Omit<ParseTask, 'live'>> = []
for (let i = 0; i < lines.length; i += linesPerTask) {
  tasks.push({
    input: new TextEncoder().encode(lines.slice(i, i + linesPerTask).join('\n') + '\n').buffer as ArrayBuffer,
    firstLine: 1, orgId: 'org_bench', stream: 'web', receivedAt, minTs: receivedAt - 30 * day, maxTs: receivedAt + 2 * day, seqBase: 0,
  })
}

// The filters of bench/tail.bench.ts's tail clients.
const filtered = ['status:5xx', 'host:api-1.prod.internal', 'path:/api/* status:>=400', 'timeout', 'method:POST -status:2xx']
const all = ['', ...filtered]
const variants: Array<[string, LiveRequest | null]> = [
  ['no tail client', null],
  ['q empty, cap 0: live stats only', { filters: [''], caps: [0] }],
  ...filtered.map((q): [string, LiveRequest] => [`\`${q}\`, cap 0: stats + one filter`, { filters: [q], caps: [0] }]),
  ['the 6 filters of tail.bench.ts, caps 0', { filters: all, caps: all.map(() => 0) }],
  ['q empty, cap 2000: every event serialized', { filters: [''], caps: [2000] }],
  ['the 6 filters, caps 2000: every match serialized', { filters: all, caps: all.map(() => 2000) }],
  // Regular expressions: one as a user writes it, and one of 1,000 states that matches nothing
  // here (its automaton's steps: the line's length x 1,000; the tail's step budget, docs/api.md 7.5).
  ['`message:~"time(out)?"`, cap 0', { filters: ['message:~"time(out)?"'], caps: [0] }],
  ['`message:~"[^z]{999}z"`, cap 0', { filters: ['message:~"[^z]{999}z"'], caps: [0] }],
  ['`message:~"[^z]{999}z"` and `message:~"[^y]{999}y"`, caps 2000', { filters: ['message:~"[^z]{999}z"', 'message:~"[^y]{999}y"'], caps: [2000, 2000] }],
]

const times = new Map<string, number[]>()
for (let round = 0; round <= rounds; round++) {
  for (const [name, live] of variants) {
    const started = performance.now()
    let n = 0
    for (const task of tasks) n += parseTask({ ...task, live }).ingested
    const usPerLine = (performance.now() - started) * 1000 / n
    if (round > 0) times.set(name, [...(times.get(name) ?? []), usPerLine]) // round 0 warms up
  }
}
const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor((values.length - 1) / 2)]
const base = median(times.get('no tail client')!)
console.log(`# parse worker with tail clients: ${lineCount} lines, ${rounds} rounds, Node ${process.version}, ${cpus()[0]?.model ?? 'cpu'}, load avg ${loadavg()[0].toFixed(1)}`)
console.log('| live request | µs/line (median) | more than without a tail |')
console.log('|---|---:|---:|')
for (const [name, values] of times) {
  const us = median(values)
  console.log(`| ${name} | ${us.toFixed(2)} | ${name === 'no tail client' ? '-' : `+${(us - base).toFixed(2)} (+${Math.round((us / base - 1) * 100)}%)`} |`)
}
