// `sluice send STREAM FILE` (FILE `-` reads stdin): sends NDJSON in gzip'd requests of up to
// ~1 MiB (`chunkBytes`), up to `parallel` of them in flight at once (4 by default: the server
// batches concurrent requests into one insert, so a few in flight hide most of each request's wait
// for its commit), each with an Idempotency-Key so that a retry of an answered chunk is replayed,
// not stored again. 429 and 503 are retried after the Retry-After the server sent; network errors
// after a growing pause. A retry after `503 storage_outcome_unknown` or a lost answer is settled
// by the server under the same key (docs/api.md section 6.7): the first 200 if the rows are
// stored, stored now if not. So a chunk is stored exactly once.
//
// Line numbers: the server numbers failures within each request body (docs/api.md section 6.6);
// every chunk remembers the file line it starts at, so a failure is reported with its line in the
// FILE. Lines end at LF (a CR before it is dropped; a lone CR is part of the line), as the server
// splits them; blank lines are sent as they are (the server counts them), so the numbers match.
// Failures are printed in file order, whatever order the answers come back in. A gzip'd FILE (its
// first bytes are gzip's magic) is read through gunzip. Retries are said on stderr with their cause.
import { createReadStream } from 'node:fs'
import { randomUUID } from 'node:crypto'
import { createGunzip, gzipSync } from 'node:zlib'
import { Readable } from 'node:stream'
import split2 from 'split2'
import { setTimeout as sleep } from 'node:timers/promises'
import { request } from 'undici'
import { CliError } from './api-client.ts'

/** Bytes of NDJSON per request before gzip: large enough to be cheap, small enough to retry. */
export const defaultChunkBytes = 1024 * 1024
/** Requests in flight at once by default. */
export const defaultParallel = 4
/** The most requests in flight `--parallel` accepts: more only fills the server's queue. */
export const maxParallel = 16
/** Attempts per chunk before giving up. */
const maxAttempts = 20
/** Seconds at most that one Retry-After is honoured for (a bad header must not park the CLI). */
const maxRetryAfterS = 300

export interface SendOptions {
  baseUrl: string
  token: string
  stream: string
  input: Readable
  out: (line: string) => void
  /** Where retries are said (stderr); none by default. */
  err?: (line: string) => void
  /** Requests in flight at once, 1-maxParallel; default defaultParallel. */
  parallel?: number
  /** Bytes of lines per request; default defaultChunkBytes. */
  chunkBytes?: number
}

export interface SendTotals { ingested: number, failed: number, requests: number, retries: number }

interface Chunk {
  index: number
  /** File line number (1-based) of the chunk's first line, and of its last. */
  firstLine: number
  lastLine: number
  body: Buffer
}

/** Seconds from a Retry-After header: delta-seconds or an HTTP date; 1 when absent or unreadable. */
export function retryAfterSeconds (header: string | string[] | undefined, nowMs = Date.now()): number {
  const value = Array.isArray(header) ? header[0] : header
  if (value === undefined || value.trim() === '') return 1
  const seconds = /^\d+$/.test(value.trim()) ? Number(value.trim()) : (Date.parse(value) - nowMs) / 1000
  if (!Number.isFinite(seconds)) return 1
  return Math.min(maxRetryAfterS, Math.max(0, seconds))
}

