// Query-string parameters shared by read routes (events, stats, audit): each bad value is a 400
// invalid_query naming the parameter.
import { SluiceError } from '../errors.ts'

/** An optional integer parameter within [min, max]; absent gives `fallback`. */
export function integerParam (params: URLSearchParams, name: string, min: number, max: number, fallback: number): number {
  const raw = params.get(name)
  if (raw === null) return fallback
  const n = Number(raw)
  if (!/^\d+$/.test(raw) || n < min || n > max) {
    throw new SluiceError('invalid_query', `${name} must be an integer ${min}-${max}`, { details: { parameter: name } })
  }
  return n
}
