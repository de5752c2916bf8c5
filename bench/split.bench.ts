// Main-thread cost of framing a decoded body into worker tasks: line-splitter.ts (line-framer.ts,
// split2, line-batcher.ts), as the ingest route runs it. Input: a synthetic NDJSON body of
// seeded ~200-byte lines (payload.ts), fed in 256 KiB chunks as the decoder emits them (64 KiB is
// what a socket gives an identity body); `array` sends them as one JSON array, as Vector does.
//
//   node bench/split.bench.ts [megabytes=100] [rounds=5] [chunkKiB=256] [ndjson|array]
import { cpus } from 'node:os'
import { Readable, Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { createLineSplitter } from '../lib/ingest/line-splitter.ts'
import { LineBatcher } from '../lib/ingest/line-batcher.ts'
import type { LineBatch } from '../lib/ingest/line-batcher.ts'
import { generateLines } from './payload.ts'

const megabytes = Number(process.argv[2] ?? 100)
const rounds = Number(process.argv[3] ?? 5)
const chunkBytes = Number(process.argv[4] ?? 256) * 1024
const isArray = process.argv[5] === 'array'

/** 20,000 distinct lines repeated up to the size asked for; repetition does not help a splitter. */
function makeBody (bytes: number): { chunks: Buffer[], lines: number } {
  const sample = generateLines(20_000, 42)
  const lines: string[] = []
  for (let size = 0, i = 0; size < bytes; i++) {
    lines.push(sample[i % sample.length])
    size += sample[i % sample.length].length + 1
  }
  const body = Buffer.from(isArray ? `[${lines.join(',\n')}]` : lines.join('\n') + '\n')
  const chunks: Buffer[] = []
  for (let at = 0; at < body.length; at += chunkBytes) chunks.push(body.subarray(at, at + chunkBytes))
  return { chunks, lines: lines.length }
}

async function runRound (chunks: Buffer[]): Promise<number> {
  let lines = 0
  const batcher = new LineBatcher({ onFailure: () => {} })
  await pipeline(Readable.from(chunks, { objectMode: false }), ...createLineSplitter({ batcher }), new Writable({
    objectMode: true,
    write (batch: LineBatch, _encoding, callback) { lines += batch.lineCount; callback() },
  }))
  return lines
}

const { chunks, lines } = makeBody(megabytes * 1_000_000)
const check = await runRound(chunks)
if (check !== lines) throw new Error(`expected ${lines} lines, framed ${check}`)

const rates: number[] = []
for (let i = 0; i < rounds; i++) {
  const start = process.hrtime.bigint()
  await runRound(chunks)
  rates.push(lines / (Number(process.hrtime.bigint() - start) / 1e9))
}
rates.sort((a, b) => a - b)
const median = rates[Math.floor(rates.length / 2)]
const bytesPerLine = megabytes * 1e6 / lines
console.log(`${cpus()[0].model}, Node ${process.version}`)
console.log(`${megabytes} MB ${isArray ? 'JSON array' : 'NDJSON'} body, ${lines} lines of ${bytesPerLine.toFixed(0)} B, ` +
  `${chunkBytes / 1024} KiB chunks; ${rounds} rounds`)
console.log(`median ${Math.round(median).toLocaleString('en')} lines/s, ${(median * bytesPerLine / 1e6).toFixed(0)} MB/s ` +
  `(min ${Math.round(rates[0]).toLocaleString('en')}, max ${Math.round(rates[rates.length - 1]).toLocaleString('en')} lines/s)`)