/** Posts one chunk until it is answered 200 or 422; returns the lines to print for it. */
async function postChunk (options: SendOptions, chunk: Chunk, totals: SendTotals): Promise<string[]> {
  const key = randomUUID()
  const gz = gzipSync(chunk.body)
  const span = `lines ${chunk.firstLine}-${chunk.lastLine}`
  for (let attempt = 1; ; attempt++) {
    let waitS: number
    let cause: string
    try {
      const res = await request(`${options.baseUrl.replace(/\/+$/, '')}/api/ingest/${encodeURIComponent(options.stream)}`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${options.token}`, 'content-type': 'application/x-ndjson',
          'content-encoding': 'gzip', 'idempotency-key': key,
        },
        body: gz,
      })
      const text = await res.body.text()
      let parsed: any = {}
      try { parsed = text ? JSON.parse(text) : {} } catch { parsed = {} }
      if (res.statusCode === 200 || res.statusCode === 422) {
        totals.ingested += parsed.ingested ?? 0
        totals.failed += parsed.failed ?? 0
        totals.requests++
        const lines: string[] = []
        const listed: Array<{ line: number, code: string, message: string }> = parsed.failures ?? []
        for (const f of listed) lines.push(`line ${chunk.firstLine + f.line - 1}: ${f.code}: ${f.message}`)
        if (parsed.failures_truncated) lines.push(`${span}: ${(parsed.failed ?? 0) - listed.length} more failed lines not listed (the server lists ${listed.length} per request)`)
        return lines
      }
      if (res.statusCode !== 429 && res.statusCode !== 503) {
        throw new CliError(parsed.error ?? 'http_error', `${span}: ${parsed.message ?? `HTTP ${res.statusCode}`}`, res.statusCode)
      }
      waitS = retryAfterSeconds(res.headers['retry-after'])
      cause = `${res.statusCode} ${parsed.error ?? ''}`.trim()
    } catch (err) {
      if (err instanceof CliError) throw err
      waitS = Math.min(30, 2 ** Math.min(attempt, 5) / 2)
      const code = (err as NodeJS.ErrnoException).code
      cause = `cannot reach Sluice at ${options.baseUrl}: ${code ?? (err as Error).message}`
    }
    if (attempt >= maxAttempts) throw new CliError('gave_up', `${span}: gave up after ${attempt} attempts (${cause})`)
    totals.retries++
    // The first retry and every fifth after it are said, so a long outage is not silent.
    if (attempt % 5 === 1) options.err?.(`${span}: ${cause}; retrying in ${waitS} s (attempt ${attempt + 1} of ${maxAttempts})`)
    await sleep(waitS * 1000)
  }
}

export async function sendCommand (options: SendOptions): Promise<SendTotals> {
  const parallel = options.parallel ?? defaultParallel
  const chunkBytes = options.chunkBytes ?? defaultChunkBytes
  if (!Number.isInteger(parallel) || parallel < 1 || parallel > maxParallel) throw new CliError('usage', `--parallel must be an integer 1-${maxParallel}`)
  if (!Number.isInteger(chunkBytes) || chunkBytes < 1) throw new CliError('usage', '--chunk-bytes must be a positive integer')
  const totals: SendTotals = { ingested: 0, failed: 0, requests: 0, retries: 0 }

  // Answers arrive in any order; each chunk's lines are printed once every earlier chunk's are.
  const done = new Map<number, string[]>()
  let nextToPrint = 0
  const printReady = (): void => {
    for (let lines = done.get(nextToPrint); lines !== undefined; lines = done.get(nextToPrint)) {
      for (const line of lines) options.out(line)
      done.delete(nextToPrint++)
    }
  }
  const inFlight = new Set<Promise<void>>()
  let failure: unknown = null
  let chunks = 0
  const launch = (chunk: Chunk): void => {
    const p: Promise<void> = postChunk(options, chunk, totals)
      .then((lines) => { done.set(chunk.index, lines); printReady() }, (err) => { failure ??= err })
      .finally(() => { inFlight.delete(p) })
    inFlight.add(p)
  }
  const send = async (parts: string[], firstLine: number): Promise<void> => {
    if (!parts.some((p) => p.trim() !== '')) { // blank lines only: nothing to send (the server would say empty_body)
      done.set(chunks++, [])
      printReady()
      return
    }
    while (inFlight.size >= parallel && failure === null) await Promise.race(inFlight)
    if (failure !== null) return
    launch({ index: chunks++, firstLine, lastLine: firstLine + parts.length - 1, body: Buffer.from(parts.join('\n') + '\n') })
  }

  const lines = linesOf(await gunzippedIfGzip(options.input))
  let parts: string[] = []
  let size = 0
  let lineNo = 0
  let firstLine = 1
  for await (const line of lines) {
    lineNo++
    parts.push(line)
    size += Buffer.byteLength(line) + 1
    if (size >= chunkBytes) {
      await send(parts, firstLine)
      if (failure !== null) break
      parts = []
      size = 0
      firstLine = lineNo + 1
    }
  }
  if (failure === null && parts.length > 0) await send(parts, firstLine)
  await Promise.all(inFlight)
  if (failure !== null) throw failure
  return totals
}

export function openInput (file: string): Readable {
  return file === '-' ? process.stdin : createReadStream(file)
}

/** The input's bytes, through gunzip when they start with gzip's magic (1f 8b). */
async function gunzippedIfGzip (input: Readable): Promise<Readable> {
  const chunks = input[Symbol.asyncIterator]() as AsyncIterator<Buffer | string>
  const first = await chunks.next()
  const head = first.done === true ? Buffer.alloc(0) : typeof first.value === 'string' ? Buffer.from(first.value) : first.value
  const all = Readable.from((async function * () {
    if (head.length > 0) yield head
    for (let next = await chunks.next(); next.done !== true; next = await chunks.next()) yield next.value
  })(), { objectMode: false })
  if (!(head[0] === 0x1f && head[1] === 0x8b)) return all
  const gunzip = createGunzip()
  all.once('error', (err) => gunzip.destroy(err))
  return all.pipe(gunzip)
}

/** Lines split at LF only, a CR before it dropped (split2's default), errors of `input` passed on. */
function linesOf (input: Readable): AsyncIterable<string> {
  const splitter = split2()
  input.once('error', (err) => splitter.destroy(err))
  return input.pipe(splitter)
}
