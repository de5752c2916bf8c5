// syslog-ng (Debian's syslog-ng-core + syslog-ng-mod-http) with the configuration of
// docs/shippers/syslog-ng.md (the doc's own block, with the URL, token, port, disk-buffer dir and
// time-reopen substituted) against a real Sluice: every line stored exactly once with its
// message, time, host and level, through 429 answers and a storage outage. syslog-ng runs as an
// unprivileged child with its own config, persist, pid and control files in a temp dir.
import t from 'tap'
import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { docBlock, startShipperRig } from './shipper-harness.ts'
import { waitFor } from '../helpers/wait-for.ts'
import { storedEvents } from '../helpers/ingest.ts'
import { freePort, sendTcp, syslogLines } from './syslog-lines.ts'

const binary = '/usr/sbin/syslog-ng'
const installed = existsSync(binary) && existsSync('/usr/lib/syslog-ng/3.38/libhttp.so')

t.test('syslog-ng http() with the documented config: every line once, through 429s, a storage outage and Sluice down', { skip: installed ? false : 'syslog-ng-core and syslog-ng-mod-http are not installed (apt-get install syslog-ng-core syslog-ng-mod-http)' }, async (t) => {
  const rig = await startShipperRig(t, 'syslog')
  const dir = await mkdtemp(join(tmpdir(), 'sluice-syslog-ng-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  await mkdir(join(dir, 'buffer'))
  const port = await freePort()
  const documented = docBlock('syslog-ng.md', 'conf', 0)
  const config = documented
    .replace('http://127.0.0.1:8080/api/ingest/syslog', `${rig.front.url}/api/ingest/syslog`)
    .replace('sli_YOUR_INGEST_TOKEN', rig.target.token)
    .replace('ip("0.0.0.0") port(5514)', `ip("127.0.0.1") port(${port})`)
    .replace('dir("/var/lib/syslog-ng/sluice")', `dir("${join(dir, 'buffer')}")`)
    .replace('time-reopen(10);', 'time-reopen(1);')
    // SYSLOG_WORKERS=4 reproduces why the doc says workers(1) (see there): a batch lost, another stored twice.
    .replace('workers(1)', `workers(${process.env.SYSLOG_WORKERS ?? 1})`)
  t.not(config, documented, 'the documented block was found and adapted')
  t.equal(config.split(rig.target.token).length, 2, 'token substituted')
  await writeFile(join(dir, 'syslog-ng.conf'), config)

  const child = spawn(binary, [
    '-F', '--no-caps', '-f', join(dir, 'syslog-ng.conf'), '-R', join(dir, 'syslog-ng.persist'),
    '-p', join(dir, 'syslog-ng.pid'), '-c', join(dir, 'syslog-ng.ctl'), '--stderr',
  ], { env: { ...process.env, TZ: 'UTC' } })
  let stderr = ''
  child.stderr.on('data', (d) => { stderr += d })
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve))
  t.teardown(async () => { child.kill('SIGTERM'); await exited })
  await waitFor(() => new Promise<boolean>((resolve) => {
    const probe = connect(port, '127.0.0.1', () => { probe.destroy(); resolve(true) })
    probe.on('error', () => resolve(false))
  }), { what: 'syslog-ng to listen', timeoutMs: 20_000, intervalMs: 20 }).catch((err) => { throw new Error(`${err.message}: ${stderr}`) })

  // 1. A request held open: with one concurrent request per org, syslog-ng's are answered 429.
  const at = new Date(Math.floor(Date.now() / 1000) * 1000)
  const release = await rig.holdOneRequest()
  await sendTcp(port, syslogLines(0, 300, at))
  await waitFor(() => rig.concurrency429s() >= 1, { what: 'a 429 for syslog-ng', timeoutMs: 30_000, intervalMs: 20 })
  await release()
  await waitFor(async () => (await storedEvents(rig.target)).length >= 301 &&
    rig.server.app.http.inFlight === 0 && rig.server.app.writer.pendingRows === 0, { what: 'the first 300 lines, answered', timeoutMs: 30_000, intervalMs: 20 })

  // 2. Storage outage: Sluice answers 503 until ClickHouse is reachable again.
  rig.storage.down()
  await sendTcp(port, syslogLines(300, 300, at))
  await waitFor(() => rig.ingest5xx() >= 1, { what: 'a 503 for syslog-ng', timeoutMs: 30_000, intervalMs: 20 })
  rig.storage.up()
  await waitFor(async () => (await storedEvents(rig.target)).length >= 601 &&
    rig.server.app.http.inFlight === 0 && rig.server.app.writer.pendingRows === 0, { what: 'the next 300 lines, answered', timeoutMs: 60_000, intervalMs: 20 })
    .catch((err) => { throw new Error(`${err.message}: ${stderr}`) })

  // 3. Sluice down (connections refused) while syslog-ng has lines to send: they wait in its buffer.
  rig.front.downBetweenAnswers()
  const logBefore = stderr.length
  await sendTcp(port, syslogLines(600, 300, at))
  await waitFor(() => /connect to server/.test(stderr.slice(logBefore)), { what: 'syslog-ng to find Sluice down', timeoutMs: 20_000, intervalMs: 20 })
    .catch((err) => { throw new Error(`${err.message}: ${stderr.slice(-1500)}`) })
  rig.front.up()
  await waitFor(async () => (await storedEvents(rig.target)).length >= 901, { what: 'all 900 lines', timeoutMs: 60_000, intervalMs: 20 })
    .catch((err) => { throw new Error(`${err.message}: ${stderr}`) })

  const events = (await storedEvents(rig.target)).filter((e) => e.message !== 'held')
  const seen = new Map<string, number>()
  for (const e of events) seen.set(e.message ?? '', (seen.get(e.message ?? '') ?? 0) + 1)
  t.same(Array.from({ length: 900 }, (_, i) => `line ${i}`).filter((m) => !seen.has(m)), [], 'every line stored')
  const twice = [...seen].filter(([, n]) => n > 1)
  t.same(twice, [], 'none stored twice')
  t.equal(events.length, 900)
  t.ok(events.every((e) => e.host === 'web-7'), 'host is the sender\'s')
  t.ok(events.every((e) => e.ts === at.getTime()), 'ts is the message\'s own time')
  const attrs = JSON.parse(events[0].attrs)
  t.equal(attrs.program, 'app', 'program kept in attrs')
  t.ok(attrs.level === 'info' || (events[0] as unknown as { level?: string }).level === 'info', 'level sent')
})
