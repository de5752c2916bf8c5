// Log levels, normalised to six names (docs/api.md section 6.4): trace, debug, info, warn, error,
// fatal, in order of severity (their index; `level:>=warn` in q means warn or worse). From:
// - names, any case: the six, plus syslog's (emerg, alert, crit -> fatal; err -> error;
//   warning -> warn; notice, informational -> info), and common synonyms (critical, panic,
//   emergency -> fatal; severe -> error; verbose, dbg -> debug; silly -> trace; information -> info;
//   winston's http, between its info and verbose -> info);
//   the protocol inputs (OTLP severityText, Loki's level label) also take OpenTelemetry's step
//   digit (INFO2) and enum name (SEVERITY_NUMBER_WARN): levelOfSeverityText. One table for all.
// - numbers (or numeric strings) under a level key: syslog severities 0-7 (0-2 fatal, 3 error,
//   4 warn, 5-6 info, 7 debug), or pino's 10-60 and above (10 trace, 20 debug, 30 info, 40 warn,
//   50 error, 60 fatal; a custom level between two takes the lower one's name);
// - OpenTelemetry's severityNumber, 1-24 (1-4 trace, 5-8 debug, 9-12 info, 13-16 warn, 17-20
//   error, 21-24 fatal).
// Anything else is no level (-1): the column stays NULL and the value is kept in attrs.
import { Buffer } from 'node:buffer'

export const levelNames = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'] as const
export type LevelName = typeof levelNames[number]

/** Each name's UTF-8, for rows that point a span at it (one buffer, shared read-only). */
export const levelBytes: Buffer = Buffer.from(levelNames.join(''), 'latin1')
/** Where level i's name starts in levelBytes (i + 1: where it ends). */
export const levelOffsets: readonly number[] = levelNames.reduce<number[]>((at, name) => [...at, at[at.length - 1] + name.length], [0])

const byName = new Map<string, number>([
  ['trace', 0], ['silly', 0],
  ['debug', 1], ['verbose', 1], ['dbg', 1],
  ['info', 2], ['information', 2], ['informational', 2], ['notice', 2], ['http', 2],
  ['warn', 3], ['warning', 3],
  ['error', 4], ['err', 4], ['severe', 4],
  ['fatal', 5], ['critical', 5], ['crit', 5], ['alert', 5], ['emerg', 5], ['emergency', 5], ['panic', 5],
])
/** The longest name byName knows, in characters. */
const longestName = Math.max(...[...byName.keys()].map((name) => name.length))

/**
 * A level from a name (any case, blanks around it ignored, as levelOfSeverityText does: `" info"`
 * is info in every input, explore32 F5), -1 when it is none.
 */
export function levelOfName (text: string): number {
  if (text.length > 0 && (isBlank(text.charCodeAt(0)) || isBlank(text.charCodeAt(text.length - 1)))) text = text.trim()
  if (text.length > longestName) return -1
  return byName.get(text.toLowerCase()) ?? -1
}

/** Space, tab, CR or LF. */
function isBlank (c: number): boolean {
  return c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d
}

/** byName's names as bytes with their levels, for levelOfNameBytes. */
const nameBytes: Uint8Array[] = [...byName.keys()].map((name) => Buffer.from(name, 'latin1'))
const nameLevels: number[] = [...byName.values()]
/** Per length (0..longestName): the indexes into nameBytes of the names of that length (a few each). */
const namesByLength: Uint8Array[] = Array.from({ length: longestName + 1 }, (_, length) =>
  Uint8Array.from(nameBytes.flatMap((name, n) => name.length === length ? [n] : [])))

/**
 * levelOfName of the text src[start, end), read in place without a string (the line scanner's
 * strings): ASCII letters compared case-insensitively, blanks around them ignored, anything else
 * never matches. Only the names of the text's length are compared.
 */
export function levelOfNameBytes (src: Uint8Array, start: number, end: number): number {
  while (start < end && isBlank(src[start])) start++
  while (end > start && isBlank(src[end - 1])) end--
  const length = end - start
  if (length === 0 || length > longestName) return -1
  const candidates = namesByLength[length]
  for (let c = 0; c < candidates.length; c++) {
    const name = nameBytes[candidates[c]]
    let k = 0
    for (; k < length; k++) {
      const b = src[start + k]
      // ASCII upper case to lower; the names are lower-case letters only.
      if ((b >= 0x41 && b <= 0x5a ? b + 0x20 : b) !== name[k]) break
    }
    if (k === length) return nameLevels[candidates[c]]
  }
  return -1
}

/** A level from a number under a level key: syslog 0-7, pino 10 and above; -1 otherwise. */
export function levelOfNumber (value: number): number {
  if (!Number.isInteger(value) || value < 0) return -1
  if (value <= 7) return value <= 2 ? 5 : value === 3 ? 4 : value === 4 ? 3 : value <= 6 ? 2 : 1
  if (value < 10) return -1
  return Math.min(5, Math.floor(value / 10) - 1)
}

/** A level from OpenTelemetry's severityNumber (1-24); -1 otherwise. */
export function levelOfSeverityNumber (value: number): number {
  if (!Number.isInteger(value) || value < 1 || value > 24) return -1
  return Math.floor((value - 1) / 4)
}

/** A level from a syslog severity (0-7) alone; -1 otherwise. */
export function levelOfSyslogSeverity (value: number): number {
  return value >= 0 && value <= 7 ? levelOfNumber(value) : -1
}

/**
 * A level from a number by the key's numbering (fields.ts levelNumberingOf): 'level' the rule
 * above (syslog 0-7, pino 10+), 'severityNumber' OpenTelemetry's 1-24, 'syslog' 0-7 only.
 */
export function levelOfNumberAs (value: number, numbering: 'level' | 'severityNumber' | 'syslog'): number {
  return numbering === 'level' ? levelOfNumber(value) : numbering === 'severityNumber' ? levelOfSeverityNumber(value) : levelOfSyslogSeverity(value)
}

/**
 * A level from a protocol's severity text: a name as levelOfName reads it, also with
 * OpenTelemetry's step digit ("INFO2", "WARN3") or as SeverityNumber's enum name
 * ("SEVERITY_NUMBER_ERROR2"), surrounding blanks ignored; -1 when none.
 */
export function levelOfSeverityText (text: string): number {
  let name = text.trim().toLowerCase()
  if (name.startsWith('severity_number_')) name = name.slice(16)
  const named = levelOfName(name)
  return named >= 0 || !/[1-4]$/.test(name) ? named : levelOfName(name.slice(0, -1))
}

/** A level from a JSON value under a level key (a name, a number or a numeric string); -1 when none. */
export function levelOf (value: unknown, numbering: 'level' | 'severityNumber' | 'syslog' = 'level'): number {
  if (typeof value === 'number') return levelOfNumberAs(value, numbering)
  if (typeof value !== 'string') return -1
  const named = levelOfName(value)
  if (named >= 0 || !isNumericText(value)) return named
  return levelOfNumberAs(Number(value), numbering)
}

const numericText = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/

/** Whether `text` is a JSON number's text, as numeric strings are accepted for numeric fields ("status":"200"). */
export function isNumericText (text: string): boolean {
  return numericText.test(text)
}
