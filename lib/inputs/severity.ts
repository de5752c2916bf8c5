// Log levels of the protocol inputs, normalised to Sluice's six (docs/api.md section 9.3):
// trace, debug, info, warn, error, fatal. OpenTelemetry's SeverityNumber has four steps per level
// (1-4 TRACE .. 21-24 FATAL); names are the usual spellings of syslog, log4j, Python, Go and
// Loki's detected_level.
export type Level = 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal'

const numberLevels: Level[] = ['trace', 'debug', 'info', 'warn', 'error', 'fatal']

/** OpenTelemetry SeverityNumber 1-24 to its level; null for 0 (unspecified) or out of range. */
export function levelFromSeverityNumber (n: number): Level | null {
  if (!Number.isInteger(n) || n < 1 || n > 24) return null
  return numberLevels[Math.floor((n - 1) / 4)]
}

const names: Record<string, Level> = {
  trace: 'trace',
  debug: 'debug',
  dbg: 'debug',
  info: 'info',
  information: 'info',
  informational: 'info',
  notice: 'info',
  warn: 'warn',
  warning: 'warn',
  error: 'error',
  err: 'error',
  fatal: 'fatal',
  critical: 'fatal',
  crit: 'fatal',
  alert: 'fatal',
  emerg: 'fatal',
  emergency: 'fatal',
  panic: 'fatal',
}

/**
 * A level name in any case, with OpenTelemetry's step digit allowed ("INFO2", "Warn", "ERROR"),
 * or SeverityNumber's enum name ("SEVERITY_NUMBER_WARN3"); null when not a known name.
 */
export function levelFromText (text: string): Level | null {
  let name = text.trim().toLowerCase()
  if (name.startsWith('severity_number_')) name = name.slice(16)
  name = name.replace(/[1-4]$/, '')
  return Object.hasOwn(names, name) ? names[name] : null
}
