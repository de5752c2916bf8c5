// `npm run cluster`: the local cluster (scripts/cluster/local-cluster.ts) for demos and manual tests:
// ZooKeeper, ClickHouse 2 shards x 2 replicas, 2 Sluice nodes in cluster mode and haproxy in
// front of them. State in ./data/cluster (or the directory given as the first argument), wiped
// at each start. Ctrl-C or SIGTERM stops every process.
import { rmSync } from 'node:fs'
import { resolve } from 'node:path'
import { startLocalCluster } from './cluster/local-cluster.ts'
import { replicaName } from './cluster/cluster-clickhouse.ts'

const dir = resolve(process.argv[2] ?? 'data/cluster')
rmSync(dir, { recursive: true, force: true })
const say = (line: string): void => { process.stderr.write(`cluster: ${line}\n`) }

const cluster = await startLocalCluster({ dir, log: say })
let stopping = false
const stop = (signal: string): void => {
  if (stopping) return
  stopping = true
  say(`${signal}: stopping haproxy, Sluice, ClickHouse and ZooKeeper...`)
  cluster.stop().then(() => { say('stopped'); process.exit(0) }, (err: unknown) => { say(`stop failed: ${String(err)}`); process.exit(1) })
}
process.on('SIGINT', () => stop('SIGINT'))
process.on('SIGTERM', () => stop('SIGTERM'))

process.stderr.write(`
The local cluster is running (state and logs in ${dir}):

  load balancer (haproxy)   ${cluster.url}
${cluster.nodes.map((n) => `  Sluice node ${n.index + 1}              ${n.url}   (reads ClickHouse ${n.clickhouseUrl})`).join('\n')}
${cluster.hosts.map((h, i) => `  ClickHouse ${replicaName(h)} (shard ${h.shard})  ${cluster.clickhouseUrls[i]}`).join('\n')}
  ZooKeeper                 127.0.0.1:${cluster.zooKeeperPort}
  cluster / database        ${cluster.cluster} / ${cluster.database}

Admin token (also in ${dir}/admin-token):

    export SLUICE_URL=${cluster.url} SLUICE_TOKEN=${cluster.adminToken}

Try it through the load balancer (a stream or token created through one node is known to the
other within metadata.refreshIntervalMs, 5 s: until then the other node answers 404 or 403):

    npx sluice stream create web
    npx sluice token create web            # then: export INGEST_TOKEN=sli_...
    printf '%s\\n' '{"host":"web-1","path":"/","status":200}' |
      curl -s -X POST $SLUICE_URL/api/ingest/web -H "Authorization: Bearer $INGEST_TOKEN" \\
           -H 'Content-Type: application/x-ndjson' --data-binary @-
    curl -s "$SLUICE_URL/api/streams/web/events" -H "Authorization: Bearer $SLUICE_TOKEN"

Where the rows went (each batch to one shard, copied to both of its replicas):

    for u in ${cluster.clickhouseUrls.join(' ')}; do
      curl -s $u --data-binary "SELECT count() FROM ${cluster.database}.events_local"; done

Stop with Ctrl-C.
`)
