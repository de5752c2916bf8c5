// JSON.parse for event lines, keeping an integer's digits (docs/api.md section 6.4, "An integer keeps its digits as sent").
//
// JSON.parse reads every number into a double, so an integer past 2^53 (a snowflake id, an
// order number, an int64 counter) would be stored as another integer: 9007199254740993 as
// ...992, which `q=id:9007199254740993` then cannot find. The line scanner copies an integer's
// text as it is; the reference path must give the same attrs, so an integer of 16 or more digits
// is parsed as JSON.rawJSON of its own text (the source text of JSON.parse's reviver, Node 21+).
// JSON.stringify writes such a value back as those digits. The reviver makes JSON.parse several
// times slower, so it runs only on text holding 16 digits in a row somewhere.
//
// Readers of a parsed line: a raw integer is an object to `typeof`, so normalize.ts reads it by
// isRawInteger (a number for a field, its text for attrs) and never as an object.

/** What JSON.rawJSON returns: a frozen, prototype-less object holding the text. */
export interface RawInteger {
  readonly rawJSON: string
}

// JSON.rawJSON and JSON.isRawJSON (ES2025's JSON.parse source text access), which TypeScript's
// es2024 library does not declare.
const rawJson = JSON as unknown as {
  rawJSON (text: string): RawInteger
  isRawJSON (value: unknown): boolean
}

/**
 * A number token of 16 or more digits: the only text in which an integer JSON.parse would round
 * can be. A token starts the text or follows `:`, `[` or `,`; a string's digits follow a quote,
 * so OTLP/JSON's quoted 19-digit timestamps do not slow its bodies.
 */
const longNumberToken = /(?:^|[:,[])\s*-?\d{16}/
/** An integer token of 16 or more digits (JSON allows no leading zero, '+' or fraction here). */
const longInteger = /^-?\d{16,}$/

interface ReviverContext {
  source?: string
}

function keepIntegerDigits (_key: string, value: unknown, context?: ReviverContext): unknown {
  // A double holds an integer up to 2^53 exactly, and String() of it is its digits: kept a number.
  if (typeof value !== 'number' || Number.isSafeInteger(value) || context?.source === undefined) return value
  const source = context.source
  return longInteger.test(source) ? rawJson.rawJSON(source) : value
}

/**
 * JSON.parse of an event line (or a nested log object, or an OTLP/JSON body: an int64 `intValue`
 * past 2^53 keeps its digits written as a number too, docs/api.md section 9.1), integers of 16 or
 * more digits kept as their text.
 */
export function parseEventJson (text: string): unknown {
  return longNumberToken.test(text) ? JSON.parse(text, keepIntegerDigits as (key: string, value: unknown) => unknown) : JSON.parse(text)
}

/** The text of a number parseEventJson kept as a RawInteger; any other value as it is. */
export function numberOrText (value: unknown): unknown {
  return isRawInteger(value) ? value.rawJSON : value
}

/** An integer's decimal text (no leading zero, no '+'). */
const integerText = /^-?(?:0|[1-9]\d*)$/

/**
 * A protocol's int64 (OTLP's intValue, as a decimal string or a Long) as attrs hold an NDJSON
 * line's integer: a number when a double holds it exactly, else its digits as a raw integer; text
 * that is no integer stays a string.
 */
export function int64Value (value: unknown): number | string | RawInteger {
  if (isRawInteger(value)) return value
  const n = Number(value)
  if (Number.isSafeInteger(n)) return n
  const text = String(value)
  return integerText.test(text) ? rawJson.rawJSON(text) : text
}

/** True for a long integer parseEventJson kept as its text. */
export function isRawInteger (value: unknown): value is RawInteger {
  return typeof value === 'object' && value !== null && rawJson.isRawJSON(value)
}
