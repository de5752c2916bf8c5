// Which text format the embedded engine (chdb) inserts Sluice's rows fastest in:
// `node bench/chdb-insert-formats.bench.ts [--rows 100000] [--rounds 3]`. It migrates a fresh chdb
// directory (events and its rollup views), stores `--rows` bench/payload.ts lines through the
// parse worker as JSONCompactEachRow, exports those rows as JSONCompactEachRow, TabSeparated and
// JSONEachRow, and inserts each `--rounds` times, alternating, with the batch writer's settings,
// printing wall time and this process's CPU (the engine runs in it). bench/README.md, "Embedded
// engine (chdb)", finding 3.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { createClickHouse } from '../lib/storage/clickhouse.ts'
import { migrate } from '../lib/storage/migrate.ts'
import { createLogger } from '../lib/logger.ts'
import parseLines from '../lib/ingest/parse-worker.ts'
import { eventColumns } from '../lib/events/fields.ts'
import { generateLines } from './payload.ts'
import { loadChdb } from '../lib/storage/chdb-engine.ts'

const { values: args } = parseArgs({ options: { rows: { type: 'string', default: '100000' }, rounds: { type: 'string', default: '3' } } })
const n = Number(args.rows)
const dir = mkdtempSync(join(tmpdir(), 'sluice-chdb-formats-'))
const ch = createClickHouse({ url: `chdb:${dir}`, user: 'default', password: '', database: 'formats', requestTimeoutMs: 120_000 })
try {
  await migrate(ch, createLogger({ level: 'warn', fd: 2 }))
  const now = Date.now()
  const input = Buffer.from(generateLines(n, 42, now).join('\n') + '\n')
  const buffer = new ArrayBuffer(input.length)
  new Uint8Array(buffer).set(input)
  const parsed = parseLines({ input: buffer, firstLine: 1, orgId: 'org', stream: 'bench', receivedAt: now, minTs: 0, maxTs: now + 2 * 86_400_000, seqBase: 0, live: null, rowFormat: 'JSONCompactEachRow' })
  const columns = eventColumns.join(', ')
  const insert = `INSERT INTO events (${columns}) FORMAT`
  await ch.insertRaw(`${insert} JSONCompactEachRow`, Buffer.from(parsed.rows))
  const formats = ['JSONCompactEachRow', 'TabSeparated', 'JSONEachRow'] as const
  const bodies = new Map<string, Buffer>()
  // Each format as chdb writes it (its own escaping), through a session of its own.
  const session = new (loadChdb().Session)(dir)
  for (const format of formats) {
    bodies.set(format, Buffer.from((await session.queryAsync(`SELECT ${columns} FROM formats.events`, { format })).bytes()))
  }
  session.close()
  const settings = { max_insert_block_size: String(Math.max(n, 1_048_576)), parallel_view_processing: '1' }
  process.stdout.write('| Format | MB | Insert ms | CPU ms (this process) |\n|---|---|---|---|\n')
  for (let round = 1; round <= Number(args.rounds); round++) {
    for (const format of formats) {
      await ch.command('TRUNCATE TABLE events')
      const body = bodies.get(format)!
      const cpu = process.cpuUsage()
      const started = performance.now()
      await ch.insertRaw(`${insert} ${format}`, body, undefined, settings)
      const used = process.cpuUsage(cpu)
      process.stdout.write(`| ${format} | ${(body.length / 1e6).toFixed(1)} | ${(performance.now() - started).toFixed(0)} | ${((used.user + used.system) / 1000).toFixed(0)} |\n`)
    }
  }
} finally {
  await ch.close()
  rmSync(dir, { recursive: true, force: true })
}
