// The local cluster, for tests and demos (`npm run cluster`, test/cluster/): ZooKeeper, ClickHouse
// as `shards` x `replicas` servers, `nodes` Sluice nodes in cluster mode and haproxy in front of
// them, all on 127.0.0.1 with their own ports and their state under `dir`.
//
// Contract:
// - startLocalCluster() installs the Debian packages it lacks (zookeeper, haproxy), then starts,
//   in order: ZooKeeper; every ClickHouse (in parallel); the first Sluice node, which migrates
//   the schema ON CLUSTER and creates the admin; the other nodes; haproxy. It resolves once
//   haproxy answers, with every endpoint, and rejects (having stopped what it started) when any
//   part does not come up within startTimeoutMs.
// - Sluice node i talks to ClickHouse host (i * (replicas + 1)) mod hosts for its reads, DDL and
//   metadata (node 1: shard 1 replica 1, node 2: shard 2 replica 2, ...), and inserts into every
//   shard through all hosts (clickhouse.insertUrls).
// - All nodes share one admin PAT (bootstrapToken), generated here and written to
//   `dir/admin-token`, and one cluster.secret; each node's cluster.nodeUrl is its own URL.
// - stop() stops haproxy, the Sluice nodes (SIGTERM: they answer what is in flight), ClickHouse,
//   then ZooKeeper, and resolves once every process is gone; idempotent. Every child is also
//   SIGKILLed by an exit hook if this process exits first (scripts/cluster/child.ts).
// - stopClickHouse(i) / startClickHouse(i) take host i down and up again on its ports and data,
//   stopZooKeeper() / startZooKeeper() likewise, for fault tests.
// - kill() SIGKILLs every process at once, synchronously: for a signal handler (a test runner's
//   timeout sends SIGTERM, and Node runs no 'exit' hook when a signal ends it).
import { randomBytes } from 'node:crypto'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { generateToken } from '../../lib/auth/token-format.ts'
import { spawnChild } from './child.ts'
import type { Child } from './child.ts'
import { freePorts } from './ports.ts'
import { ensurePackages } from './debian-packages.ts'
import { startZooKeeper } from './zookeeper.ts'
import type { ZooKeeper } from './zookeeper.ts'
import { replicaName, startClusterClickHouse } from './cluster-clickhouse.ts'
import type { ClusterClickHouse, ClusterHost } from './cluster-clickhouse.ts'
import { httpStatus, startHaproxy } from './haproxy.ts'
import type { Haproxy } from './haproxy.ts'

export interface LocalClusterOptions {
  /** State directory: configs, data and logs of every process. */
  dir: string
  shards?: number
  replicas?: number
  /** Sluice nodes. */
  nodes?: number
  /** Cluster name in remote_servers (clickhouse.cluster). */
  cluster?: string
  /** ClickHouse database of the Sluice nodes. */
  database?: string
  /** Config merged into every Sluice node's SLUICE_CONFIG (e.g. a short metadata refresh). */
  sluiceConfig?: Record<string, unknown>
  /** Start haproxy in front of the nodes; default true. */
  haproxy?: boolean
  /** ms each part has to come up. */
  startTimeoutMs?: number
  /** Progress lines; default: none. */
  log?: (line: string) => void
  /** apt-get missing packages; default true. */
  installPackages?: boolean
}

export interface SluiceNode {
  readonly index: number
  readonly url: string
  /** The ClickHouse this node reads from and runs DDL on. */
  readonly clickhouseUrl: string
  readonly child: Child
}

export interface LocalCluster {
  readonly dir: string
  readonly cluster: string
  readonly database: string
  readonly zooKeeperPort: number
  /** ClickHouse hosts, shard by shard: [s1r1, s1r2, s2r1, s2r2] for 2 x 2. */
  readonly hosts: readonly ClusterHost[]
  /** HTTP URL of each host, in hosts' order. */
  readonly clickhouseUrls: readonly string[]
  readonly nodes: readonly SluiceNode[]
  /** haproxy's URL (the first node's when haproxy is off). */
  readonly url: string
  readonly adminToken: string
  /** Stops ClickHouse host i (SIGTERM, SIGKILL after 15 s). */
  stopClickHouse (i: number): Promise<void>
  /** Starts ClickHouse host i again on its ports and data. */
  startClickHouse (i: number): Promise<void>
  stopZooKeeper (): Promise<void>
  startZooKeeper (): Promise<void>
  stop (): Promise<void>
  kill (): void
  /** The running processes and their pids, for measuring them from /proc (bench/cluster.bench.ts). */
  processes (): ClusterProcess[]
}

