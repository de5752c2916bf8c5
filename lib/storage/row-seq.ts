// The `seq` column: how the rows of one ingest request are numbered, so that the batch writer can
// find them again after an insert whose outcome is unknown (batch-writer.ts, identity) and events
// paginate with a tiebreak (docs/api.md section 7). A request draws a random seqBase; its rows are
// seqBase + line number, inside [seqBase, seqBase + seqLineSpace).

import { sql } from './sql.ts'
import type { SqlFragment } from './sql.ts'

/** Lines per request that `seq` can number (2^25); a 64 MiB body has fewer non-blank lines. */
export const seqLineSpace = 2 ** 25

/** A random seqBase: 28 random bits above the line bits, so seq stays below 2^53. */
export function randomSeqBase (): number {
  return Math.floor(Math.random() * 2 ** 28) * seqLineSpace
}

/** A request's rows as SQL: its org, stream and seq range (the outcome check's and a pending key's count). */
export function seqRangeSql (id: { readonly orgId: string, readonly stream: string, readonly seqBase: number }): SqlFragment {
  return sql`(org_id = ${id.orgId} AND stream = ${id.stream} AND seq >= ${id.seqBase} AND seq < ${id.seqBase + seqLineSpace})`
}
