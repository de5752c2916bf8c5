// @ts-check
// Talking to the Sluice API from the page: JSON requests with the PAT, errors as ApiError (the
// server's {"error", "message", "request_id"}) or NetworkError (no answer), and the live tail read
// through fetch() with the Server-Sent Events parser of sse-parser.js (shared with the CLI and the
// tests), since EventSource cannot send an Authorization header.
import { parseJson } from './json-digits.js'
import { SseParser } from './sse-parser.js'

export { SseParser }

export class ApiError extends Error {
  /**
   * @param {number} status
   * @param {string} code the catalogue's error code
   * @param {string} message
   * @param {string | null} requestId
   * @param {number | null} retryAfterS
   * @param {number | null} [position] where a bad `q` goes wrong (invalid_query), a UTF-16 offset
   */
  constructor (status, code, message, requestId, retryAfterS, position = null) {
    super(message)
    this.name = 'ApiError'
    this.status = status
    this.code = code
    this.requestId = requestId
    /** Seconds from Retry-After, or null. */
    this.retryAfterS = retryAfterS
    this.position = position
  }

  /** The token is missing, unknown, expired or revoked: the user has to enter another. */
  get isTokenProblem () {
    return this.status === 401 || this.code === 'invalid_token' || this.code === 'wrong_token_kind'
  }
}

/** The server did not answer (down, restarting, network gone). Worth retrying. */
export class NetworkError extends Error {
  /** @param {unknown} cause */
  constructor (cause) {
    super('Cannot reach Sluice', { cause })
    this.name = 'NetworkError'
  }
}

/** How many times get() tries a read again after 429 too_many_reads. */
const busyRetries = 2

/** @param {unknown} err */
export const isAbort = (err) => typeof err === 'object' && err !== null && 'name' in err && err.name === 'AbortError'

/** @param {Response} res */
async function toApiError (res) {
  let body = null
  try { body = await res.json() } catch { /* not JSON: a proxy's page */ }
  const retryAfter = Number(res.headers.get('retry-after'))
  return new ApiError(
    res.status,
    body?.error ?? `http_${res.status}`,
    body?.message ?? `${res.status} ${res.statusText}`,
    body?.request_id ?? res.headers.get('x-request-id'),
    Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter : null,
    typeof body?.position === 'number' ? body.position : null,
  )
}

/**
 * @typedef {object} RequestOptions
 * @property {AbortSignal} [signal]
 * @property {string} [accept]
 */

/**
 * @typedef {object} StreamOptions
 * @property {AbortSignal} signal
 * @property {(type: string, data: string) => void} onMessage
 * @property {() => void} [onActivity]
 * @property {() => void} [onOpen]
 */

/**
 * @typedef {object} Api
 * @property {(path: string, options?: RequestOptions) => Promise<any>} get GET a JSON resource (the caller states its shape)
 * @property {(path: string, options: StreamOptions) => Promise<void>} stream
 * @property {(path: string, options?: RequestOptions) => Promise<Blob>} blob GET a body whole (an export)
 * @property {(path: string, options?: RequestOptions) => Promise<Response>} response GET a body to read as a stream (a big export)
 */

/**
 * An API client; getToken() is read on every request so a new token applies at once.
 * @param {() => string} getToken
 * @returns {Api}
 */
export function createApi (getToken) {
  /**
   * @param {string} path
   * @param {RequestOptions} [options]
   */
  async function send (path, { signal, accept = 'application/json' } = {}) {
    let res
    try {
      res = await fetch(path, {
        headers: { authorization: `Bearer ${getToken()}`, accept },
        cache: 'no-store',
        signal,
      })
    } catch (err) {
      if (isAbort(err)) throw err
      throw new NetworkError(err)
    }
    if (!res.ok) throw await toApiError(res)
    return res
  }

  return {
    /**
     * GET a JSON resource. A 429 too_many_reads (the org's reads are all running, often the ones
     * a click just aborted, which the server counts until ClickHouse has stopped them) is tried
     * again after Retry-After, twice, before it is the caller's.
     */
    async get (path, options) {
      let res
      for (let attempt = 0; ; attempt++) {
        try {
          res = await send(path, options)
          break
        } catch (err) {
          if (!(err instanceof ApiError && err.code === 'too_many_reads' && attempt < busyRetries)) throw err
          await sleep(Math.min(2000, (err.retryAfterS ?? 1) * 1000) * (0.5 + Math.random() * 0.5), options?.signal)
        }
      }
      try {
        return parseJson(await res.text())
      } catch (err) {
        if (isAbort(err)) throw err
        throw new NetworkError(err)
      }
    },

    /** GET a resource whose body the caller reads (a stream). */
    async response (path, options) {
      return await send(path, options)
    },

    /** GET a body as a Blob (the NDJSON of an export: a download needs the token, so no plain link). */
    async blob (path, options) {
      const res = await send(path, options)
      try {
        return await res.blob()
      } catch (err) {
        if (isAbort(err)) throw err
        throw new NetworkError(err)
      }
    },

    /**
     * Opens an SSE stream and calls onMessage(type, data) per event and onActivity() for every
     * chunk (comments included, for a heartbeat watchdog). Resolves when the server ends the stream.
     */
    async stream (path, { signal, onMessage, onActivity, onOpen }) {
      const res = await send(path, { signal, accept: 'text/event-stream' })
      onOpen?.()
      const parser = new SseParser(onMessage)
      // Bytes go to the parser as they come: it decodes them with a streaming TextDecoder.
      if (res.body === null) throw new NetworkError(new Error('the tail answered without a body'))
      const reader = res.body.getReader()
      try {
        for (;;) {
          const { value, done } = await reader.read()
          if (done) break
          onActivity?.()
          parser.push(value)
        }
      } catch (err) {
        if (isAbort(err)) throw err
        throw new NetworkError(err)
      } finally {
        reader.releaseLock()
      }
    },
  }
}

/**
 * Resolves after ms, or rejects with an AbortError when signal aborts first.
 * @param {number} ms
 * @param {AbortSignal | null} [signal]
 * @returns {Promise<void>}
 */
export function sleep (ms, signal) {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) { reject(signal.reason); return }
    const timer = setTimeout(() => { signal?.removeEventListener('abort', onAbort); resolve() }, ms)
    function onAbort () { clearTimeout(timer); reject(signal?.reason) }
    signal?.addEventListener('abort', onAbort, { once: true })
  })
}
