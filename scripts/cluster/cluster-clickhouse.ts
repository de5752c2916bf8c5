// One ClickHouse server of the local cluster: its config.xml (ports, ZooKeeper, the cluster's
// remote_servers, per-host macros, distributed DDL) and its process.
//
// Contract:
// - Every host gets the same remote_servers: `<cluster>` with the shards and their replicas
//   (internal_replication: a Distributed table writes one replica and replication does the rest)
//   and the same ZooKeeper and distributed_ddl path, so ON CLUSTER DDL reaches all of them.
// - Macros: `shard` (1, 2, ...) and `replica`, unique over the whole cluster (s1r1, s1r2, ...):
//   tables replicated to every host use a ZooKeeper path without {shard}, where the replica name
//   alone must tell the hosts apart.
// - Sized for several servers on one small machine: small mark cache, no uncompressed cache,
//   small background pools; ClickHouse 18.16 ignores keys it does not know.
// - startClusterClickHouse() resolves once /ping answers; stop() stops the process.
import { mkdirSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { answersPing, findClickHouseBinary, MissingClickHouseError } from '../../lib/storage/managed-clickhouse.ts'
import { spawnChild } from './child.ts'
import type { Child } from './child.ts'

export interface HostPorts { http: number, tcp: number, interserver: number }

export interface ClusterHost {
  /** 1-based shard number, the `{shard}` macro. */
  shard: number
  /** 1-based replica number within the shard. */
  replica: number
  ports: HostPorts
}

/** The `{replica}` macro: unique across the cluster. */
export function replicaName (host: Pick<ClusterHost, 'shard' | 'replica'>): string {
  return `s${host.shard}r${host.replica}`
}

const escapeXml = (text: string): string => text.replace(/[<>&'"]/g, (ch) => `&#${ch.charCodeAt(0)};`)

function remoteServers (cluster: string, hosts: readonly ClusterHost[]): string {
  const shards = [...new Set(hosts.map((h) => h.shard))].sort((a, b) => a - b)
  return `<remote_servers><${cluster}>${shards.map((shard) => `
      <shard><internal_replication>true</internal_replication>${hosts.filter((h) => h.shard === shard).map((h) => `
        <replica><host>127.0.0.1</host><port>${h.ports.tcp}</port></replica>`).join('')}
      </shard>`).join('')}
    </${cluster}></remote_servers>`
}

export function clusterConfigXml (dir: string, host: ClusterHost, hosts: readonly ClusterHost[], cluster: string, zooKeeperPort: number): string {
  const at = (sub: string): string => escapeXml(join(dir, sub))
  return `<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><size>50M</size><count>2</count>
    <log>${at('clickhouse-server.log')}</log><errorlog>${at('clickhouse-server.err.log')}</errorlog></logger>
  <listen_host>127.0.0.1</listen_host>
  <http_port>${host.ports.http}</http_port><tcp_port>${host.ports.tcp}</tcp_port>
  <interserver_http_port>${host.ports.interserver}</interserver_http_port><interserver_http_host>127.0.0.1</interserver_http_host>
  <path>${at('data')}/</path><tmp_path>${at('tmp')}/</tmp_path>
  <user_files_path>${at('user_files')}/</user_files_path><format_schema_path>${at('format_schemas')}/</format_schema_path>
  <timezone>UTC</timezone>
  <!-- Four servers share a small machine: 64 MiB of marks each, no uncompressed cache. -->
  <mark_cache_size>67108864</mark_cache_size><uncompressed_cache_size>0</uncompressed_cache_size>
  <max_server_memory_usage>1073741824</max_server_memory_usage>
  <max_concurrent_queries>100</max_concurrent_queries>
  <zookeeper><node><host>127.0.0.1</host><port>${zooKeeperPort}</port></node>
    <session_timeout_ms>10000</session_timeout_ms></zookeeper>
  <distributed_ddl><path>/clickhouse/task_queue/ddl</path></distributed_ddl>
  <macros><shard>${host.shard}</shard><replica>${replicaName(host)}</replica></macros>
  ${remoteServers(cluster, hosts)}
  <default_profile>default</default_profile><default_database>default</default_database>
  <users><default><password></password><networks><ip>127.0.0.1</ip><ip>::1</ip></networks>
    <profile>default</profile><quota>default</quota></default></users>
  <profiles><default>
    <background_pool_size>4</background_pool_size><background_schedule_pool_size>4</background_schedule_pool_size>
    <max_memory_usage>1073741824</max_memory_usage>
  </default></profiles>
  <quotas><default></default></quotas>
</yandex>
`
}

export interface ClusterClickHouse {
  readonly host: ClusterHost
  readonly url: string
  readonly dir: string
  readonly child: Child
  stop (): Promise<void>
}

export interface StartHostOptions {
  dir: string
  host: ClusterHost
  hosts: readonly ClusterHost[]
  cluster: string
  zooKeeperPort: number
  startTimeoutMs: number
  binary?: string | null
}

/** Starts (or restarts, on the same dir and ports) one host of the cluster. */
export async function startClusterClickHouse (options: StartHostOptions): Promise<ClusterClickHouse> {
  const command = findClickHouseBinary(options.binary)
  if (!command) throw new MissingClickHouseError(options.binary)
  const dir = resolve(options.dir)
  mkdirSync(dir, { recursive: true })
  const configFile = join(dir, 'config.xml')
  writeFileSync(configFile, clusterConfigXml(dir, options.host, options.hosts, options.cluster, options.zooKeeperPort))
  const url = `http://127.0.0.1:${options.host.ports.http}`
  const child = spawnChild({
    name: `clickhouse ${replicaName(options.host)}`,
    command: command.command,
    args: [...command.args, `--config-file=${configFile}`],
    logFile: join(dir, 'clickhouse-server.stdout.log'),
    cwd: dir,
  })
  try {
    await child.waitUntil(() => answersPing(url), options.startTimeoutMs, `answer on ${url}/ping`)
  } catch (err) {
    await child.stop()
    throw err
  }
  return { host: options.host, url, dir, child, stop: () => child.stop() }
}
