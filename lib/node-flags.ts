// The Node/V8 flags and environment Sluice's server process runs with: `npm start`, `npm run sluice` and the
// `sluice` bin (its shebang) pass them, and the benchmarks start Sluice with them, so that what is
// measured is what runs. A test checks that package.json and the shebang carry every one.
//
// --max-semi-space-size=16 (MiB), for the main thread: on a machine with 24 GiB, V8 lets its
// young generation grow to two semi-spaces of 32 MiB, and under overload (thousands of
// connections, bodies read and refused) the main heap reserved 160-170 MiB with 25-30 MiB live;
// Sluice's peak RSS was 551-616 MiB against the 512 MiB target. The flag is V8's, so it binds
// worker threads too, and wins over a worker's resourceLimits; V8 reads it when it creates an
// isolate, so forMainThreadOnly() resets it before the parse pool starts, and the workers get
// workerYoungGenerationMb through resourceLimits instead. Measured (bench/README.md, findings 16
// and 18), ten tail clients' cost to ingest and the peak RSS under overload after the plain and
// gzip runs: 8 MiB for every thread 25.8% and 424-487 MiB; 8 for the main thread, V8's sizing for
// the workers 15.6-22.9% and 520; 16 and V8's sizing 0% and 554; 16 and 2 x 16 MiB for the
// workers (this) 9.6% and 509; no flag 8.5% and 551-616.
//
// MALLOC_ARENA_MAX=2 (environment, read by glibc when the process starts): glibc gives every thread
// that allocates concurrently its own malloc arena, up to 8 per core, and an arena keeps the memory
// freed into it. Sluice's workers allocate the rows' buffers that the main thread frees after the
// insert, libuv's threads the zlib state, V8's threads GC bookkeeping; at the peak under overload
// two of those arenas held 95 MiB. Measured in alternation (bench/README.md, finding 20), peak RSS
// under overload after the plain and gzip runs: 455, 510, 503 MiB with it, 499, 561, 519 without,
// throughput and CPU within the host's noise.
//
// MALLOC_MMAP_THRESHOLD_=262144: glibc serves an allocation of at least this many bytes with its
// own mmap, returned to the kernel when freed. By default the threshold starts at 128 KiB and
// rises to the largest block freed so far, so large request bodies and batches end up inside the
// main thread's heap, which cannot give back a free page below its top. It was 65536 (64 KiB:
// peak RSS under overload 468 / 477 against 513 / 549 MiB, for about 2% more CPU, finding 22),
// which also put every hot block in a mapping of its own: each 64 KiB socket read, each 120 KiB
// parse task's input, its ~180 KiB row buffer and the exact-size copy handed to the main thread,
// each a fresh mmap, page faults and an munmap. On the machine of 2026-11-27 that doubled Sluice's
// CPU per event: bench/parse.bench.ts 468k against 886k lines/s, and the ingest benchmark 84,633
// events/s at 10.05 CPU-s per 1M events against 142,577 at 3.52 with 262144 (bench/README.md,
// finding 22). At 256 KiB those blocks come from the arenas again while bodies and batches still
// get mappings of their own; the overload test's peak RSS was 430 MiB against 403 (test/faults/
// overload.test.ts, under 512).
import { setFlagsFromString } from 'node:v8'

export const serverNodeFlags: readonly string[] = ['--max-semi-space-size=16']

/** Environment Sluice's server process starts with, as NAME=VALUE assignments in front of the command. */
export const serverEnv: Readonly<Record<string, string>> = { MALLOC_ARENA_MAX: '2', MALLOC_MMAP_THRESHOLD_: '262144' }

/** serverEnv as a shell / `env -S` prefix: `MALLOC_ARENA_MAX=2 MALLOC_MMAP_THRESHOLD_=262144`. */
export const serverEnvPrefix = Object.entries(serverEnv).map(([k, v]) => `${k}=${v}`).join(' ')

/** The parse workers' young generation (resourceLimits): 48 MiB gives two 16 MiB semi-spaces. */
export const workerYoungGenerationMb = 48

/** Lets worker threads created from now on size their young generation by their resourceLimits, or as V8 would. */
export function forMainThreadOnly (): void {
  setFlagsFromString('--max-semi-space-size=0')
}
