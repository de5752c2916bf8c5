// How the batch writer reads a failed ClickHouse insert (lib/storage/batch-writer.ts, contract
// "ClickHouse down" and "Unknown outcome"): retried or not, and whether it may have been stored
// anyway. ClickHouse errors are matched by their numeric code, never by message text.
import { ClickHouseError, clickhouseCodes } from './clickhouse.ts'

const c = clickhouseCodes
const transientCodes: ReadonlySet<number> = new Set([
  c.TOO_MANY_PARTS, c.MEMORY_LIMIT_EXCEEDED, c.CANNOT_ALLOCATE_MEMORY, c.TIMEOUT_EXCEEDED,
  c.TOO_MANY_SIMULTANEOUS_QUERIES, c.SOCKET_TIMEOUT, c.NETWORK_ERROR, c.TABLE_IS_READ_ONLY,
  c.NOT_ENOUGH_SPACE, c.NO_ZOOKEEPER, c.KEEPER_EXCEPTION, c.TOO_FEW_LIVE_REPLICAS,
  c.UNSATISFIED_QUORUM_FOR_PREVIOUS_WRITE, c.UNKNOWN_STATUS_OF_INSERT,
])
const malformedDataCodes: ReadonlySet<number> = new Set([
  c.UNEXPECTED_END_OF_FILE, c.CANNOT_PARSE_TEXT, c.CANNOT_PARSE_ESCAPE_SEQUENCE,
  c.CANNOT_PARSE_QUOTED_STRING, c.CANNOT_PARSE_INPUT_ASSERTION_FAILED, c.ATTEMPT_TO_READ_AFTER_EOF,
  c.CANNOT_READ_ALL_DATA, c.CANNOT_PARSE_DATE, c.CANNOT_PARSE_DATETIME, c.CANNOT_PARSE_NUMBER,
  c.INCORRECT_DATA, c.TOO_LARGE_STRING_SIZE,
])
/** Socket errors that mean the request never reached ClickHouse: nothing can have been stored. */
const notSentSysCodes: ReadonlySet<string> = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL'])

/** transient: retried; malformed: the rows are bad, never retried; refused: anything else, never retried. */
export const insertFailureKinds = ['transient', 'malformed', 'refused'] as const
export type FailureKind = typeof insertFailureKinds[number]

/** Retry what may pass by itself; never what will fail the same way again. */
export function classifyInsertError (err: unknown): FailureKind {
  if (!(err instanceof ClickHouseError)) return 'refused'
  if (err.chCode === 0 || transientCodes.has(err.chCode)) return 'transient' // 0: no answer at all
  return malformedDataCodes.has(err.chCode) ? 'malformed' : 'refused'
}

/**
 * True when a failed insert may nevertheless have been committed: no answer from ClickHouse
 * (timeout, abort, reset) once the connection was made. A refused connection is not ambiguous:
 * nothing was stored. Nor is a server error answer here, but one may come after the table's
 * part was written (a materialized view failed): insert-retries.ts counts the rows then.
 */
export function isAmbiguousFailure (err: unknown): boolean {
  if (err instanceof ClickHouseError && err.chCode === c.UNKNOWN_STATUS_OF_INSERT) return true
  if (!(err instanceof ClickHouseError) || err.chCode !== 0) return false
  const sysCode = (err as { sysCode?: unknown }).sysCode
  return !(typeof sysCode === 'string' && notSentSysCodes.has(sysCode))
}
