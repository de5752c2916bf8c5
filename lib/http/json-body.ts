// Reads a small JSON request body (management API). Bodies are capped, must be JSON objects, and
// an empty body reads as {} so that optional-field endpoints can be called without one.
import type { IncomingMessage } from 'node:http'
import { SluiceError } from '../errors.ts'
import { continueBody } from './expect-continue.ts'

/** Bytes a management request body may have; they are tiny. */
const maxJsonBodyBytes = 64 * 1024

export async function readJsonBody (req: IncomingMessage): Promise<Record<string, unknown>> {
  const type = req.headers['content-type']
  const chunks: Buffer[] = []
  let size = 0
  continueBody(req)
  for await (const chunk of req) {
    size += (chunk as Buffer).length
    if (size > maxJsonBodyBytes) throw new SluiceError('payload_too_large', `JSON bodies are limited to ${maxJsonBodyBytes} bytes`)
    chunks.push(chunk as Buffer)
  }
  if (size === 0) return {}
  if (type !== undefined && !/^application\/(.+\+)?json\s*(;|$)/i.test(type)) {
    throw new SluiceError('unsupported_content_type', 'Send Content-Type: application/json')
  }
  let value: unknown
  try {
    value = JSON.parse(Buffer.concat(chunks).toString('utf8'))
  } catch (err) {
    throw new SluiceError('bad_request', `The body is not valid JSON: ${(err as Error).message}`)
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new SluiceError('bad_request', 'The body must be a JSON object')
  }
  return value as Record<string, unknown>
}
