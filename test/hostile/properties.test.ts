// Property-based tests (fast-check, fixed seeds so CI runs the same cases every time) of the
// parse worker's two paths: the LineScanner fast path (line-scanner.ts) and the reference path
// (JSON.parse, normalizeEvent in event-schema.ts, EventRowWriter#write), and of the framing in
// front of them. For any input:
// - nothing throws;
// - ingested + failed = the number of non-blank lines (blank: only spaces, tabs and CRs);
// - the worker stores exactly the rows, and fails exactly the lines with the codes, that the
//   reference path alone would;
// - a line the scanner takes is stored as the reference stores it. Rows are compared as
//   ClickHouse reads them (readEventRows): the reference may pad a string's length varint, which
//   decodes to the same number (see test/ingest/line-scanner.test.ts).
// Generators stay shallow (nesting <= 4) so that a depth limit on lines changes no expectation.
import t from 'tap'
import type { Test } from 'tap'
import fc from 'fast-check'
import { Buffer, isUtf8 } from 'node:buffer'
import parseTask from '../../lib/ingest/parse-worker.ts'
import type { ParseResult, ParseTask } from '../../lib/ingest/parse-task.ts'
import { LineScanner, blankLine, declined, scannedRow } from '../../lib/ingest/line-scanner.ts'
import { EventRow } from '../../lib/events/event-row.ts'
import { parseEventJson } from '../../lib/events/json-integers.ts'
import { normalizeEvent } from '../../lib/events/normalize.ts'
import type { TimeBounds } from '../../lib/events/normalize.ts'
import { EventRowWriter, readEventRows } from '../../lib/ingest/row-serializer.ts'
import { frameBody } from '../helpers/framing.ts'

const day = 86_400_000
const receivedAt = Date.UTC(2025, 10, 21, 12, 0, 0)
const bounds: TimeBounds = { receivedAt, minTs: receivedAt - 30 * day, maxTs: receivedAt + 2 * day }
const seqBase = 1_000
/** Runs per property: a thousand keep the file at a few seconds on a shared 2-core machine. */
const numRuns = 1000

function makeTask (bytes: Uint8Array, firstLine = 1): ParseTask {
  const input = new ArrayBuffer(bytes.length)
  new Uint8Array(input).set(bytes)
  return { input, firstLine, orgId: 'org_1', stream: 'web', receivedAt, minTs: bounds.minTs, maxTs: bounds.maxTs, seqBase, live: null }
}

function isBlankBytes (bytes: Uint8Array): boolean {
  for (const b of bytes) if (b !== 0x20 && b !== 0x09 && b !== 0x0d) return false
  return true
}

/** The lines of a task body: split at '\n', the last one kept when it lacks its '\n'. */
function linesOf (bytes: Buffer): Buffer[] {
  const lines: Buffer[] = []
  let start = 0
  while (start < bytes.length) {
    let end = bytes.indexOf(0x0a, start)
    if (end === -1) end = bytes.length
    lines.push(bytes.subarray(start, end))
    start = end + 1
  }
  return lines
}

interface Outcome { rows: Array<Array<string | null>>, ingested: number, failed: number, failures: Array<{ line: number, code: string }> }

/** What the reference path alone makes of a task body. */
function referenceParse (bytes: Buffer, firstLine = 1): Outcome {
  const writer = new EventRowWriter('org_1', 'web', receivedAt, 1024)
  const referenceRow = new EventRow()
  const out: Outcome = { rows: [], ingested: 0, failed: 0, failures: [] }
  linesOf(bytes).forEach((lineBytes, i) => {
    const line = firstLine + i
    const fail = (code: string): void => { out.failed++; out.failures.push({ line, code }) }
    if (!isUtf8(lineBytes)) return fail('invalid_utf8')
    if (isBlankBytes(lineBytes)) return
    let value: unknown
    try {
      value = parseEventJson(lineBytes.toString('utf8'))
    } catch {
      return fail('invalid_json')
    }
    const rejection = normalizeEvent(value, bounds, referenceRow)
    if (rejection !== null) return fail(rejection.code)
    writer.write(referenceRow, seqBase + line, lineBytes.length)
    out.ingested++
  })
  out.rows = readEventRows(writer.finish())
  return out
}

function workerParse (bytes: Buffer, firstLine = 1): Outcome {
  const result: ParseResult = parseTask(makeTask(bytes, firstLine))
  return {
    rows: readEventRows(result.rows),
    ingested: result.ingested,
    failed: result.failed,
    failures: result.failures.map(({ line, code }) => ({ line, code })),
  }
}

/** Runs a property; a failure reports fast-check's shrunk counterexample and its seed. */
function holds (t: Test, name: string, property: fc.IProperty<any> | fc.IAsyncProperty<any>, seed: number): Promise<void> | void {
  const report = (details: fc.RunDetails<any>): void => {
    t.notOk(details.failed, details.failed ? fc.defaultReportMessage(details) ?? name : name)
    t.equal(details.numRuns, numRuns, `${name}: ${numRuns} runs`)
  }
  const details = fc.check(property as fc.IProperty<any>, { seed, numRuns })
  if (details instanceof Promise) return details.then(report)
  report(details as fc.RunDetails<any>)
}

