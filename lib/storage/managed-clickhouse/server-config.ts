// The managed ClickHouse's configuration: two free ports on 127.0.0.1 and a config.xml in the
// data dir that keeps everything (data, logs, temporary files) under it. One file works on
// ClickHouse 18.16 and current versions: users, profiles and quotas are inline.
import { once } from 'node:events'
import { mkdirSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import type { AddressInfo, Server } from 'node:net'
import { join, resolve } from 'node:path'

export interface ClickHousePorts { http: number, tcp: number }

/** The config file's name in the data dir; leftovers.ts recognises our servers by it. */
export const configFileName = 'config.xml'

const escapeXml = (text: string): string =>
  text.replace(/[<>&'"]/g, (ch) => `&#${ch.charCodeAt(0)};`)

/** Writes `config.xml` into dataDir and returns its path. Users, profiles and quotas are inline. */
export function writeClickHouseConfig (dataDir: string, ports: ClickHousePorts): string {
  const dir = resolve(dataDir)
  const at = (sub: string): string => escapeXml(join(dir, sub))
  mkdirSync(dir, { recursive: true })
  // No interserver_http_port (nor mysql/postgresql ports on newer versions): unset means unopened.
  const xml = `<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><size>100M</size><count>3</count>
    <log>${at('clickhouse-server.log')}</log><errorlog>${at('clickhouse-server.err.log')}</errorlog></logger>
  <listen_host>127.0.0.1</listen_host><http_port>${ports.http}</http_port><tcp_port>${ports.tcp}</tcp_port>
  <path>${at('data')}/</path><tmp_path>${at('tmp')}/</tmp_path>
  <user_files_path>${at('user_files')}/</user_files_path><format_schema_path>${at('format_schemas')}/</format_schema_path>
  <timezone>UTC</timezone>
  <!-- The defaults (5 GiB of marks, 8 GiB uncompressed) assume a host of its own; this one shares it. -->
  <mark_cache_size>536870912</mark_cache_size><uncompressed_cache_size>536870912</uncompressed_cache_size>
  <max_concurrent_queries>100</max_concurrent_queries>
  <default_profile>default</default_profile><default_database>default</default_database>
  <users><default><password></password><networks><ip>127.0.0.1</ip><ip>::1</ip></networks>
    <profile>default</profile><quota>default</quota></default></users>
  <profiles><default></default></profiles><quotas><default></default></quotas>
</yandex>
`
  const file = join(dir, configFileName)
  writeFileSync(file, xml)
  return file
}

/** Two distinct free ports: both are held at once so the OS cannot hand out the same one twice. */
export async function reservePorts (): Promise<ClickHousePorts> {
  const servers: Server[] = [createServer(), createServer()]
  for (const server of servers) {
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
  }
  const [http, tcp] = servers.map((server) => (server.address() as AddressInfo).port)
  await Promise.all(servers.map((server) => new Promise((done) => server.close(done))))
  return { http, tcp }
}
