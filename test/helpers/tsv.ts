// Reads ClickHouse TabSeparated back into values, the way ClickHouse's reader does, so tests can
// check what the parse worker wrote without a server: rows end at a raw '\n', fields at a raw
// '\t', a field that is exactly \N is NULL, and backslash escapes are undone.
const unescapes: Record<string, string> = { b: '\b', f: '\f', n: '\n', r: '\r', t: '\t', 0: '\0', '\\': '\\' }

export function decodeTsv (rows: ArrayBuffer | Uint8Array): (string | null)[][] {
  const text = Buffer.from(rows instanceof ArrayBuffer ? new Uint8Array(rows) : rows).toString('utf8')
  if (text === '') return []
  if (!text.endsWith('\n')) throw new Error('TSV rows must end with a newline')
  return text.slice(0, -1).split('\n').map((row) => row.split('\t').map((field) =>
    field === '\\N' ? null : field.replace(/\\(.)/g, (_, ch: string) => unescapes[ch] ?? ch)))
}
