// Reading the end of a server's files: the managed ClickHouse's logs (quoted in errors) and its
// small pid and status files (read for leftovers), and the local cluster's children's logs
// (scripts/cluster/child.ts).
import { closeSync, fstatSync, openSync, readSync } from 'node:fs'

/** The last `bytes` of a file (a log may be 100 MB), or '' when there is none. */
export function tailOf (file: string, bytes = 1024): string {
  let fd: number | undefined
  try {
    fd = openSync(file, 'r')
    const buffer = Buffer.alloc(bytes)
    const length = readSync(fd, buffer, 0, bytes, Math.max(0, fstatSync(fd).size - bytes))
    return buffer.toString('utf8', 0, length).trim()
  } catch {
    return ''
  } finally {
    if (fd !== undefined) closeSync(fd)
  }
}
