// rsyslog (Debian 12's 8.2302, omelasticsearch, unpacked by debian-rsyslog.ts) with the
// configuration of docs/shippers/rsyslog.md (the doc's own block: its port, URL, token, reject
// file and resume interval substituted) against a real Sluice: every line stored exactly once
// with its message, time, host and level, through per-item 429s (too many concurrent requests),
// a storage outage (ClickHouse refused: per-item 429s storage_unavailable) and Sluice down
// (connections cut; rsyslog resumes after `GET _cat/health`).
import t from 'tap'
import type { Test } from 'tap'
import { spawn } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { connect, createServer } from 'node:net'
import type { AddressInfo, Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { docBlock, startShipperRig } from './shipper-harness.ts'
import { debianRsyslog } from './debian-rsyslog.ts'
import { storedEvents } from '../helpers/ingest.ts'
import { freePort, sendTcp, syslogLines } from './syslog-lines.ts'
import { waitFor } from '../helpers/wait-for.ts'
import { trackAnswers } from '../helpers/http-answers.ts'
import type { AnswerTracker } from '../helpers/http-answers.ts'

const rsyslog = debianRsyslog()
// About 30 s alone; a loaded machine (load 8) once took 105 s, past tap's default 120 s with teardown.
t.setTimeout(300_000)

/**
 * In front of Sluice: counts what rsyslog was answered (by sluice_code in the bytes back), and
 * while `cutting` closes every new connection at once (Sluice down, as rsyslog sees it). cut()
 * closes the open connections too, but never one whose request is not yet answered in full: its
 * answer passes first (helpers/http-answers.ts says why).
 */
async function startFront (t: Test, target: string) {
  const state = { cutting: false, cuts: 0 }
  const codes = new Map<string, number>()
  let carry = '' // the end of the bytes seen, after the last code counted (a code may span chunks)
  const { port, hostname } = new URL(target)
  const sockets = new Set<Socket>()
  const open = new Set<{ answers: AnswerTracker, close: () => void }>()
  const server = createServer((client) => {
    sockets.add(client)
    client.on('close', () => sockets.delete(client))
    if (state.cutting) {
      state.cuts++
      client.destroy()
      return
    }
    const upstream = connect(Number(port), hostname)
    sockets.add(upstream)
    upstream.on('close', () => sockets.delete(upstream))
    const conn = { answers: trackAnswers(), close: () => { client.end(); upstream.destroy() } }
    open.add(conn)
    client.on('close', () => open.delete(conn))
    client.on('data', (d: Buffer) => {
      if (state.cutting && !conn.answers.waiting) {
        state.cuts++
        client.destroy()
        upstream.destroy()
        return
      }
      conn.answers.requested()
      upstream.write(d)
    })
    upstream.on('data', (d: Buffer) => {
      client.write(d)
      if (conn.answers.answered(d) && state.cutting && !conn.answers.waiting) conn.close()
      const text = carry + d.toString('latin1')
      let end = 0
      for (const m of text.matchAll(/"sluice_code":"([a-z_]+)"/g)) {
        codes.set(m[1], (codes.get(m[1]) ?? 0) + 1)
        end = m.index + m[0].length
      }
      carry = text.slice(Math.max(end, text.length - 40))
    })
    client.on('end', () => upstream.end())
    upstream.on('end', () => client.end())
    for (const s of [client, upstream]) s.on('error', () => { client.destroy(); upstream.destroy() })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => { for (const s of sockets) s.destroy(); server.close(() => resolve()) }))
  const answered = (code: string): number => codes.get(code) ?? 0
  /**
   * From now on every connection is closed: the open ones (rsyslog keeps its connection alive)
   * now, or once their answer has passed.
   */
  const cut = (): void => {
    state.cutting = true
    for (const conn of open) if (!conn.answers.waiting) conn.close()
  }
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, state, answered, cut }
}

