import t from 'tap'
import { eventsTableStatements } from '../../lib/storage/migrate.ts'
import { MessageChannel } from 'node:worker_threads'
import { once } from 'node:events'
import { Piscina, transferableSymbol, valueSymbol } from 'piscina'
import parseTask from '../../lib/ingest/parse-worker.ts'
import { eventColumns, maxListedFailures } from '../../lib/ingest/parse-task.ts'
import type { ParseResult, ParseTask } from '../../lib/ingest/parse-task.ts'
import { createTestDatabase } from '../helpers/clickhouse.ts'
import { readEventRows } from '../../lib/ingest/row-serializer.ts'

const day = 86_400_000
const receivedAt = Date.UTC(2025, 10, 21, 12, 0, 0)

/** A task over `body` (a string is UTF-8 encoded), in an exact-size ArrayBuffer like the splitter sends. */
function makeTask (body: string | Buffer, firstLine = 1): ParseTask {
  const bytes = typeof body === 'string' ? Buffer.from(body) : body
  const input = new ArrayBuffer(bytes.length)
  new Uint8Array(input).set(bytes)
  return { input, firstLine, orgId: 'org_1', stream: 'web', receivedAt, minTs: receivedAt - 30 * day, maxTs: receivedAt + 2 * day, seqBase: 0, live: null }
}

function parse (body: string | Buffer, firstLine = 1): ParseResult {
  return parseTask(makeTask(body, firstLine))
}

/** The decoded rows of a result as objects keyed by column. */
function columns (result: ParseResult): Record<string, string | null>[] {
  return readEventRows(result.rows).map((fields) => Object.fromEntries(eventColumns.map((name, i) => [name, fields[i]])))
}

t.test('each line becomes one row, in order, with org, stream and times', async (t) => {
  const result = parse('{"host":"a","ts":1763726399000}\n{"log":"hello","filename":"/f.log"}\n')
  t.equal(result.ingested, 2)
  t.equal(result.failed, 0)
  t.strictSame(result.failures, [])
  const rows = columns(result)
  t.strictSame(rows[0], {
    org_id: 'org_1', stream: 'web', ts: '1763726399000', received_at: String(receivedAt),
    host: 'a', path: null, method: null, status: null, rt: null, bytes: null, src: null, user_agent: null, message: null, filename: null, level: null, service: null, trace_id: null, span_id: null, attrs: '{}', seq: '1', size: '31',
    attr_keys: '[]', attr_values: '[]',
  })
  t.equal(rows[1].ts, String(receivedAt), 'no ts: the receive time')
  t.equal(rows[1].message, 'hello')
  t.equal(rows[1].filename, '/f.log')
})

t.test('every failure code with its line number; blank lines numbered but not counted', async (t) => {
  const body = [
    '', //                                   10 blank
    '   ', //                                11 blank
    '\r', //                                 12 blank: a stray CR
    '\t \r', //                              13 blank
    '{"host":"ok"}', //                      14
    '{"host": }', //                         15 invalid_json
    '[1]', //                                16 not_an_object
    '{"status":"2xx"}', //                   17 invalid_field (a numeric string is a number)
    '{"ts":1}', //                           18 ts_out_of_range
    '{"host":"ok2"}\r', //                   19 a stray CR at the end is tolerated
    '"just a string"', //                    20 not_an_object
    '{"log":5}', //                          21 invalid_field
  ].join('\n') + '\n'
  const result = parse(body, 10)
  t.equal(result.ingested, 2)
  t.equal(result.failed, 6)
  t.strictSame(result.failures.map(({ line, code }) => ({ line, code })), [
    { line: 15, code: 'invalid_json' },
    { line: 16, code: 'not_an_object' },
    { line: 17, code: 'invalid_field' },
    { line: 18, code: 'ts_out_of_range' },
    { line: 20, code: 'not_an_object' },
    { line: 21, code: 'invalid_field' },
  ])
  t.match(result.failures[0].message, /JSON/, "invalid_json carries the parser's message")
  t.equal(result.failures[2].message, 'status must be an integer 100-599')
  t.match(result.failures[3].message, /^ts 1970-01-01T00:00:01\.000Z is older than the stream's retention/)
  t.strictSame(columns(result).map((row) => row.host), ['ok', 'ok2'])
})

t.test('untimed counts the rows stored with the receive time as ts: lines without a timestamp of their own', async (t) => {
  const result = parse(['{"host":"a"}', `{"host":"b","ts":${receivedAt - 1000}}`, '{"log":"x","time":"2025-11-21T10:00:00Z"}', '{"host":"c","timestamp":"nope"}'].join('\n'))
  t.equal(result.ingested, 4)
  t.equal(result.untimed, 2, 'lines 1 and 4 (a ts that is no time stays in attrs)')
})

t.test('the last line may lack its newline; an empty task has no rows', async (t) => {
  const result = parse('{"host":"a"}\n{"host":"b"}')
  t.equal(result.ingested, 2)
  t.strictSame(columns(result).map((row) => row.host), ['a', 'b'])
  const empty = parse('')
  t.strictSame({ ...empty, rows: empty.rows.byteLength }, { rows: 0, ingested: 0, untimed: 0, failed: 0, failures: [], failureCounts: {} })
  const blanks = parse('\n\n  \n')
  t.strictSame({ ingested: blanks.ingested, failed: blanks.failed, bytes: blanks.rows.byteLength }, { ingested: 0, failed: 0, bytes: 0 })
})

t.test('a line of invalid UTF-8 fails alone', async (t) => {
  const lines = [
    Buffer.from('{"host":"é😀"}'), //                                    1
    Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d]), // 2 {"a":"\xff"}
    Buffer.from('{"host":"b"}'), //                                      3
    Buffer.from([0x7b, 0xc0, 0xaf, 0x7d]), //                            4 overlong '/'
    Buffer.from([0x22, 0xed, 0xa0, 0x80, 0x22]), //                      5 an encoded surrogate
    Buffer.from([0x80]), //                                              6 a lone continuation byte
    Buffer.from(''), //                                                  7 blank
    Buffer.from([0x22, 0xf0, 0x9f, 0x98]), //                            8 truncated at the end of the line
    Buffer.from('{"host":"日本"}'), //                                   9
  ]
  const result = parse(Buffer.concat(lines.flatMap((line) => [line, Buffer.from('\n')])), 1)
  t.equal(result.ingested, 3)
  t.equal(result.failed, 5)
  t.strictSame(result.failures, [2, 4, 5, 6, 8].map((line) => ({ line, code: 'invalid_utf8', message: 'the line is not valid UTF-8' })))
  t.strictSame(columns(result).map((row) => row.host), ['é😀', 'b', '日本'])
})

