// The request bodies of the ingest benchmark, built once before any load: `count` distinct bodies
// of `linesPerBody` seeded lines each (payload.ts: ~210 B, mixed formats), every one in the four
// forms a run may send:
// - plain: NDJSON, as a shipper sends it to Sluice;
// - gzip: the same, gzipped (zlib level 6, what most shippers use);
// - directJson / directRowBinary: the same events as the rows Sluice stores, for POSTing straight
//   to ClickHouse (`INSERT ... FORMAT JSONEachRow` / `FORMAT RowBinary`). They are made by the
//   parse worker itself (lib/ingest/parse-worker.ts) so that ClickHouse gets exactly Sluice's
//   rows; JSONEachRow is those rows read back and written as one JSON object per row.
import { gzipSync } from 'node:zlib'
import parseTask from '../lib/ingest/parse-worker.ts'
import { eventColumns } from '../lib/ingest/parse-task.ts'
import { randomSeqBase } from '../lib/storage/row-seq.ts'
import { readEventRows } from '../lib/ingest/row-serializer.ts'
import { generateLines } from './payload.ts'

export interface Body {
  lines: number
  plain: Buffer
  gzip: Buffer
  directJson: Buffer
  directRowBinary: Buffer
}

export interface BodyPoolOptions {
  count: number
  linesPerBody: number
  seed: number
  /** Event times fall in the minute before this (ms since the epoch). */
  nowMs: number
  /** org_id of the rows posted straight to ClickHouse. */
  directOrgId: string
  directStream: string
}

const day = 86_400_000
const numericColumns: ReadonlySet<string> = new Set(['ts', 'received_at', 'status', 'rt', 'bytes', 'seq', 'size'])

/** The worker's RowBinary rows (eventColumns order) as JSONEachRow, one object per row. */
function rowsToJsonEachRow (rows: Buffer): Buffer {
  const out: string[] = []
  for (const fields of readEventRows(rows)) {
    const record: Record<string, string | number | null> = {}
    eventColumns.forEach((name, i) => {
      const value = fields[i]
      record[name] = value !== null && numericColumns.has(name) ? Number(value) : value
    })
    out.push(JSON.stringify(record))
  }
  return Buffer.from(out.join('\n') + '\n')
}

export function buildBodyPool (options: BodyPoolOptions): Body[] {
  const lines = generateLines(options.count * options.linesPerBody, options.seed, options.nowMs)
  const bodies: Body[] = []
  for (let i = 0; i < options.count; i++) {
    const chunk = lines.slice(i * options.linesPerBody, (i + 1) * options.linesPerBody)
    const plain = Buffer.from(chunk.join('\n') + '\n')
    const input = new ArrayBuffer(plain.byteLength)
    plain.copy(Buffer.from(input))
    const parsed = parseTask({
      input, firstLine: 1, orgId: options.directOrgId, stream: options.directStream,
      receivedAt: options.nowMs, minTs: options.nowMs - 30 * day, maxTs: options.nowMs + 2 * day,
      seqBase: randomSeqBase(),
      live: null,
    })
    if (parsed.failed !== 0 || parsed.ingested !== chunk.length) {
      throw new Error(`body ${i}: the parse worker failed ${parsed.failed} of ${chunk.length} generated lines`)
    }
    const directRowBinary = Buffer.from(parsed.rows)
    bodies.push({ lines: chunk.length, plain, gzip: gzipSync(plain), directRowBinary, directJson: rowsToJsonEachRow(directRowBinary) })
  }
  return bodies
}

/** Mean bytes of one form of the bodies. */
export function meanBytes (bodies: readonly Body[], form: Exclude<keyof Body, 'lines'>): number {
  return bodies.reduce((sum, b) => sum + b[form].byteLength, 0) / bodies.length
}