t.test('rsyslog omelasticsearch with the documented config: every line once, through per-item 429s, a storage outage and Sluice down', { skip: typeof rsyslog === 'string' ? rsyslog : false }, async (t) => {
  if (typeof rsyslog === 'string') return
  const rig = await startShipperRig(t, 'rsyslog')
  const front = await startFront(t, rig.server.url)
  const dir = await mkdtemp(join(tmpdir(), 'sluice-rsyslog-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const port = await freePort()
  const documented = docBlock('rsyslog.md', 'conf', 0)
  const config = `global(workDirectory="${dir}")\n` + documented
    .replace('input(type="imtcp" port="5514"', `input(type="imtcp" address="127.0.0.1" port="${port}"`)
    .replace('server="http://127.0.0.1:8080/api/elastic"', `server="${front.url}/api/elastic"`)
    .replace('sli_YOUR_INGEST_TOKEN', rig.target.token)
    .replace('/var/log/sluice-rejected.log', join(dir, 'rejected.log'))
    .replace('action.resumeInterval="10"', 'action.resumeInterval="1"')
  t.equal(config.split(rig.target.token).length, 2, 'token substituted')
  t.equal(config.split(String(port)).length, 2, 'port substituted')
  t.equal(config.split(front.url).length, 2, 'URL substituted')
  await writeFile(join(dir, 'rsyslog.conf'), config)

  const child = spawn(rsyslog.binary, ['-n', '-f', join(dir, 'rsyslog.conf'), '-i', join(dir, 'rsyslog.pid'), '-M', rsyslog.modules],
    { env: { ...process.env, ...rsyslog.env, TZ: 'UTC' } })
  let output = ''
  child.stdout.on('data', (d) => { output += d })
  child.stderr.on('data', (d) => { output += d })
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve))
  t.teardown(async () => { child.kill('SIGTERM'); await exited })
  await waitFor(() => new Promise<boolean>((resolve) => {
    const probe = connect(port, '127.0.0.1', () => { probe.destroy(); resolve(true) })
    probe.on('error', () => resolve(false))
  }), { what: `rsyslogd ${rsyslog.version} to listen`, timeoutMs: 20_000, intervalMs: 50 }).catch((err) => { throw new Error(`${err.message}: ${output}`) })
  const stored = async (): Promise<number> => (await storedEvents(rig.target)).length
  const settled = (): boolean => rig.server.app.http.inFlight === 0 && rig.server.app.writer.pendingRows === 0

  // 1. A request held open: with one concurrent request per org, rsyslog's bulks are answered with per-item 429s.
  const at = new Date(Math.floor(Date.now() / 1000) * 1000)
  const release = await rig.holdOneRequest()
  await sendTcp(port, syslogLines(0, 300, at))
  await waitFor(() => front.answered('too_many_concurrent_requests'), { what: 'per-item 429s for rsyslog', timeoutMs: 20_000 })
  await release()
  await waitFor(async () => await stored() >= 301 && settled(), { what: 'the first 300 lines', timeoutMs: 30_000, intervalMs: 100 })

  // 2. Storage outage: Sluice answers per-item 429s (storage_unavailable) until ClickHouse is back.
  rig.storage.down()
  await sendTcp(port, syslogLines(300, 300, at))
  await waitFor(() => front.answered('storage_unavailable') >= 2, { what: 'per-item 429s storage_unavailable', timeoutMs: 30_000 })
  rig.storage.up()
  await waitFor(async () => await stored() >= 601 && settled(), { what: 'the next 300 lines', timeoutMs: 30_000, intervalMs: 100 })
    .catch((err) => { throw new Error(`${err.message}: ${output}`) })

  // 3. Sluice down (connections cut): rsyslog suspends the action, and resumes once _cat/health answers.
  const healthBefore = rig.server.app.metrics.requests.get({ route: '/api/elastic/_cat/health', method: 'GET', status: 200 })
  front.cut()
  await sendTcp(port, syslogLines(600, 300, at))
  await waitFor(() => front.state.cuts, { what: 'rsyslog to find Sluice down', timeoutMs: 20_000 })
  front.state.cutting = false
  // After a resume rsyslog sends a line per request; each (timestamped, unkeyed: a recognisable
  // retry, docs/api.md section 6.7) costs a key lookup and a pending record besides its insert:
  // 100-200 ms on the busy CI box, so 300 of them one at a time take up to a minute.
  await waitFor(async () => await stored() >= 901, { what: 'all 900 lines', timeoutMs: 90_000, intervalMs: 100 })
    .catch((err) => { throw new Error(`${err.message}: ${output}`) })
  t.ok(rig.server.app.metrics.requests.get({ route: '/api/elastic/_cat/health', method: 'GET', status: 200 }) > healthBefore,
    'rsyslog asked _cat/health before resuming')

  const events = (await storedEvents(rig.target)).filter((e) => e.message !== 'held')
  const seen = new Map<string, number>()
  for (const e of events) seen.set(e.message ?? '', (seen.get(e.message ?? '') ?? 0) + 1)
  t.same(Array.from({ length: 900 }, (_, i) => `line ${i}`).filter((m) => !seen.has(m)), [], 'every line stored')
  t.same([...seen].filter(([, n]) => n > 1), [], 'none stored twice')
  t.equal(events.length, 900)
  t.ok(events.every((e) => e.host === 'web-7'), 'host: the sender\'s (fromhost)')
  t.ok(events.every((e) => e.ts === at.getTime()), 'ts: the line\'s own time (timereported)')
  t.ok(events.every((e) => e.level === 'info'), 'level: the severity (priority)')
  t.match(JSON.parse(events[0].attrs), { program: 'app', facility: 'user' }, 'program and facility in attrs')
  t.comment(`rsyslogd ${rsyslog.version}: per-item 429s answered ${front.answered('too_many_concurrent_requests')} (concurrency), ${front.answered('storage_unavailable')} (storage); connections cut ${front.state.cuts}`)
})
