// Debian's rsyslog 8.2302 with its Elasticsearch output, run without installing it: Debian's
// `rsyslog` conflicts with `syslog-ng-core`, which the syslog-ng test needs (.ci/run installs it).
// `apt-get download` fetches the packages (rsyslog, rsyslog-elasticsearch, and the two libraries
// rsyslogd links that a machine without rsyslog may lack), `dpkg-deb -x` unpacks them under
// .tap/ (never committed), and rsyslogd runs from there: `-M` names the modules directory, and
// LD_LIBRARY_PATH the unpacked libraries. Unpacked once; later runs reuse the directory.
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const packages = ['rsyslog', 'rsyslog-elasticsearch', 'libestr0', 'libfastjson4']
const cacheDir = fileURLToPath(new URL('../../.tap/debian-rsyslog/', import.meta.url))
const root = join(cacheDir, 'root')
const libDir = join(root, 'usr/lib/x86_64-linux-gnu')

export interface DebianRsyslog {
  binary: string
  modules: string
  /** The environment rsyslogd needs (LD_LIBRARY_PATH for the unpacked libraries). */
  env: Record<string, string>
  version: string
}

/** The unpacked rsyslog, or why there is none (the test's skip reason). */
export function debianRsyslog (): DebianRsyslog | string {
  const binary = join(root, 'usr/sbin/rsyslogd')
  const modules = join(libDir, 'rsyslog')
  if (!existsSync(join(modules, 'omelasticsearch.so'))) {
    try {
      rmSync(cacheDir, { recursive: true, force: true })
      mkdirSync(cacheDir, { recursive: true })
      execFileSync('apt-get', ['download', ...packages], { cwd: cacheDir, stdio: 'pipe', timeout: 120_000 })
      for (const deb of readdirSync(cacheDir).filter((f) => f.endsWith('.deb'))) {
        execFileSync('dpkg-deb', ['-x', join(cacheDir, deb), root], { stdio: 'pipe' })
      }
    } catch (err) {
      return `Debian's rsyslog could not be downloaded (apt-get download ${packages.join(' ')}): ${(err as Error).message.split('\n')[0]}`
    }
  }
  const env = { LD_LIBRARY_PATH: [libDir, process.env.LD_LIBRARY_PATH].filter(Boolean).join(':') }
  let version: string
  try {
    version = /rsyslogd\s+(\S+)/.exec(execFileSync(binary, ['-v'], { env: { ...process.env, ...env } }).toString())?.[1] ?? 'unknown'
  } catch (err) {
    return `the unpacked rsyslogd does not run: ${(err as Error).message.split('\n')[0]}`
  }
  return { binary, modules, env, version }
}