// ---- generators ----------------------------------------------------------------------------

const fieldKeys = ['host', 'path', 'method', 'status', 'ts', 'rt', 'bytes', 'src', 'user_agent', 'log', 'filename',
  'message', 'msg', 'level', 'time', 'timestamp', '@timestamp', 'hostname', '__proto__', 'constructor', '1', '']

const shortText = fc.oneof(
  fc.string({ unit: 'grapheme', maxLength: 12 }),
  fc.string({ unit: 'binary', maxLength: 8 }), // lone surrogates and controls included
  fc.constantFrom('GET', '/api/v1', 'web-1', '', ' ', 'info', 'ERROR', '200', '1763726340', 'caf\u00e9', '\u{1f600}', 'a"b\\c\n'),
)
const tsValue = fc.oneof(
  fc.integer({ min: receivedAt - 40 * day, max: receivedAt + 3 * day }),
  fc.integer({ min: receivedAt - 29 * day, max: receivedAt + day }).map((ms) => ms / 1000), // seconds, with a fraction
  fc.integer({ min: receivedAt - 29 * day, max: receivedAt + day }).map((ms) => ms * 1000), // microseconds
  fc.integer({ min: receivedAt - 40 * day, max: receivedAt + 3 * day }).map((ms) => new Date(ms).toISOString()),
)
const numberValue = fc.oneof(
  fc.integer(), fc.integer({ min: 100, max: 599 }), fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.double({ min: 0, max: 100, noNaN: true }), fc.constantFrom(0, -0, 1e21, 2 ** 53, 2 ** 53 + 2, 5e-7),
)
const anyValue: fc.Arbitrary<unknown> = fc.oneof(
  { arbitrary: shortText, weight: 4 },
  { arbitrary: numberValue, weight: 3 },
  { arbitrary: fc.constantFrom(true, false, null), weight: 1 },
  { arbitrary: fc.jsonValue({ maxDepth: 3 }), weight: 1 },
)

function valueFor (key: string): fc.Arbitrary<unknown> {
  if (key === 'ts' || key === 'time' || key === 'timestamp' || key === '@timestamp') return fc.oneof(tsValue, anyValue)
  if (key === 'status') return fc.oneof(fc.integer({ min: 100, max: 599 }), anyValue)
  if (key === 'rt' || key === 'bytes') return fc.oneof(fc.nat(100_000), numberValue, anyValue)
  if (key === 'log') return fc.oneof(shortText, objectText(1), anyValue)
  return anyValue
}

const member = (depth: number): fc.Arbitrary<string> => fc.oneof(
  fc.constantFrom(...fieldKeys),
  fc.string({ unit: 'grapheme-ascii', maxLength: 6 }),
).chain((key) => fc.tuple(fc.constant(key), valueFor(key), fc.constantFrom(':', ': ', ' : ')).map(
  ([k, v, colon]) => JSON.stringify(k) + colon + (depth > 0 && typeof v === 'string' ? JSON.stringify(v) : JSON.stringify(v) ?? 'null')))

/** A JSON object's text (members may repeat keys: JSON.parse keeps the last). */
function objectText (depth: number): fc.Arbitrary<string> {
  return fc.tuple(fc.array(member(depth), { maxLength: 9 }), fc.constantFrom(',', ', ', ',\t'), fc.constantFrom('', ' ', '\t'))
    .map(([members, comma, pad]) => pad + '{' + members.join(comma) + '}' + pad)
}

/** A line with a cut, an inserted byte, a dropped byte, or junk around it. */
const mutatedLine = fc.tuple(objectText(0), fc.nat(), fc.integer({ min: 0, max: 3 }), fc.constantFrom('"', '\\', ',', '}', '{', ':', ' ', '\u0001', 'x', '\u00e9', '\r', '\ud800'))
  .map(([line, at, how, insert]) => {
    const i = at % (line.length + 1)
    if (how === 0) return line.slice(0, i)
    if (how === 1) return line.slice(0, i) + insert + line.slice(i)
    if (how === 2) return line.slice(0, i) + line.slice(i + 1)
    return insert + line + insert
  })

/** Any line, as bytes (never holding '\n': the body generator adds those). */
const lineBytes: fc.Arbitrary<Buffer> = fc.oneof(
  { arbitrary: objectText(0).map((s) => Buffer.from(s)), weight: 6 },
  { arbitrary: mutatedLine.map((s) => Buffer.from(s.replaceAll('\n', ''))), weight: 3 },
  { arbitrary: fc.constantFrom('', ' ', '\t', '\r', ' \t\r ').map((s) => Buffer.from(s)), weight: 1 },
  { arbitrary: fc.jsonValue({ maxDepth: 3 }).map((v) => Buffer.from(JSON.stringify(v) ?? 'null')), weight: 1 },
  // Bytes that are often not UTF-8: overlong forms, encoded surrogates, cut sequences, NULs.
  { arbitrary: fc.array(fc.constantFrom(0x7b, 0x7d, 0x22, 0x3a, 0x20, 0x00, 0x80, 0xc0, 0xaf, 0xc3, 0xa9, 0xed, 0xa0, 0xf0, 0x9f, 0xff, 0x61), { maxLength: 24 }).map((b) => Buffer.from(b)), weight: 1 },
  { arbitrary: fc.uint8Array({ maxLength: 24 }).map((b) => Buffer.from(b.filter((x) => x !== 0x0a))), weight: 1 },
)

