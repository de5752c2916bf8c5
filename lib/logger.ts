// One JSON object per line: {"time": RFC 3339, "level", "msg", ...fields}. Written synchronously
// to a file descriptor (stdout by default) so a crash never loses the line that explains it.
import { writeSync } from 'node:fs'

export const logLevels = ['debug', 'info', 'warn', 'error', 'silent'] as const
export type LogLevel = typeof logLevels[number]

const rank: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 }

export interface Logger {
  debug (msg: string, fields?: Record<string, unknown>): void
  info (msg: string, fields?: Record<string, unknown>): void
  warn (msg: string, fields?: Record<string, unknown>): void
  error (msg: string, fields?: Record<string, unknown>): void
  child (bindings: Record<string, unknown>): Logger
}

export interface LoggerOptions {
  level?: LogLevel
  /** File descriptor to write to; 1 (stdout) by default. */
  fd?: number
  /** Alternative sink, used by tests to capture lines. */
  write?: (line: string) => void
}

function serializeError (err: unknown): unknown {
  if (!(err instanceof Error)) return err
  const out: Record<string, unknown> = { type: err.name, message: err.message }
  const code = (err as { code?: unknown }).code
  if (code !== undefined) out.code = code
  if (err.stack) out.stack = err.stack
  if (err.cause !== undefined) out.cause = serializeError(err.cause)
  return out
}

export function createLogger (options: LoggerOptions = {}, bindings: Record<string, unknown> = {}): Logger {
  const threshold = rank[options.level ?? 'info']
  const fd = options.fd ?? 1
  const write = options.write ?? ((line: string) => { writeSync(fd, line) })

  function log (level: LogLevel, msg: string, fields?: Record<string, unknown>): void {
    if (rank[level] < threshold) return
    const entry: Record<string, unknown> = { time: new Date().toISOString(), level, msg, ...bindings }
    if (fields) {
      for (const key of Object.keys(fields)) {
        const value = fields[key]
        entry[key] = key === 'err' ? serializeError(value) : value
      }
    }
    write(JSON.stringify(entry) + '\n')
  }

  return {
    debug: (msg, fields) => log('debug', msg, fields),
    info: (msg, fields) => log('info', msg, fields),
    warn: (msg, fields) => log('warn', msg, fields),
    error: (msg, fields) => log('error', msg, fields),
    child: (more) => createLogger(options, { ...bindings, ...more }),
  }
}
