// Compiles parsed `q` terms (filter-parser.ts) into a WHERE fragment over the events table, for
// ClickHouse 18.16 and current versions. Every value is a literal rendered by storage/sql.ts;
// column names come from the fixed map below, never from q.
//
// Each term compiles to a UInt8 that is never NULL: a comparison with a Nullable column (NULL when
// the field is absent) yields NULL, which WHERE drops, but `NOT NULL` is NULL too and 18.16 even
// answers NULL to `0 AND NULL`. Wrapping every comparison in ifNull(.., 0) makes "absent" plainly
// false, so a negated term is exactly the complement: `-host:a` keeps rows whose host is absent,
// as filter-match.ts does in JS. The fragment is parenthesized, safe to AND into any WHERE.
//
// - equals:  ifNull(host = 'a', 0)              - prefix: ifNull(startsWith(path, '/api/'), 0)
// - present (`path:*`): isNotNull(path)         - status prefix compares toString(status)
// - status:  ifNull(status >= 500, 0)           - class: ifNull(intDiv(status, 100) = 5, 0)
// - level: ifNull(level IN ('warn', 'error', 'fatal'), 0) (`level:>=warn`); no level: 0
// - text: ifNull(position(lowerUTF8(col), folded) > 0, 0) over message, path, user_agent, OR-ed;
//   the needle is folded in JS (case-fold.ts), and the three lowerUTF8 calls are shared by all text
//   terms because ClickHouse computes an identical expression once per block. The functions run
//   on the Nullable column (NULL in, NULL out) and ifNull turns the UInt8 result's NULLs into 0:
//   ifNull(col, '') around the string instead copies every string of the column first, a quarter
//   of the search's time (bench/README.md, "Events API").
// startsWith (checked on 18.16) needs no LIKE escaping of % and _.
import { joinSql, rawSql, sql } from '../storage/sql.ts'
import type { SqlFragment } from '../storage/sql.ts'
import { foldCase } from './case-fold.ts'
import { levelNames } from '../events/level.ts'
import type { FilterField, FilterNode } from './filter-parser.ts'

const columns: Record<FilterField, SqlFragment> = {
  host: rawSql('host'),
  path: rawSql('path'),
  method: rawSql('method'),
  src: rawSql('src'),
  status: rawSql('status'),
  filename: rawSql('filename'),
  user_agent: rawSql('user_agent'),
}

const searchedColumns = [rawSql('message'), rawSql('path'), rawSql('user_agent')]

function compileTerm (node: FilterNode): SqlFragment {
  switch (node.kind) {
    case 'text': {
      const needle = foldCase(node.text)
      const scans = searchedColumns.map((col) => sql`ifNull(position(lowerUTF8(${col}), ${needle}) > 0, 0)`)
      return sql`(${joinSql(scans, ' OR ')})`
    }
    case 'equals':
      return sql`ifNull(${columns[node.field]} = ${node.value}, 0)`
    case 'prefix': {
      const col = columns[node.field]
      if (node.prefix === '') return sql`isNotNull(${col})`
      const text = node.field === 'status' ? sql`toString(${col})` : col
      return sql`ifNull(startsWith(${text}, ${node.prefix}), 0)`
    }
    case 'status':
      // The operator comes from the parser's fixed set, never from q as text.
      return sql`ifNull(status ${rawSql(node.operator)} ${node.value}, 0)`
    case 'statusClass':
      return sql`ifNull(intDiv(status, 100) = ${node.digit}, 0)`
    case 'level':
      if (node.levels.length === 0) return rawSql('0')
      return sql`ifNull(level IN (${joinSql(node.levels.map((i) => sql`${levelNames[i]}`), ', ')}), 0)`
  }
}

/** The WHERE fragment that holds when all terms do; `1` for no terms. */
export function filterToSql (nodes: readonly FilterNode[]): SqlFragment {
  if (nodes.length === 0) return rawSql('1')
  const terms = nodes.map((node) => node.negated ? sql`NOT (${compileTerm(node)})` : compileTerm(node))
  return sql`(${joinSql(terms, ' AND ')})`
}
