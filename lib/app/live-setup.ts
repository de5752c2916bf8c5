// The live side of the app: the tail hub and, in cluster mode with cluster.nodeUrl and a secret,
// the forwarding of tail events between nodes (lib/live/cluster-live.ts).
import type { Config } from '../config.ts'
import type { Logger } from '../logger.ts'
import type { NodeRegistry } from '../storage/node-registry.ts'
import type { SluiceMetrics } from '../metrics/metrics.ts'
import { TailHub } from '../live/tail-hub.ts'
import { ClusterLive } from '../live/cluster-live.ts'

export interface Live {
  tailHub: TailHub
  /** Cluster mode with cluster.nodeUrl and cluster.secret only. */
  clusterLive: ClusterLive | undefined
}

export function startLive (config: Config, log: Logger, registry: NodeRegistry | undefined, metrics: SluiceMetrics): Live {
  const tailForwarded = metrics.registry.counter('sluice_tail_forwarded_events_total', 'Tail events forwarded to the other nodes\' clients (cluster mode)')
  const tailForwardDropped = metrics.registry.counter('sluice_tail_forward_dropped_events_total', 'Tail events not forwarded to another node: its queue was full, or it was down')
  // Cluster mode with cluster.nodeUrl: tails see every node's events (lib/live/cluster-live.ts).
  const clusterLive = registry === undefined || config.cluster.nodeUrl === null || config.cluster.secret === null
    ? undefined
    : new ClusterLive({
      nodeUrl: config.cluster.nodeUrl.replace(/\/+$/, ''),
      secret: config.cluster.secret,
      peers: () => registry.peers,
      beat: () => registry.beat(),
      log: log.child({ component: 'cluster-live' }),
      onSent: (n) => tailForwarded.inc(undefined, n),
      onDropped: (n) => tailForwardDropped.inc(undefined, n),
    })
  const tailHub = new TailHub({
    maxTailsPerOrg: config.tail.maxPerOrg,
    maxBufferedBytes: config.tail.maxBufferedBytes,
    eventsPerSecond: config.tail.eventsPerSecond,
    peers: clusterLive,
    onTailsChange: clusterLive === undefined ? undefined : () => clusterLive.tailsChanged(),
  })
  if (clusterLive !== undefined) registry!.setAdvert(() => clusterLive.advert(tailHub.openTails()))
  return { tailHub, clusterLive }
}
