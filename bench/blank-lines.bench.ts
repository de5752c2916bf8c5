// Framing cost of blank-line bodies (issue 13 hole 10): 64 MiB of each pattern through the line
// framer, split2 and the batcher, with the time, the lines counted and what would go to the
// workers. Run: node bench/blank-lines.bench.ts
import { Readable, Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { createLineSplitter } from '../lib/ingest/line-splitter.ts'
import { LineBatcher } from '../lib/ingest/line-batcher.ts'
const MiB = 1024 * 1024
async function * gen (chunk: Buffer, n: number) { for (let i = 0; i < n; i++) yield chunk }
for (const [name, unit] of [['LF', '\n'], ['CRLF', '\r\n'], ['sp-LF', ' \n'], ['LFx15+{}', '\n'.repeat(15) + '{}\n'], ['LFx63+{}', '\n'.repeat(63) + '{}\n'], ['LFx255+{}', '\n'.repeat(255) + '{}\n'], ['json', '{"a":1,"path":"/x"}\n']] as const) {
  const block = Buffer.alloc(MiB, unit)
  const t0 = performance.now()
  const batcher = new LineBatcher({ onFailure: () => {} })
  let batches = 0; let bytes = 0
  await pipeline(Readable.from(gen(block, 64), { objectMode: false }), ...createLineSplitter({ batcher }), new Writable({ objectMode: true, write (b, _e, cb) { batches++; bytes += b.input.byteLength; cb() } }))
  console.log(name, (performance.now() - t0).toFixed(0), 'ms', 'lines', batcher.lineCount, 'batches', batches, 'bytes', bytes)
}
