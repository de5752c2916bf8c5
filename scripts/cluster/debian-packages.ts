// Installs the Debian packages the local cluster needs when they are missing: `zookeeper` (its
// jars under /usr/share/java; ClickHouse 18.16 needs ZooKeeper for replicated tables and ON
// CLUSTER DDL) and `haproxy` (the load balancer in front of the Sluice nodes). clickhouse-server
// is installed by .ci/ensure-deps.sh. Uses apt-get directly as root, through sudo otherwise.
import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'

export interface ClusterPackage {
  /** Debian package name. */
  name: string
  /** A file the package installs: present means installed. */
  marker: string
}

export const clusterPackages: readonly ClusterPackage[] = [
  { name: 'zookeeper', marker: '/usr/share/java/zookeeper.jar' },
  { name: 'haproxy', marker: '/usr/sbin/haproxy' },
]

/** The packages whose marker file is absent. */
export function missingPackages (packages: readonly ClusterPackage[] = clusterPackages): ClusterPackage[] {
  return packages.filter((p) => !existsSync(p.marker))
}

/** apt-get installs what is missing; throws with the command to run by hand when it cannot. */
export function ensurePackages (log: (line: string) => void, packages: readonly ClusterPackage[] = clusterPackages): void {
  const missing = missingPackages(packages).map((p) => p.name)
  if (missing.length === 0) return
  const isRoot = process.getuid?.() === 0
  const prefix = isRoot ? [] : ['sudo']
  if (!isRoot && !existsSync('/usr/bin/sudo')) {
    throw new Error(`the local cluster needs ${missing.join(', ')}; run as root: apt-get install -y ${missing.join(' ')}`)
  }
  log(`installing ${missing.join(', ')} with apt-get...`)
  const run = (args: string[]): void => {
    const [command, ...rest] = [...prefix, ...args]
    execFileSync(command, rest, { stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } })
  }
  run(['apt-get', 'update', '-qq'])
  run(['apt-get', 'install', '-y', '-qq', '--no-install-recommends', ...missing])
  const still = missingPackages(packages).map((p) => p.name)
  if (still.length > 0) throw new Error(`apt-get did not install ${still.join(', ')}`)
}