/** A body: lines joined by LF or CRLF, with or without a final newline. */
const body: fc.Arbitrary<Buffer> = fc.tuple(fc.array(lineBytes, { maxLength: 16 }), fc.constantFrom('\n', '\r\n'), fc.boolean())
  .map(([lines, eol, last]) => {
    const parts: Buffer[] = []
    lines.forEach((line, i) => { parts.push(line); if (i < lines.length - 1 || last) parts.push(Buffer.from(eol)) })
    return Buffer.concat(parts)
  })

const anyBytes = fc.uint8Array({ maxLength: 400 }).map((b) => Buffer.from(b))

// ---- properties ----------------------------------------------------------------------------

t.test('the worker on any bytes: no throw, every non-blank line counted once, the reference rows and failures', async (t) => {
  const agrees = (bytes: Buffer): boolean => {
    const got = workerParse(bytes, 3)
    const want = referenceParse(bytes, 3)
    const nonBlank = linesOf(bytes).filter((line) => !isBlankBytes(line)).length
    return got.ingested + got.failed === nonBlank &&
      got.rows.length === got.ingested &&
      JSON.stringify(got) === JSON.stringify(want)
  }
  holds(t, 'random bytes', fc.property(anyBytes, agrees), 13_1)
  holds(t, 'generated bodies', fc.property(body, agrees), 13_2)
})

t.test('the scanner on any line: no throw, and a line it takes is stored as the reference stores it', async (t) => {
  const scanner = new LineScanner()
  scanner.setBounds(bounds)
  let taken = 0
  let lines = 0
  const sameRow = (line: Buffer, before: Buffer): boolean => {
    // The line sits between others in a task: the scanner must stop at its own newline.
    const buffer = Buffer.concat([before, line, Buffer.from('\n{"host":"after"}\n')])
    lines++
    const end = scanner.scan(buffer, before.length)
    if (scanner.outcome === declined) return true
    if (end !== before.length + line.length) return false
    if (scanner.outcome === blankLine) return isBlankBytes(line)
    if (scanner.outcome !== scannedRow) return false
    taken++
    const got = new EventRowWriter('org_1', 'web', receivedAt, 64)
    got.write(scanner.row, 7, line.length)
    const want = referenceParse(line, 7 - seqBase)
    return want.ingested === 1 && JSON.stringify(readEventRows(got.finish())) === JSON.stringify(want.rows)
  }
  holds(t, 'generated lines', fc.property(lineBytes.filter((b) => isUtf8(b)), fc.constantFrom('', '{"host":"before"}\n'), (line, before) => sameRow(line, Buffer.from(before))), 13_3)
  // The generator must reach the fast path, or the property says nothing about it.
  t.ok(taken > lines / 5, `the scanner took ${taken} of ${lines} lines`)
})

t.test('framing and workers on any NDJSON body, in any chunks: every non-blank line counted once', async (t) => {
  const maxLineBytes = 48
  // NDJSON only: a body whose first non-blank byte is '[' is framed as a JSON array.
  const ndjson = fc.tuple(fc.oneof(body, anyBytes), fc.boolean(), fc.array(fc.nat(), { maxLength: 4 })).map(([bytes, bom, cuts]) => {
    const text = /^[\s]*\[/.test(bytes.toString('latin1')) ? Buffer.concat([Buffer.from('x'), bytes]) : bytes
    return { bytes: bom ? Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), text]) : text, cuts }
  })
  /** The lines the framing promises: BOM dropped, CR before LF stripped, long lines failed. */
  const expectedCount = (bytes: Buffer): number => {
    const text = bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? bytes.subarray(3) : bytes
    return linesOf(text).filter((line) => {
      const length = line.length > 0 && line[line.length - 1] === 0x0d ? line.length - 1 : line.length
      return length > maxLineBytes || !isBlankBytes(line)
    }).length
  }
  await holds(t, 'framed bodies', fc.asyncProperty(ndjson, async ({ bytes, cuts }) => {
    const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b)
    const chunks: Buffer[] = []
    let at = 0
    for (const point of [...points, bytes.length]) {
      if (point > at) chunks.push(bytes.subarray(at, point))
      at = point
    }
    const framed = await frameBody(chunks, { maxLineBytes, taskBytes: 64 })
    let counted = framed.failures.length
    for (const batch of framed.batches) {
      const result = parseTask(makeTask(new Uint8Array(batch.input), batch.firstLine))
      counted += result.ingested + result.failed
    }
    return counted === expectedCount(bytes)
  }), 13_4)
})
