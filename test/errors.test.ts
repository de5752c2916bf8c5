// The error catalogue and the README agree: every API error code and every line failure code is
// in the README's tables with the right status, and the README lists no code the code lacks.
import t from 'tap'
import { readFileSync } from 'node:fs'
import { errorCatalogue, errorCodes, SluiceError, toHttpError } from '../lib/errors.ts'
import { lineFailureCodes } from '../lib/ingest/parse-task.ts'

const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8')

function tableAfter (heading: string): string[][] {
  const start = readme.indexOf(heading)
  if (start < 0) return []
  const rows: string[][] = []
  for (const line of readme.slice(start).split('\n').slice(1)) {
    if (line.startsWith('#')) break
    if (!line.startsWith('|') || /^\|\s*-/.test(line)) continue
    rows.push(line.split('|').slice(1, -1).map((c) => c.trim().replace(/`/g, '')))
  }
  return rows.slice(1) // header
}

t.test('every API error code is in the README with its status', async (t) => {
  const rows = tableAfter('## Error codes')
  t.ok(rows.length > 0, 'the README has an error code table')
  const documented = new Map(rows.map((r) => [r[0], Number(r[1])]))
  for (const code of errorCodes) {
    t.equal(documented.get(code), errorCatalogue[code].status, `${code} documented as ${errorCatalogue[code].status}`)
  }
  for (const code of documented.keys()) t.ok(code in errorCatalogue, `README code ${code} exists`)
})

t.test('every line failure code is in the README', async (t) => {
  const rows = tableAfter('### Line failure codes')
  const documented = new Set(rows.map((r) => r[0]))
  for (const code of lineFailureCodes) t.ok(documented.has(code), `${code} documented`)
  t.equal(documented.size, lineFailureCodes.length)
})

t.test('every 429 and 503 in the catalogue gets a Retry-After where raised', async (t) => {
  const e = toHttpError(Object.assign(new Error('refused'), { code: 'ECONNREFUSED' }))
  t.equal(e.code, 'storage_unavailable')
  t.ok((e.retryAfter ?? 0) >= 1)
  t.equal(toHttpError(Object.assign(new Error('bad'), { code: 'Z_DATA_ERROR' })).code, 'malformed_body')
  t.equal(toHttpError(new Error('boom')).code, 'internal_error')
  const own = new SluiceError('server_busy', undefined, { retryAfter: 2 })
  t.equal(toHttpError(own), own)
  t.equal(own.status, 429)
})

t.test('wrapped_body is both a line failure code and the 400 of a request made only of such lines', async (t) => {
  t.ok((lineFailureCodes as readonly string[]).includes('wrapped_body'), 'a line failure code')
  t.equal(errorCatalogue.wrapped_body.status, 400)
  t.equal(new SluiceError('wrapped_body').code, 'wrapped_body')
})