t.test(`at most ${maxListedFailures} failures are listed, all are counted`, async (t) => {
  const result = parse('{"host":"a"}\n' + 'nope\n'.repeat(150), 7)
  t.equal(result.ingested, 1)
  t.equal(result.failed, 150)
  t.equal(result.failures.length, maxListedFailures)
  t.equal(result.failures[0].line, 8)
  t.equal(result.failures[maxListedFailures - 1].line, 107)
})

t.test('no input makes it throw', async (t) => {
  // Seeded noise: bytes that are mostly JSON punctuation, so that some lines almost parse, and
  // some bytes that are not UTF-8; a valid line after each noisy one.
  let seed = 7
  const random = (): number => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff
    return seed / 0x80000000
  }
  const alphabet = Buffer.from('{}[]":,0123456789.eE+-truefalsenull \\u\r\tabc\xff\xc3', 'latin1')
  const parts: Buffer[] = []
  for (let i = 0; i < 2000; i++) {
    const noise = Buffer.alloc(Math.floor(random() * 60))
    for (let j = 0; j < noise.length; j++) noise[j] = alphabet[Math.floor(random() * alphabet.length)]
    parts.push(noise, Buffer.from('\n{"host":"ok"}\n'))
  }
  const body = Buffer.concat(parts)
  const result = parse(body)
  const nonBlank = body.toString('latin1').split('\n').filter((line) => !/^[ \t\r]*$/.test(line)).length
  t.equal(result.ingested + result.failed, nonBlank, 'every non-blank line is counted once')
  t.ok(result.ingested >= 2000)
  t.equal(readEventRows(result.rows).length, result.ingested)
  const codes = new Set(result.failures.map((failure) => failure.code))
  t.ok(codes.has('invalid_json') && codes.has('invalid_utf8'), 'both kinds of noise were met')
})