export interface ClusterProcess {
  kind: 'zookeeper' | 'clickhouse' | 'sluice' | 'haproxy'
  /** `zookeeper`, `clickhouse s1r2`, `sluice node 1`, `haproxy`. */
  name: string
  pid: number
}

const defaults = { shards: 2, replicas: 2, nodes: 2, cluster: 'sluice', database: 'sluice', startTimeoutMs: 60_000 }

/** The ClickHouse host a Sluice node reads from: spread over shards and replicas. */
export function nearestHost (node: number, hostCount: number, replicas: number): number {
  return (node * (replicas + 1)) % hostCount
}

/** This process's environment without Sluice's and ClickHouse's variables: a node's config is its file. */
function inheritedEnv (): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([key]) => !/^(SLUICE_|CLICKHOUSE_)/.test(key)))
}

function deepMerge (base: Record<string, unknown>, over: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base }
  for (const [key, value] of Object.entries(over)) {
    const prev = out[key]
    out[key] = value !== null && typeof value === 'object' && !Array.isArray(value) && prev !== null && typeof prev === 'object' && !Array.isArray(prev)
      ? deepMerge(prev as Record<string, unknown>, value as Record<string, unknown>)
      : value
  }
  return out
}

export async function startLocalCluster (options: LocalClusterOptions): Promise<LocalCluster> {
  const dir = resolve(options.dir)
  const shards = options.shards ?? defaults.shards
  const replicas = options.replicas ?? defaults.replicas
  const nodeCount = options.nodes ?? defaults.nodes
  const cluster = options.cluster ?? defaults.cluster
  const database = options.database ?? defaults.database
  const startTimeoutMs = options.startTimeoutMs ?? defaults.startTimeoutMs
  const log = options.log ?? (() => {})
  mkdirSync(dir, { recursive: true })
  if (options.installPackages ?? true) ensurePackages(log)

  const hostCount = shards * replicas
  const ports = await freePorts(1 + hostCount * 3 + nodeCount + 1)
  let next = 0
  const zooKeeperPort = ports[next++]
  const hosts: ClusterHost[] = []
  for (let shard = 1; shard <= shards; shard++) {
    for (let replica = 1; replica <= replicas; replica++) {
      hosts.push({ shard, replica, ports: { http: ports[next++], tcp: ports[next++], interserver: ports[next++] } })
    }
  }
  const nodePorts = ports.slice(next, next + nodeCount)
  const lbPort = ports[next + nodeCount]
  const clickhouseUrls = hosts.map((h) => `http://127.0.0.1:${h.ports.http}`)
  const adminToken = generateToken('pat')
  writeFileSync(join(dir, 'admin-token'), adminToken + '\n', { mode: 0o600 })
  // The nodes forward live tail frames to each other with it (lib/live/cluster-live.ts).
  const clusterSecret = randomBytes(24).toString('base64url')

  let zooKeeper: ZooKeeper | undefined
  const servers: Array<ClusterClickHouse | undefined> = hosts.map(() => undefined)
  const nodes: SluiceNode[] = []
  let haproxy: Haproxy | undefined
  let stopping: Promise<void> | undefined

  const startHost = async (i: number): Promise<void> => {
    const host = hosts[i]
    log(`starting ClickHouse ${replicaName(host)} on ${clickhouseUrls[i]}`)
    servers[i] = await startClusterClickHouse({
      dir: join(dir, `clickhouse-${replicaName(host)}`), host, hosts, cluster, zooKeeperPort, startTimeoutMs,
    })
  }
  const startZk = async (): Promise<void> => {
    log(`starting ZooKeeper on 127.0.0.1:${zooKeeperPort}`)
    zooKeeper = await startZooKeeper({ dir: join(dir, 'zookeeper'), port: zooKeeperPort, startTimeoutMs })
  }
  const startNode = async (index: number): Promise<void> => {
    const nodeDir = join(dir, `sluice-${index + 1}`)
    mkdirSync(nodeDir, { recursive: true })
    const clickhouseUrl = clickhouseUrls[nearestHost(index, hostCount, replicas)]
    const config = deepMerge({
      server: { host: '127.0.0.1', port: nodePorts[index] },
      clickhouse: { url: clickhouseUrl, database, cluster, insertUrls: clickhouseUrls.join(',') },
      cluster: { nodeUrl: `http://127.0.0.1:${nodePorts[index]}`, secret: clusterSecret },
      dataDir: nodeDir,
      bootstrapToken: adminToken,
      log: { level: 'warn' },
    }, options.sluiceConfig ?? {})
    const configFile = join(nodeDir, 'config.json')
    writeFileSync(configFile, JSON.stringify(config, null, 2) + '\n')
    const url = `http://127.0.0.1:${nodePorts[index]}`
    log(`starting Sluice node ${index + 1} on ${url} (ClickHouse ${clickhouseUrl})`)
    const child = spawnChild({
      name: `sluice node ${index + 1}`,
      command: process.execPath,
      args: ['--max-semi-space-size=16', new URL('../../lib/main.ts', import.meta.url).pathname],
      logFile: join(nodeDir, 'sluice.log'),
      cwd: nodeDir,
      env: { ...inheritedEnv(), SLUICE_CONFIG: configFile, MALLOC_ARENA_MAX: '2', MALLOC_MMAP_THRESHOLD_: '262144' },
    })
    nodes.push({ index, url, clickhouseUrl, child })
    await child.waitUntil(async () => (await httpStatus(`${url}/readyz`)) === 200, startTimeoutMs, `200 from ${url}/readyz`)
  }

  const stopAll = (): Promise<void> => {
    stopping ??= (async () => {
      await haproxy?.stop()
      await Promise.all(nodes.map((n) => n.child.stop()))
      await Promise.all(servers.map((s) => s?.stop()))
      await zooKeeper?.stop()
    })()
    return stopping
  }

  try {
    await startZk()
    await Promise.all(hosts.map((_, i) => startHost(i)))
    if (nodeCount > 0) await startNode(0) // migrates and bootstraps alone: the others find the schema and the admin there
    await Promise.all(nodePorts.slice(1).map((_, i) => startNode(i + 1)))
    if (options.haproxy ?? true) {
      log(`starting haproxy on 127.0.0.1:${lbPort}`)
      haproxy = await startHaproxy({ dir: join(dir, 'haproxy'), port: lbPort, backends: nodePorts.map((p) => `127.0.0.1:${p}`), startTimeoutMs })
    }
  } catch (err) {
    await stopAll()
    throw err
  }

  return {
    dir, cluster, database, zooKeeperPort, hosts, clickhouseUrls, nodes, adminToken,
    url: haproxy?.url ?? nodes[0]?.url ?? '',
    async stopClickHouse (i) { await servers[i]?.stop(); servers[i] = undefined },
    async startClickHouse (i) { if (servers[i] === undefined) await startHost(i) },
    async stopZooKeeper () { await zooKeeper?.stop(); zooKeeper = undefined },
    async startZooKeeper () { if (zooKeeper === undefined) await startZk() },
    stop: stopAll,
    processes () {
      const out: ClusterProcess[] = []
      const add = (kind: ClusterProcess['kind'], child: Child | undefined): void => {
        if (child?.pid !== undefined && !child.hasExited) out.push({ kind, name: child.name, pid: child.pid })
      }
      add('zookeeper', zooKeeper?.child)
      for (const server of servers) add('clickhouse', server?.child)
      for (const node of nodes) add('sluice', node.child)
      add('haproxy', haproxy?.child)
      return out
    },
    kill () {
      for (const child of [haproxy?.child, ...nodes.map((n) => n.child), ...servers.map((x) => x?.child), zooKeeper?.child]) child?.kill('SIGKILL')
    },
  }
}
