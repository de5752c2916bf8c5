// The managed ClickHouse against the real binary: start, crash and restart, stop, leftovers from
// an earlier run, and the messages a user sees when it cannot start.
import t from 'tap'
import { spawnSync } from 'node:child_process'
import { chmodSync, writeFileSync } from 'node:fs'
import { once } from 'node:events'
import { request } from 'node:http'
import { connect } from 'node:net'
import { join } from 'node:path'
import { createLogger } from '../../lib/logger.ts'
import {
  findClickHouseBinary, MissingClickHouseError, startManagedClickHouse,
} from '../../lib/storage/managed-clickhouse.ts'
import type { Test } from 'tap'
import type { Logger } from '../../lib/logger.ts'
import type { ManagedClickHouse } from '../../lib/storage/managed-clickhouse.ts'

const installed = findClickHouseBinary()
const needsBinary = installed ? false : 'no clickhouse-server or clickhouse binary installed'
const startTimeoutMs = 30_000 // 18.16 answers in well under a second; slow CI disks get slack

function captureLog (): { lines: Array<Record<string, unknown>>, log: Logger } {
  const lines: Array<Record<string, unknown>> = []
  return { lines, log: createLogger({ level: 'debug', write: (line) => { lines.push(JSON.parse(line)) } }) }
}

/** `SELECT 1` over a fresh connection: an idle keep-alive one would hold up ClickHouse's shutdown. */
function selectOne (url: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', agent: false, timeout: 5_000 }, (res) => {
      let body = ''
      res.setEncoding('utf8').on('data', (chunk: string) => { body += chunk }).on('end', () => resolve(body.trim()))
    })
    req.on('timeout', () => req.destroy(new Error('SELECT 1 timed out'))).on('error', reject).end('SELECT 1')
  })
}

function isRunning (pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}

async function isPortClosed (url: string): Promise<boolean> {
  const socket = connect(Number(new URL(url).port), '127.0.0.1')
  try {
    await once(socket, 'connect')
    return false
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ECONNREFUSED'
  } finally {
    socket.destroy()
  }
}

async function start (t: Test, dataDir: string, log = captureLog().log): Promise<ManagedClickHouse> {
  const ch = await startManagedClickHouse({ dataDir, startTimeoutMs, log })
  t.teardown(() => ch.stop())
  return ch
}

t.test('answers, comes back on the same URL after SIGKILL, and is gone after stop()', { skip: needsBinary }, async (t) => {
  const { lines, log } = captureLog()
  const ch = await start(t, t.testdir(), log)
  t.match(ch.url, /^http:\/\/127\.0\.0\.1:\d+$/)
  t.equal(await selectOne(ch.url), '1')

  const killedPid = ch.pid as number
  const restarted = once(ch, 'restart', { signal: AbortSignal.timeout(startTimeoutMs) })
  const crashed = once(ch, 'crash')
  process.kill(killedPid, 'SIGKILL')
  const [crash] = await crashed
  t.same(crash, { pid: killedPid, code: null, signal: 'SIGKILL' })
  const [restart] = await restarted
  t.not(restart.pid, killedPid, 'a new process')
  t.equal(ch.pid, restart.pid)
  t.equal(await selectOne(ch.url), '1', 'same URL answers again')
  t.ok(lines.some((l) => l.level === 'error' && l.msg === 'ClickHouse exited unexpectedly' && l.signal === 'SIGKILL'))
  t.ok(lines.some((l) => l.msg === 'ClickHouse restarted' && l.pid === restart.pid))

  const pid = ch.pid as number
  await ch.stop()
  t.notOk(isRunning(pid), 'process is gone')
  t.ok(await isPortClosed(ch.url), 'port is closed')
  await ch.stop() // idempotent
})

t.test('a server left running by an earlier run is stopped once its Sluice is gone, not before', { skip: needsBinary }, async (t) => {
  const dataDir = t.testdir()
  const pidFile = join(dataDir, 'sluice-clickhouse.pid')
  const first = await start(t, dataDir)
  const orphanPid = first.detach() as number // what a SIGKILLed Sluice leaves behind
  t.teardown(() => { if (isRunning(orphanPid)) process.kill(orphanPid, 'SIGKILL') })

  writeFileSync(pidFile, `${orphanPid} ${process.ppid}\n`) // owned by a Sluice that still runs
  await t.rejects(startManagedClickHouse({ dataDir, startTimeoutMs, log: captureLog().log }), { name: 'DataDirInUseError', message: /in use/ })
  t.equal(await selectOne(first.url), '1', 'the other Sluice keeps its server')

  const deadPid = spawnSync(process.execPath, ['-e', '']).pid
  writeFileSync(pidFile, `${orphanPid} ${deadPid}\n`)
  const { lines, log } = captureLog()
  const second = await start(t, dataDir, log)
  t.equal(await selectOne(second.url), '1')
  t.not(second.pid, orphanPid)
  t.ok(lines.some((l) => l.msg === 'stopped a leftover ClickHouse on this data dir' && l.pid === orphanPid))
  t.ok(await isPortClosed(first.url), 'the leftover no longer listens')
})

t.test('a server that exits while starting rejects with the tail of its output', async (t) => {
  const dir = t.testdir()
  const fake = join(dir, 'fake-clickhouse-server')
  writeFileSync(fake, '#!/bin/sh\necho "Code: 36. DB::Exception: bad config for $1" >&2\nexit 3\n')
  chmodSync(fake, 0o755)
  await t.rejects(
    startManagedClickHouse({ dataDir: join(dir, 'data'), binary: fake, startTimeoutMs, log: captureLog().log }),
    { message: /exited \(code 3\)[^]*Code: 36\. DB::Exception: bad config for --config-file=/ },
  )
})

t.test('findClickHouseBinary', async (t) => {
  const empty = t.testdir()
  t.equal(findClickHouseBinary(null, []), null)
  t.equal(findClickHouseBinary(null, [empty]), null)
  t.equal(findClickHouseBinary(join(empty, 'clickhouse-server')), null, 'explicit path that does not exist')

  const dir = t.testdir({ clickhouse: '#!/bin/sh\n', 'clickhouse-server': '#!/bin/sh\n' })
  chmodSync(join(dir, 'clickhouse'), 0o755)
  t.same(findClickHouseBinary(null, [empty, dir]), { command: join(dir, 'clickhouse'), args: ['server'] },
    'the single binary runs as `clickhouse server`; clickhouse-server is not executable yet')
  chmodSync(join(dir, 'clickhouse-server'), 0o755)
  t.same(findClickHouseBinary(null, [dir]), { command: join(dir, 'clickhouse-server'), args: [] }, 'clickhouse-server preferred')
  t.same(findClickHouseBinary('clickhouse', [dir]), { command: join(dir, 'clickhouse'), args: ['server'] }, 'explicit name searched')
})

t.test('without a binary, start fails saying how to get one', async (t) => {
  const message = new MissingClickHouseError().message
  t.match(message, 'apt-get install clickhouse-server')
  t.match(message, 'CLICKHOUSE_URL')
  await t.rejects(
    startManagedClickHouse({ dataDir: t.testdir(), binary: '/nonexistent/clickhouse-server', startTimeoutMs, log: captureLog().log }),
    { name: 'MissingClickHouseError', message: /\/nonexistent\/clickhouse-server[^]*apt-get install clickhouse-server[^]*CLICKHOUSE_URL/ },
  )
})
