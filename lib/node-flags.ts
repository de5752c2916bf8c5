// The Node/V8 flags Sluice's server process runs with: `npm start`, `npm run sluice` and the
// `sluice` bin (its shebang) pass them, and the benchmarks start Sluice with them, so that what is
// measured is what runs. A test checks that package.json and the shebang carry every one.
//
// --max-semi-space-size=8 (MiB): on a machine with 24 GiB, V8 lets the main thread's young
// generation grow to two semi-spaces of 32 MiB, and under overload (thousands of connections,
// bodies read and refused) the main heap reserved 160-170 MiB with 25-30 MiB live; Sluice's
// peak RSS was 551-616 MiB against the 512 MiB target. With 16 MiB semi-spaces 474-558 MiB
// (558 after the full benchmark's earlier phases), with 8 MiB 424-463. Throughput at saturation
// showed no cost beyond the host's spread (bench/README.md, finding 16).
//
// The flag is V8's, so it would bind worker threads too, and it wins over a worker's
// resourceLimits: the parse workers with their live-tail work then spent 0.8-1.3 CPU-s per 1M
// events more with ten tails attached instead of 0.45. V8 reads it when it creates an isolate,
// so forMainThreadOnly() resets it once the main thread runs: workers created afterwards get
// V8's own sizing (checked by test/node-flags.test.ts).
import { setFlagsFromString } from 'node:v8'
export const serverNodeFlags: readonly string[] = ['--max-semi-space-size=8']

/** Lets worker threads created from now on size their young generation as V8 would by default. */
export function forMainThreadOnly (): void {
  setFlagsFromString('--max-semi-space-size=0')
}
