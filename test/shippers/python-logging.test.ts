// Python's logging with the handler of docs/shippers/python.md (the doc's own code block, run by
// python3) against a real Sluice: every record stored once with its message, time, host and
// level, through a 429 and a storage outage, and the application's log calls never block.
import t from 'tap'
import { spawn, spawnSync } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir, hostname } from 'node:os'
import { join } from 'node:path'
import { docBlock, startShipperRig } from './shipper-harness.ts'
import { waitFor } from '../helpers/wait-for.ts'
import { storedEvents } from '../helpers/ingest.ts'

const python = spawnSync('python3', ['--version']).status === 0

// Logs `count` records from `first` on each time a line arrives on stdin ("stop" ends the run),
// and prints how long the slowest log call took (ms): the application must never wait for Sluice.
const driver = `
import logging, sys, time
sys.path.insert(0, sys.argv[1])
from sluice_logging import ship_to_sluice
sender = ship_to_sluice(sys.argv[2], sys.argv[3])
log = logging.getLogger("shipper-test")
slowest = 0.0
for command in sys.stdin:
    if command.strip() == "stop":
        break
    first, count = map(int, command.split())
    for i in range(first, first + count):
        started = time.monotonic()
        log.warning("record %d", i)
        slowest = max(slowest, time.monotonic() - started)
    print("logged", first + count, flush=True)
sender.stop()
print("slowest-log-call-ms", round(slowest * 1000, 3), flush=True)
print("sender-alive", sender.is_alive(), flush=True)
`

t.test('the documented handler stores every record once through a 429 and a storage outage', { skip: python ? false : 'python3 is not installed' }, async (t) => {
  const rig = await startShipperRig(t, 'python')
  const dir = await mkdtemp(join(tmpdir(), 'sluice-python-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  await writeFile(join(dir, 'sluice_logging.py'), docBlock('python.md', 'python', 0))
  await writeFile(join(dir, 'driver.py'), driver)

  const release = await rig.holdOneRequest() // the handler's first request is answered 429
  const child = spawn('python3', [join(dir, 'driver.py'), dir, `${rig.server.url}/api/ingest/python`, rig.target.token])
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (d) => { stdout += d })
  child.stderr.on('data', (d) => { stderr += d })
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve))
  t.teardown(() => { child.kill() })

  child.stdin.write('0 150\n')
  await waitFor(() => rig.concurrency429s() >= 1, { what: 'a 429 for the handler', timeoutMs: 30_000, intervalMs: 20 })
  await release()
  // Stored and answered: an outage that cut an insert's answer would make its outcome unknown
  // (503 storage_outcome_unknown, after which a retry may store the rows twice, docs/api.md 6.6).
  await waitFor(async () => (await storedEvents(rig.target)).length >= 151 &&
    rig.server.app.http.inFlight === 0 && rig.server.app.writer.pendingRows === 0, { what: 'the first 150 records, answered', timeoutMs: 30_000, intervalMs: 20 })

  // Storage outage: ClickHouse unreachable; Sluice answers 503 with Retry-After until it is back.
  rig.storage.down()
  child.stdin.write('150 150\n')
  await waitFor(() => rig.ingest5xx() >= 1, { what: 'a 503 for the handler', timeoutMs: 30_000, intervalMs: 20 })
  rig.storage.up()
  child.stdin.write('stop\n')
  t.equal(await exited, 0, stderr)
  t.match(stdout, /sender-alive False/, 'stop() sent everything and ended the thread')
  const slowest = Number(/slowest-log-call-ms ([\d.]+)/.exec(stdout)?.[1])
  t.ok(Number.isFinite(slowest), stdout)
  t.notOk(/dropped/.test(stderr), 'nothing dropped')

  const events = (await storedEvents(rig.target)).filter((e) => e.message !== 'held')
  const seen = new Map<string, number>()
  for (const e of events) seen.set(e.message ?? '', (seen.get(e.message ?? '') ?? 0) + 1)
  const missing = Array.from({ length: 300 }, (_, i) => `record ${i}`).filter((m) => !seen.has(m))
  t.same(missing, [], 'every record stored')
  t.same([...seen].filter(([, n]) => n > 1), [], 'none stored twice')
  t.equal(events.length, 300)
  const now = Date.now()
  t.ok(events.every((e) => e.host === hostname()), 'host is the machine name')
  t.ok(events.every((e) => e.ts > now - 120_000 && e.ts <= now), 'ts is the record\'s time')
  const attrs = JSON.parse(events[0].attrs)
  t.equal(attrs.logger, 'shipper-test', 'logger kept in attrs')
  // The level goes out as `level`; with the event model's level column it lands there instead.
  t.ok(attrs.level === 'WARNING' || (events[0] as unknown as { level?: string }).level === 'warn', 'level sent')
})
