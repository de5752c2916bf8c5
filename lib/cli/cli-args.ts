// The CLI's argument reading: node:util parseArgs with its errors (an unknown option, a missing
// value) as usage errors, and integer options checked rather than sent on as NaN (which JSON
// writes as null, and the API would read as absent: the default instead of what was typed).
import { parseArgs } from 'node:util'
import type { ParseArgsOptionsConfig } from 'node:util'
import { CliError } from './api-client.ts'

/** parseArgs(args) with positionals; a usage error prints `usage` under parseArgs' message. */
export function readArgs<T extends ParseArgsOptionsConfig> (args: string[], options: T, usage: string) {
  try {
    return parseArgs({ args, options, allowPositionals: true, strict: true })
  } catch (err) {
    throw new CliError('usage', `${(err as Error).message}\n${usage}`)
  }
}

/** An option holding a whole number (digits only; its range is the command's), or `fallback` when absent. */
export function integerOption (name: string, value: string | undefined, usage: string): number | undefined
export function integerOption (name: string, value: string | undefined, usage: string, fallback: number): number
export function integerOption (name: string, value: string | undefined, usage: string, fallback?: number): number | undefined {
  if (value === undefined) return fallback
  if (!/^\d+$/.test(value)) throw new CliError('usage', `--${name} must be a whole number, not ${JSON.stringify(value)}\n${usage}`)
  return Number(value)
}
