// A benchmark's temp dir and its ClickHouse's data dir: inside the temp dir, or in a temp dir of
// its own under --clickhouse-dir (another filesystem: bench/README.md, finding 15).
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export class BenchDirs {
  readonly tmp: string
  readonly clickhouse: string

  constructor (prefix: string, clickhouseParent?: string) {
    this.tmp = mkdtempSync(join(tmpdir(), `${prefix}-`))
    this.clickhouse = clickhouseParent ? mkdtempSync(join(clickhouseParent, `${prefix}-ch-`)) : join(this.tmp, 'clickhouse')
  }

  remove (): void {
    rmSync(this.tmp, { recursive: true, force: true })
    rmSync(this.clickhouse, { recursive: true, force: true })
  }
}
