// The Python Elasticsearch client (Debian's python3-elasticsearch 7.17, run by Debian's
// /usr/bin/python3) with the code of docs/shippers/python-elasticsearch.md (the doc's own block)
// against a real Sluice: every record stored once with its message, time, host and level, through
// per-item 429s (too many concurrent requests) and a storage outage (per-item 429s
// storage_unavailable); a record Sluice can never store comes back as a 400 failure.
import t from 'tap'
import { spawn, spawnSync } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { docBlock, startShipperRig, storageFailures } from './shipper-harness.ts'
import { storedEvents } from '../helpers/ingest.ts'
import { waitFor } from '../helpers/wait-for.ts'

const python = '/usr/bin/python3'
const probe = spawnSync(python, ['-c', 'import elasticsearch; print(".".join(map(str, elasticsearch.__version__)))'])
const version = probe.status === 0 ? probe.stdout.toString().trim() : null

// On each stdin line `first count`, ships records first..first+count-1 (and, when asked, one that
// fails), then prints `shipped <stored> <failure codes>`; "stop" ends it.
const driver = `
import json, sys
sys.path.insert(0, sys.argv[1])
from sluice_elasticsearch import sluice_client, ship
client = sluice_client(sys.argv[2], sys.argv[3])
at = sys.argv[4]
for command in sys.stdin:
    if command.strip() == "stop":
        break
    first, count, bad = map(int, command.split())
    records = [{"message": "record %d" % i, "@timestamp": at, "host": "py-1", "level": "warning", "seq": i} for i in range(first, first + count)]
    if bad:
        records.insert(count // 2, {"message": "bad", "status": "not a status"})
    stored, failures = ship(client, records)
    codes = [list(f.values())[0].get("error", {}).get("sluice_code") for f in failures]
    print("shipped", stored, json.dumps(codes), flush=True)
`

t.test('streaming_bulk(max_retries=5) with the documented code: every record once, through per-item 429s and a storage outage', { skip: version === null ? 'Debian\'s python3-elasticsearch is not installed (apt-get install python3-elasticsearch)' : false }, async (t) => {
  const rig = await startShipperRig(t, 'python-es')
  const dir = await mkdtemp(join(tmpdir(), 'sluice-python-es-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  await writeFile(join(dir, 'sluice_elasticsearch.py'), docBlock('python-elasticsearch.md', 'python', 0))
  await writeFile(join(dir, 'driver.py'), driver)
  const at = new Date(Math.floor(Date.now() / 1000) * 1000)

  const child = spawn(python, [join(dir, 'driver.py'), dir, `${rig.server.url}/api/elastic`, rig.target.token, at.toISOString()])
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (d) => { stdout += d })
  child.stderr.on('data', (d) => { stderr += d })
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve))
  t.teardown(() => { child.kill() })
  const shipped = (n: number) => waitFor(() => [...stdout.matchAll(/^shipped (\d+) (.*)\n/gm)][n - 1], { what: `answer ${n} of the driver`, timeoutMs: 40_000, intervalMs: 50 })
    .catch((err) => { throw new Error(`${err.message}: ${stderr}`) })

  // 1. A request held open: with one concurrent request per org, the first bulk's items are 429s.
  const release = await rig.holdOneRequest()
  const concurrencyBefore = rig.concurrency429s()
  child.stdin.write('0 300 1\n')
  await waitFor(() => rig.concurrency429s() > concurrencyBefore, { what: 'a 429 for the client', timeoutMs: 20_000 })
  await release()
  const first = await shipped(1)
  t.equal(first[1], '300', 'every good record stored')
  t.same(JSON.parse(first[2]), ['invalid_field'], 'the bad one comes back as its 400, not retried')

  // 2. Storage outage: ClickHouse refused; Sluice answers per-item 429s until it is back.
  const failuresBefore = storageFailures(rig.server.app.metrics)
  rig.storage.down()
  child.stdin.write('300 300 0\n')
  await waitFor(() => storageFailures(rig.server.app.metrics) > failuresBefore && rig.server.app.http.inFlight === 0,
    { what: 'a failed insert, answered', timeoutMs: 20_000 })
  rig.storage.up()
  const second = await shipped(2)
  t.equal(second[1], '300')
  t.same(JSON.parse(second[2]), [])
  child.stdin.write('stop\n')
  t.equal(await exited, 0, stderr)

  const events = (await storedEvents(rig.target)).filter((e) => e.message !== 'held')
  const seen = new Map<string, number>()
  for (const e of events) seen.set(e.message ?? '', (seen.get(e.message ?? '') ?? 0) + 1)
  t.same(Array.from({ length: 600 }, (_, i) => `record ${i}`).filter((m) => !seen.has(m)), [], 'every record stored')
  t.same([...seen].filter(([, n]) => n > 1), [], 'none stored twice')
  t.equal(events.length, 600, 'the bad record is not stored')
  t.ok(events.every((e) => e.host === 'py-1' && e.level === 'warn' && e.ts === at.getTime()), 'host, level and ts mapped')
  t.equal(JSON.parse(events[0].attrs).seq, Number(events[0].message!.split(' ')[1]), 'other keys in attrs')
  t.comment(`python3-elasticsearch ${version}: 429s for concurrency ${rig.concurrency429s()}, failed inserts ${rig.server.app.metrics.insertFailures.get()}`)
})
