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

/**
 * A text parameter (`q`) as URLSearchParams decodes it, or null when absent; 400 invalid_query when
 * its percent-escapes are not UTF-8, which URLSearchParams would turn into U+FFFD and search for
 * (explore19 F4: `q=%FF%FE` answered 200 with nothing found). A `%` not followed by two hex digits
 * is a literal `%`, as URLSearchParams reads it; decodeURIComponent then checks the escapes.
 */
export function textParam (url: URL, name: string): string | null {
  const value = url.searchParams.get(name)
  if (value === null || !url.search.includes('%')) return value
  for (const pair of url.search.slice(1).split('&')) {
    const eq = pair.indexOf('=')
    if (eq === -1 || new URLSearchParams(`${pair.slice(0, eq)}=`).keys().next().value !== name) continue
    try {
      decodeURIComponent(pair.slice(eq + 1).replace(/%(?![0-9a-fA-F]{2})/g, '%25'))
    } catch {
      throw new SluiceError('invalid_query', `${name} is not UTF-8: percent-encode its text as UTF-8 bytes`, { details: { parameter: name } })
    }
  }
  return value
}
