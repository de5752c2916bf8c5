// A standalone ZooKeeper for the local cluster, run from the Debian package's jars with the java
// it depends on (no init script, no system-wide state): config, data and log in `dir`.
//
// Contract: startZooKeeper() resolves once the server serves sessions (the `stat` four-letter
// command answers with its version, not "not currently serving requests"); stop() stops it
// (SIGTERM, then SIGKILL). Heap capped at 128 MiB: the cluster's state is a few thousand znodes.
import { mkdirSync, writeFileSync } from 'node:fs'
import { connect } from 'node:net'
import { join } from 'node:path'
import { spawnChild } from './child.ts'
import type { Child } from './child.ts'

/** The package's jar names its dependencies in its manifest; slf4j-nop silences the logging binding warning. */
const classPath = ['/usr/share/java/zookeeper.jar', '/usr/share/java/slf4j-nop.jar'].join(':')

export interface ZooKeeperOptions {
  dir: string
  port: number
  startTimeoutMs: number
}

export interface ZooKeeper {
  readonly port: number
  readonly child: Child
  stop (): Promise<void>
}

/** Sends a four-letter command and returns the answer ('' on any failure). */
export function fourLetter (port: number, command: string, timeoutMs = 1_000): Promise<string> {
  return new Promise((resolve) => {
    let answer = ''
    const socket = connect(port, '127.0.0.1', () => socket.end(command))
    socket.setTimeout(timeoutMs, () => socket.destroy())
    socket.setEncoding('utf8')
    socket.on('data', (chunk: string) => { answer += chunk })
    socket.on('close', () => resolve(answer))
    socket.on('error', () => {})
  })
}

export function writeZooKeeperConfig (dir: string, port: number): string {
  mkdirSync(join(dir, 'data'), { recursive: true })
  const file = join(dir, 'zoo.cfg')
  writeFileSync(file, [
    'tickTime=2000',
    `dataDir=${join(dir, 'data')}`,
    `clientPort=${port}`,
    'clientPortAddress=127.0.0.1',
    'maxClientCnxns=200',
    'admin.enableServer=false', // its Jetty would take port 8080, Sluice's default
    '4lw.commands.whitelist=ruok,stat,mntr',
    // Snapshots and logs of a test cluster: keep three, purge hourly.
    'autopurge.snapRetainCount=3',
    'autopurge.purgeInterval=1',
    '',
  ].join('\n'))
  return file
}

export async function startZooKeeper (options: ZooKeeperOptions): Promise<ZooKeeper> {
  const file = writeZooKeeperConfig(options.dir, options.port)
  const child = spawnChild({
    name: 'zookeeper',
    command: '/usr/bin/java',
    args: ['-Xmx128m', '-XX:+UseSerialGC', '-XX:TieredStopAtLevel=1', '-cp', classPath,
      'org.apache.zookeeper.server.ZooKeeperServerMain', file],
    logFile: join(options.dir, 'zookeeper.log'),
    cwd: options.dir,
  })
  try {
    // `ruok` answers as soon as the port listens; `stat` only once sessions are served. A
    // ClickHouse 18.16 started before that loses its DDL worker for good (its first connection
    // fails and is never retried) and then crashes on the first ON CLUSTER query.
    await child.waitUntil(async () => (await fourLetter(options.port, 'stat')).startsWith('Zookeeper version'), options.startTimeoutMs, 'ZooKeeper serving (stat)')
  } catch (err) {
    await child.stop()
    throw err
  }
  return { port: options.port, child, stop: () => child.stop() }
}