t.test('rows round-trip through ClickHouse in the engine\'s format (RowBinary; chdb: JSONCompactEachRow)', async (t) => {
  const db = await createTestDatabase(t)
  const format = db.clickhouse.insertFormat
  for (const statement of eventsTableStatements) await db.clickhouse.command(statement)
  const tricky = 'tab\there new\nline cr\r back\\slash \\N quote\' dq" nul\0 bell\b ff\f ctl\u0001 é 日本 😀🚀 \ud800'
  const lines = [
    { ts: receivedAt - 1, host: tricky, path: '/p\\a\tth', method: 'GET', status: 200, rt: 5e-7, bytes: 2 ** 53 - 1, src: '::1', user_agent: 'Mozilla/5.0 (X11; 😀)', extra: tricky, nested: { k: [tricky, 1, null] } },
    { ts: receivedAt - 2, rt: 1e21, status: 599, bytes: 0 },
    { ts: receivedAt - 3, log: tricky, filename: 'C:\\logs\\app.log' },
    { ts: receivedAt - 4, log: JSON.stringify({ host: 'inner', status: 'bad\t', rt: 0.000123 }), stream: 'stdout' },
    { ts: receivedAt - 5, host: '\\N', path: '' },
  ]
  const result = parseTask({ ...makeTask(lines.map((line) => JSON.stringify(line)).join('\n') + '\n'), rowFormat: format })
  t.equal(result.ingested, lines.length)
  await db.clickhouse.insertRaw(`INSERT INTO events (${eventColumns.join(', ')}) FORMAT ${format}`, Buffer.from(result.rows))
  const stored = await db.clickhouse.query<Record<string, unknown>>(`SELECT ${eventColumns.join(', ')} FROM events ORDER BY ts DESC`)
  t.equal(stored.length, lines.length)
  const expectedTricky = tricky.replace('\ud800', '\ufffd') // a lone surrogate is stored as U+FFFD

  t.strictSame(stored[0], {
    org_id: 'org_1', stream: 'web', ts: receivedAt - 1, received_at: receivedAt,
    host: expectedTricky, path: '/p\\a\tth', method: 'GET', status: 200, rt: 5e-7, bytes: 2 ** 53 - 1, src: '::1', user_agent: 'Mozilla/5.0 (X11; 😀)',
    message: null, filename: null, level: null, service: null, trace_id: null, span_id: null, attrs: JSON.stringify({ extra: tricky, nested: { k: [tricky, 1, null] } }),
    seq: 1, size: Buffer.byteLength(JSON.stringify(lines[0])),
    attr_keys: ['extra', 'nested.k'], attr_values: [expectedTricky, JSON.stringify([tricky, 1, null])],
  })
  t.strictSame(JSON.parse(stored[0].attrs as string), { extra: tricky, nested: { k: [tricky, 1, null] } }, 'attrs keep the lone surrogate as a JSON escape')
  t.equal(stored[1].rt, 1e21)
  t.equal(stored[1].status, 599)
  t.equal(stored[1].bytes, 0)
  t.equal(stored[1].host, null, 'absent is NULL')
  t.equal(stored[2].message, expectedTricky)
  t.equal(stored[2].filename, 'C:\\logs\\app.log')
  t.equal(stored[3].host, 'inner')
  t.equal(stored[3].status, null)
  t.equal(stored[3].rt, 0.000123, 'rt is stored as the double JSON.parse read')
  t.equal(stored[3].attrs, '{"status":"bad\\t","stream":"stdout"}')
  t.equal(stored[4].host, '\\N', 'the string \\N stays a string')
  t.equal(stored[4].path, '', 'an empty string is not NULL')
})

t.test('the result is marked for piscina to transfer its rows', async (t) => {
  const result = parse('{"host":"a"}\n')
  const movable = result as unknown as Record<symbol, unknown>
  t.equal(movable[transferableSymbol], result.rows)
  t.equal(movable[valueSymbol], result)
  // What piscina's worker does with a movable result.
  const { port1, port2 } = new MessageChannel()
  const size = result.rows.byteLength
  port1.postMessage(movable[valueSymbol], [movable[transferableSymbol] as ArrayBuffer])
  const [received] = await once(port2, 'message') as [ParseResult]
  port1.close()
  t.ok(result.rows.detached, 'moved, not copied')
  t.strictSame(Object.keys(received), ['rows', 'ingested', 'untimed', 'failed', 'failures', 'failureCounts'], 'a plain ParseResult arrives')
  t.equal(received.rows.byteLength, size)
})

t.test('through a real piscina pool, both buffers are transferred', async (t) => {
  const pool = new Piscina({ filename: new URL('../../lib/ingest/parse-worker.ts', import.meta.url).href, minThreads: 1, maxThreads: 1 })
  t.teardown(() => pool.destroy())
  const task = makeTask('{"host":"a","status":200}\n\n{"host":5}\n{"log":"x"}\n', 41)
  const input = task.input
  const result: ParseResult = await pool.run(task, { transferList: [task.input] })
  t.ok(input.detached, 'the input was moved to the worker')
  t.ok(result.rows instanceof ArrayBuffer)
  t.equal(result.ingested, 2)
  t.equal(result.failed, 1)
  t.strictSame(result.failures, [{ line: 43, code: 'invalid_field', message: 'host must be a string' }])
  t.strictSame(columns(result).map((row) => [row.host, row.status, row.message]), [['a', '200', null], [null, null, 'x']])
})

t.test('size is each line\'s bytes, in an all-ASCII task and in one with multibyte characters', async (t) => {
  const ascii = ['{"host":"a"}', '{"path":"/x","status":200}', '  {"log":"hi"}']
  const mixed = ['{"host":"é"}', '{"path":"/日本"}', '{"log":"😀 and \\u00e9"}', '{"host":"plain"}']
  for (const lines of [ascii, mixed]) {
    const result = parse(lines.join('\n') + '\n')
    t.strictSame(columns(result).map((row) => Number(row.size)), lines.map((line) => Buffer.byteLength(line)))
  }
  const crlf = parse('{"host":"a"}\r\n{"host":"é"}\r\n')
  t.strictSame(columns(crlf).map((row) => Number(row.size)), [13, 14], 'a stray CR counts as a byte of its line')
})
