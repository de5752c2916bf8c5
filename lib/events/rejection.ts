// Why a line fails: the codes (they appear in the ingest response's `failures`, docs/api.md
// section 6.6) and the rejection the reference path returns (the worker adds the line number).

/** Codes a single line can fail with. */
export const lineFailureCodes = [
  'invalid_json',
  'not_an_object',
  'invalid_field',
  'invalid_utf8',
  'line_too_long',
  'ts_out_of_range',
  'too_deep',
  'wrapped_body',
] as const
export type LineFailureCode = typeof lineFailureCodes[number]

/** Why a line was rejected; the worker adds the line number. */
export class EventRejection {
  readonly code: LineFailureCode
  readonly message: string
  constructor (code: LineFailureCode, message: string) {
    this.code = code
    this.message = message
  }
}
