// `npm run soak`: the fault scenarios of test/faults/ at length, with the default writer budget
// (retryTimeoutMs 10 s, attemptTimeoutMs 5 s). Not run by CI (minutes). Prints one JSON line
// per scenario with its classification (missing must be 0) and answer times, and exits 1 when a
// guarantee failed. `npm run soak -- hung20 sigterm` runs only the named scenarios.
import { hungClickHouse, killedClickHouse, killedManagedClickHouse, ownClickHouse, signalledSluice } from './scenarios.ts'
import type { ScenarioResult } from './scenarios.ts'
import { guaranteesHeld } from './guarantees.ts'

const shape = { clients: 8, linesPerRequest: 500 }
const scenarios: Record<string, () => Promise<ScenarioResult>> = {
  hung20: () => hungClickHouse({ stopMs: 20_000, retryTimeoutMs: 10_000, attemptTimeoutMs: 5_000, afterMs: 10_000, shape }),
  hung70: () => hungClickHouse({ stopMs: 70_000, retryTimeoutMs: 10_000, attemptTimeoutMs: 5_000, afterMs: 10_000, shape }),
  killed: () => killedClickHouse({ kills: 5, betweenMs: 5_000, afterMs: 10_000, shape }),
  managed: () => killedManagedClickHouse({ kills: 3, betweenMs: 5_000, afterMs: 10_000, shape }),
  sigterm: () => withOwnClickHouse((url) => signalledSluice({ signal: 'SIGTERM', clickhouseUrl: url, shape })),
  sigkill: () => withOwnClickHouse((url) => signalledSluice({ signal: 'SIGKILL', clickhouseUrl: url, shape })),
}

async function withOwnClickHouse<T> (fn: (url: string) => Promise<T>): Promise<T> {
  const { ch, cleanup } = await ownClickHouse(false)
  try {
    return await fn(ch.url)
  } finally {
    await cleanup()
  }
}

const names = process.argv.slice(2).length > 0 ? process.argv.slice(2) : Object.keys(scenarios)
let failed = false
for (const name of names) {
  const run = scenarios[name]
  if (run === undefined) {
    process.stderr.write(`unknown scenario ${name}; known: ${Object.keys(scenarios).join(', ')}\n`)
    process.exit(2)
  }
  const r = await run()
  const ok = guaranteesHeld(r)
  if (!ok) failed = true
  process.stdout.write(JSON.stringify({ name, ok, ...r }) + '\n')
}
process.exit(failed ? 1 : 0)
