// `sluice send STREAM FILE` (FILE `-` reads stdin): sends NDJSON in gzip'd requests of up to
// ~1 MiB, each with an Idempotency-Key so that a retry never stores a chunk twice. 429 and 503
// are retried after the Retry-After the server sent; network errors after a growing pause.
import { createReadStream } from 'node:fs'
import { createInterface } from 'node:readline'
import { randomUUID } from 'node:crypto'
import { gzipSync } from 'node:zlib'
import { setTimeout as sleep } from 'node:timers/promises'
import { request } from 'undici'
import type { Readable } from 'node:stream'
import { CliError } from './api-client.ts'

/** Bytes of NDJSON per request before gzip: large enough to be cheap, small enough to retry. */
const chunkBytes = 1024 * 1024
/** Attempts per chunk before giving up. */
const maxAttempts = 20

export interface SendOptions {
  baseUrl: string
  token: string
  stream: string
  input: Readable
  out: (line: string) => void
}

export interface SendTotals { ingested: number, failed: number, requests: number, retries: number }

async function postChunk (options: SendOptions, body: Buffer, totals: SendTotals): Promise<void> {
  const key = randomUUID()
  const gz = gzipSync(body)
  for (let attempt = 1; ; attempt++) {
    let waitS: number
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
      const parsed = text ? JSON.parse(text) : {}
      if (res.statusCode === 200 || res.statusCode === 422) {
        totals.ingested += parsed.ingested ?? 0
        totals.failed += parsed.failed ?? 0
        totals.requests++
        for (const f of parsed.failures ?? []) options.out(`line ${f.line} of request ${totals.requests}: ${f.code}: ${f.message}`)
        return
      }
      if (res.statusCode !== 429 && res.statusCode !== 503) {
        throw new CliError(parsed.error ?? 'http_error', parsed.message ?? `HTTP ${res.statusCode}`, res.statusCode)
      }
      waitS = Number(res.headers['retry-after']) || 1
    } catch (err) {
      if (err instanceof CliError) throw err
      waitS = Math.min(30, 2 ** Math.min(attempt, 5) / 2)
    }
    if (attempt >= maxAttempts) throw new CliError('gave_up', `gave up after ${attempt} attempts`)
    totals.retries++
    await sleep(waitS * 1000)
  }
}

export async function sendCommand (options: SendOptions): Promise<SendTotals> {
  const totals: SendTotals = { ingested: 0, failed: 0, requests: 0, retries: 0 }
  const lines = createInterface({ input: options.input, crlfDelay: Infinity })
  let parts: string[] = []
  let size = 0
  for await (const line of lines) {
    parts.push(line)
    size += Buffer.byteLength(line) + 1
    if (size >= chunkBytes) {
      await postChunk(options, Buffer.from(parts.join('\n') + '\n'), totals)
      parts = []
      size = 0
    }
  }
  if (parts.some((p) => p.trim() !== '')) await postChunk(options, Buffer.from(parts.join('\n') + '\n'), totals)
  return totals
}

export function openInput (file: string): Readable {
  return file === '-' ? process.stdin : createReadStream(file)
}
