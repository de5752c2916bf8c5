// @ts-check
// The API's JSON as the dashboard reads it: an integer past 2^53 (a snowflake id, an int64 counter)
// keeps its digits, as Sluice stores and returns them (docs/api.md section 6.4), instead of
// becoming the nearest double, so the table, the event view and a filter made by a click show
// and search the value that was sent. Such an integer is parsed as JSON.rawJSON of its text
// (JSON.parse source text access: Chromium 114, Firefox 135, Safari 18.4); JSON.stringify writes
// it back as those digits. A browser without it reads the double, as before.

/** @typedef {{ readonly rawJSON: string }} RawNumber */

const json = /** @type {JSON & { rawJSON?: (text: string) => RawNumber, isRawJSON?: (value: unknown) => boolean }} */ (JSON)
const sixteenDigits = /\d{16}/
const longInteger = /^-?\d{16,}$/

/**
 * @param {string} _key
 * @param {unknown} value
 * @param {{ source?: string }} [context]
 */
function keepDigits (_key, value, context) {
  const source = context?.source
  if (typeof value !== 'number' || source === undefined || Number.isSafeInteger(value) || !longInteger.test(source)) return value
  return json.rawJSON?.(source) ?? value
}

/**
 * JSON.parse, keeping the digits of integers past 2^53.
 * @param {string} text
 * @returns {any}
 */
export function parseJson (text) {
  return json.rawJSON !== undefined && sixteenDigits.test(text)
    ? JSON.parse(text, /** @type {(key: string, value: unknown) => unknown} */ (keepDigits))
    : JSON.parse(text)
}

/**
 * True for an integer parseJson kept as its digits: a scalar, though typeof says 'object'.
 * @param {unknown} value
 * @returns {value is RawNumber}
 */
export function isRawNumber (value) {
  return typeof value === 'object' && value !== null && json.isRawJSON?.(value) === true
}
