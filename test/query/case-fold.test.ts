// foldCase is ClickHouse's lowerUTF8, checked for every Unicode code point against the live
// server. Rows of 37 consecutive code points (a prime, so characters of every UTF-8 length land
// across lowerUTF8's 16-byte SSE blocks) catch both a wrong mapping and a boundary bug. A failure
// here after a Node upgrade means V8's Unicode data moved under case-fold.ts's ranges.
import t from 'tap'
import { Buffer } from 'node:buffer'
import { createTestDatabase, onChdb } from '../helpers/clickhouse.ts'
import { foldCase, foldTable } from '../../lib/query/case-fold.ts'
import { detectFold } from '../../lib/query/filter-sql.ts'
import { sql } from '../../lib/storage/sql.ts'

const codePointsPerRow = 37

function escapeTsv (text: string): string {
  return text.replace(/\\/g, '\\\\').replace(/\t/g, '\\t').replace(/\n/g, '\\n')
}

// On a server whose lowerUTF8 is not 18.16's (26.x lowers with ICU: İ, ẞ, final sigma, title
// case), the SQL filter folds with translateUTF8 and case-fold.ts's table (filter-sql.ts
// detectFold): that is what must agree there.
t.test('foldCase agrees with the SQL folding (lowerUTF8 on 18.16) on every code point', async (t) => {
  const { clickhouse } = await createTestDatabase(t)
  await clickhouse.command('CREATE TABLE fold (id UInt32, s String) ENGINE = Memory')
  const rows: string[] = []
  let row: number[] = []
  for (let cp = 1; cp <= 0x10FFFF; cp++) {
    if (cp >= 0xD800 && cp <= 0xDFFF) continue // surrogates are not characters; toWellFormed covers them
    row.push(cp)
    if (row.length === codePointsPerRow) { rows.push(String.fromCodePoint(...row)); row = [] }
  }
  rows.push(String.fromCodePoint(...row))
  const body = rows.map((s, id) => `${id}\t${escapeTsv(s)}\n`).join('')
  await clickhouse.insertRaw('INSERT INTO fold (id, s) FORMAT TabSeparated', Buffer.from(body))

  const fold = await detectFold(clickhouse)
  t.equal(fold, onChdb ? 'table' : 'lowerUTF8', 'the embedded engine (26.x) folds by the table')
  const { from, to } = foldTable()
  const expression = fold === 'lowerUTF8' ? sql`lowerUTF8(s)` : sql`translateUTF8(s, ${from}, ${to})`
  const lowered = await clickhouse.query<{ id: number, l: string }>(sql`SELECT id, ${expression} AS l FROM fold ORDER BY id`)
  t.equal(lowered.length, rows.length)
  const wrong: string[] = []
  for (const { id, l } of lowered) {
    const source = [...rows[id]]
    const ours = [...foldCase(rows[id])]
    const theirs = [...l]
    for (let k = 0; k < Math.max(ours.length, theirs.length); k++) {
      if (ours[k] !== theirs[k]) wrong.push(`U+${source[k]?.codePointAt(0)?.toString(16)}`)
    }
  }
  t.same(wrong.slice(0, 20), [], `code points folded differently (${wrong.length} in all)`)
})

t.test('what the folding does and does not do', async (t) => {
  t.equal(foldCase('HeLLo, World'), 'hello, world', 'ASCII')
  t.equal(foldCase('ÉCOLE Ωmega ПРИВЕТ Ա'), 'école ωmega привет ա', 'Latin-1, Greek, Cyrillic, Armenian')
  t.equal(foldCase('ΟΔΟΣ'), 'οδοσ', 'no final-sigma rule, unlike toLowerCase')
  t.equal(foldCase('ǅ'), 'ǅ', 'title case letters stay')
  t.equal(foldCase('ẞ İ'), 'ẞ İ', 'letters whose lower case has another UTF-8 length stay')
  t.equal(foldCase('\u212a \u2160'), '\u212a \u2160', 'U+2000-U+2FFF (Kelvin sign, Roman numerals) stays')
  t.equal(foldCase('\u13a0'), '\u13a0', 'Cherokee: lower case only since Unicode 8.0, unknown to ClickHouse')
  t.equal(foldCase('𐐀'), '𐐨', 'Deseret')
  t.equal(foldCase('A\ud800'), 'a\ufffd', 'a lone surrogate becomes U+FFFD, as stored')
})
