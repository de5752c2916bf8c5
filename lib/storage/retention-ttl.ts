// Retention as a table TTL, on servers that have it (docs/schema-versions.md, "Retention by TTL").
// Every table with a stream's data (events and its rollups) carries one TTL whose rules say each
// stream's retention, so ClickHouse deletes expired rows in its own merges (a server also while
// Sluice is stopped; the embedded engine merges only in Sluice's process). The janitor (retention.ts) stays: it drops whole expired days and trims a shortened
// stream at once, where TTL merges come when ClickHouse schedules them (merge_with_ttl_timeout).
//
// Contract:
// - The TTL never deletes a row the janitor would keep. Rules are day-aligned like the janitor's
//   cutoff: a row of UTC day d goes once day d + N + 1 has begun, N its stream's retention.
// - One rule per retention value shorter than the longest, `WHERE (org_id, stream) IN (...)` its
//   streams, and a last rule without WHERE at the longest retention: a stream the TTL does not
//   list yet keeps at least as long as any stream. No stream, no TTL. When the listed streams
//   would make the statement longer than maxTtlChars, only the last rule is kept (the janitor
//   trims the shorter ones).
// - State-based: syncRetentionTtl reads the streams from ClickHouse (not a node's cache) and the
//   tables' TTL from system.tables, and alters only a table whose TTL differs; it repeats until
//   a read after its ALTERs finds nothing to change, so two nodes changing retention at once end
//   with the TTL of the last change (each one's final read follows the other's write).
// - `materialize_ttl_after_modify = 0`: a new TTL applies to new parts and merges (which compute
//   every row against the current rules), not by a mutation rewriting every part.
// - Single node only; cluster mode keeps the janitor (its DDL is 18.16's, cluster-ddl.ts).
import type { ClickHouse } from './clickhouse.ts'
import { quoteString, sql } from './sql.ts'
import { countDims, dimTable } from './migrations/003_rollups.ts'

/** Tables with a stream's data: events and every rollup the views fill from it. */
export const streamDataTables = ['events', 'events_1m', 'events_1h', dimTable('path'), ...countDims.map(dimTable), dimTable('level')]

/** The stream data tables and the column each one's rows are timed by (ms since the epoch). */
export function timeColumnOf (table: string): string {
  return table === 'events' ? 'ts' : table.endsWith('_1m') ? 'minute_ts' : 'hour_ts'
}

/** Past this many characters of TTL text per table, only the longest-retention rule is kept. */
export const maxTtlChars = 100_000

export interface StreamRetention { orgId: string, name: string, retentionDays: number }

/**
 * The TTL clause for a table timed by `timeColumn`, in the form ClickHouse prints it back in
 * system.tables (so a table already set reads equal); '' when there is no stream.
 */
export function retentionTtl (streams: readonly StreamRetention[], timeColumn: string): string {
  if (streams.length === 0) return ''
  const expiry = (days: number): string => `toDateTime(intDiv(${timeColumn}, 86400000) * 86400) + toIntervalDay(${days + 1})`
  const longest = Math.max(...streams.map((s) => s.retentionDays))
  const byDays = new Map<number, string[]>()
  for (const s of [...streams].sort((a, b) => a.orgId < b.orgId ? -1 : a.orgId > b.orgId ? 1 : a.name < b.name ? -1 : a.name > b.name ? 1 : 0)) {
    if (s.retentionDays >= longest) continue
    const list = byDays.get(s.retentionDays) ?? []
    list.push(`(${quoteString(s.orgId)}, ${quoteString(s.name)})`)
    byDays.set(s.retentionDays, list)
  }
  const rules: string[] = []
  for (const days of [...byDays.keys()].sort((a, b) => a - b)) {
    const list = byDays.get(days)!
    // One tuple prints without the outer parentheses.
    const set = list.length === 1 ? list[0] : `(${list.join(', ')})`
    rules.push(`${expiry(days)} WHERE (org_id, stream) IN ${set}`)
  }
  const last = expiry(longest)
  const text = [...rules, last].join(', ')
  return text.length > maxTtlChars ? last : text
}

/** The TTL clause of a table's engine_full text; '' when it has none. */
export function currentTtl (engineFull: string): string {
  const at = engineFull.indexOf(' TTL ')
  if (at < 0) return ''
  const end = engineFull.indexOf(' SETTINGS ', at)
  return engineFull.slice(at + 5, end < 0 ? undefined : end)
}

/** The ALTERs that bring `tables` to `streams`' retention, given their engine_full texts. */
export function plannedTtlStatements (streams: readonly StreamRetention[], engines: ReadonlyMap<string, string>): string[] {
  const out: string[] = []
  for (const [table, engineFull] of engines) {
    const want = retentionTtl(streams, timeColumnOf(table))
    if (currentTtl(engineFull) === want) continue
    out.push(want === ''
      ? `ALTER TABLE \`${table}\` REMOVE TTL`
      : `ALTER TABLE \`${table}\` MODIFY TTL ${want} SETTINGS materialize_ttl_after_modify = 0`)
  }
  return out
}

async function readState (clickhouse: ClickHouse, tables: readonly string[]): Promise<{ streams: StreamRetention[], engines: Map<string, string> }> {
  const [rows, engines] = await Promise.all([
    clickhouse.query<{ org_id: string, name: string, retention_days: number }>(
      'SELECT org_id, name, retention_days FROM streams FINAL WHERE deleted = 0'),
    clickhouse.query<{ name: string, engine_full: string }>(
      sql`SELECT name, engine_full FROM system.tables WHERE database = ${clickhouse.database} AND has(${tables}, name)`),
  ])
  return {
    streams: rows.map((r) => ({ orgId: String(r.org_id), name: String(r.name), retentionDays: Number(r.retention_days) })),
    engines: new Map(engines.map((e) => [e.name, e.engine_full])),
  }
}

const running = new WeakMap<ClickHouse, Promise<string[]>>()

/**
 * Brings the tables' TTL to the streams' retention now in ClickHouse; the statements run. Calls
 * on one ClickHouse client run one after another.
 */
export function syncRetentionTtl (clickhouse: ClickHouse, tables: readonly string[]): Promise<string[]> {
  const before = running.get(clickhouse) ?? Promise.resolve([])
  const next = before.catch(() => []).then(async () => {
    const ran: string[] = []
    // Two rounds settle any two concurrent changers; more only if changes keep coming.
    for (let round = 0; round < 5; round++) {
      const { streams, engines } = await readState(clickhouse, tables)
      const statements = plannedTtlStatements(streams, engines)
      if (statements.length === 0) break
      for (const statement of statements) await clickhouse.command(statement)
      ran.push(...statements)
    }
    return ran
  })
  running.set(clickhouse, next)
  return next
}
