// Micro-benchmark of the parse worker, in this thread (no pool, no transfer): how many lines a
// second one core turns into RowBinary rows. Input: seeded ~200-byte mixed-format lines from
// payload.ts, packed into 120 KiB tasks (config ingest.taskBytes) as the ingest pipeline sends them.
//
//   node bench/parse.bench.ts [lines=200000] [rounds=10]
//
// Latest, on a 2-vCPU AMD EPYC VM with Node 24.21.0 (its neighbours make runs vary by 5-40%; the
// best medians are the quiet ones), session 5 with the line scanner (lib/ingest/line-scanner.ts):
// 820,000-990,000 lines/s, 1.0-1.2 µs per line, against 600,000-630,000 (1.6 µs) for the same
// lines through JSON.parse on the same host the same hour. From a --cpu-prof of this benchmark:
// about 35% reading lines (strings, keys, numbers), 22% reading and unescaping `log` strings and
// the objects they hold, 20% writing the RowBinary rows; the rest is this benchmark's set-up and GC.
import { cpus } from 'node:os'
import parseTask from '../lib/ingest/parse-worker.ts'
import type { ParseTask } from '../lib/ingest/parse-task.ts'
import { generateLines } from './payload.ts'

const taskBytes = 120 * 1024
const lineCount = Number(process.argv[2] ?? 200_000)
const rounds = Number(process.argv[3] ?? 10)
const receivedAt = Date.now()
const day = 86_400_000

function packTasks (lines: string[]): ParseTask[] {
  const tasks: ParseTask[] = []
  let chunk: string[] = []
  let size = 0
  let firstLine = 1
  const flush = (): void => {
    tasks.push({
      input: new TextEncoder().encode(chunk.join('\n') + '\n').buffer,
      firstLine,
      orgId: 'org_bench',
      stream: 'web',
      receivedAt,
      minTs: receivedAt - 30 * day,
      maxTs: receivedAt + 2 * day,
      seqBase: 0,
      live: null,
    })
    firstLine += chunk.length
    chunk = []
    size = 0
  }
  for (const line of lines) {
    const bytes = Buffer.byteLength(line) + 1
    if (size + bytes > taskBytes && chunk.length > 0) flush()
    chunk.push(line)
    size += bytes
  }
  if (chunk.length > 0) flush()
  return tasks
}

const tasks = packTasks(generateLines(lineCount, 42, receivedAt))
const inputBytes = tasks.reduce((sum, task) => sum + task.input.byteLength, 0)

function runRound (): { lines: number, outputBytes: number } {
  let lines = 0
  let outputBytes = 0
  for (const task of tasks) {
    const result = parseTask(task)
    lines += result.ingested + result.failed
    outputBytes += result.rows.byteLength
  }
  return { lines, outputBytes }
}

// Warm-up: let the JIT settle before timing.
const check = runRound()
if (check.lines !== lineCount) throw new Error(`expected ${lineCount} lines, parsed ${check.lines}`)
runRound()

const rates: number[] = []
for (let i = 0; i < rounds; i++) {
  const start = process.hrtime.bigint()
  runRound()
  const seconds = Number(process.hrtime.bigint() - start) / 1e9
  rates.push(lineCount / seconds)
}
rates.sort((a, b) => a - b)
const median = rates[Math.floor(rates.length / 2)]
const bytesPerLine = inputBytes / lineCount

console.log(`${cpus()[0].model}, Node ${process.version}`)
console.log(`${lineCount} lines of ${bytesPerLine.toFixed(0)} B in ${tasks.length} tasks of 120 KiB; ${rounds} rounds`)
console.log(`median ${Math.round(median).toLocaleString('en')} lines/s, ${(median * bytesPerLine / 1e6).toFixed(1)} MB/s in ` +
  `(min ${Math.round(rates[0]).toLocaleString('en')}, max ${Math.round(rates[rates.length - 1]).toLocaleString('en')} lines/s); ` +
  `${(check.outputBytes / inputBytes).toFixed(2)} B of RowBinary per input byte`)
