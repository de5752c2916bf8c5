// Level normalisation of the protocol inputs: OpenTelemetry's SeverityNumber ranges and the
// level names shippers send, read through the one level table (lib/events/level.ts).
import t from 'tap'
import { levelNames, levelOfName, levelOfSeverityNumber, levelOfSeverityText } from '../../lib/events/level.ts'

const levelFromSeverityNumber = (n: number): string | null => levelNames[levelOfSeverityNumber(n)] ?? null
const levelFromText = (text: string): string | null => levelNames[levelOfSeverityText(text)] ?? null

t.test('SeverityNumber: four steps per level, 0 and out of range are none', async (t) => {
  const expected: Array<[number, string | null]> = [
    [0, null], [1, 'trace'], [4, 'trace'], [5, 'debug'], [8, 'debug'], [9, 'info'], [12, 'info'],
    [13, 'warn'], [16, 'warn'], [17, 'error'], [20, 'error'], [21, 'fatal'], [24, 'fatal'], [25, null], [-1, null], [9.5, null],
  ]
  for (const [n, level] of expected) t.equal(levelFromSeverityNumber(n), level, `severityNumber ${n}`)
})

t.test('names in any case, with the step digit or as the enum name', async (t) => {
  const expected: Array<[string, string | null]> = [
    ['INFO', 'info'], ['Info2', 'info'], ['information', 'info'], ['notice', 'info'], ['warning', 'warn'], ['WARN3', 'warn'],
    ['err', 'error'], ['critical', 'fatal'], ['emerg', 'fatal'], ['dbg', 'debug'], ['TRACE', 'trace'],
    ['SEVERITY_NUMBER_ERROR2', 'error'], [' fatal ', 'fatal'], ['verbose', 'debug'], ['silly', 'trace'], ['http', 'info'], ['severe', 'error'],
    ['', null], ['constructor', null], ['info5', null],
  ]
  for (const [text, level] of expected) t.equal(levelFromText(text), level, JSON.stringify(text))
})

t.test('one table: every name a line may carry is read the same by the protocol inputs', async (t) => {
  for (const name of ['dbg', 'verbose', 'silly', 'http', 'severe', 'notice', 'crit', 'warning', 'Err', ' info', 'info ']) {
    t.equal(levelOfSeverityText(name), levelOfName(name), name)
    t.ok(levelOfName(name) >= 0, `${name} is a level`)
  }
})
