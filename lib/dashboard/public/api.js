// Talking to the Sluice API from the page: JSON requests with the PAT, errors as ApiError (the
// server's {"error", "message", "request_id"}) or NetworkError (no answer), and the live tail read
// through fetch() with the Server-Sent Events parser of sse-parser.js (shared with the CLI and the
// tests), since EventSource cannot send an Authorization header.
import { SseParser } from './sse-parser.js'

export { SseParser }

export class ApiError extends Error {
  constructor (status, code, message, requestId, retryAfterS) {
    super(message)
    this.name = 'ApiError'
    this.status = status
    this.code = code
    this.requestId = requestId
    /** Seconds from Retry-After, or null. */
    this.retryAfterS = retryAfterS
  }

  /** The token is missing, unknown, expired or revoked: the user has to enter another. */
  get isTokenProblem () {
    return this.status === 401 || this.code === 'invalid_token' || this.code === 'wrong_token_kind'
  }
}

/** The server did not answer (down, restarting, network gone). Worth retrying. */
export class NetworkError extends Error {
  constructor (cause) {
    super('Cannot reach Sluice', { cause })
    this.name = 'NetworkError'
  }
}

export const isAbort = (err) => err?.name === 'AbortError'

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
  )
}

/** An API client; getToken() is read on every request so a new token applies at once. */
export function createApi (getToken) {
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
    /** GET a JSON resource. */
    async get (path, options) {
      const res = await send(path, options)
      try {
        return await res.json()
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

/** Resolves after ms, or rejects with an AbortError when signal aborts first. */
export function sleep (ms, signal) {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) { reject(signal.reason); return }
    const timer = setTimeout(() => { signal?.removeEventListener('abort', onAbort); resolve() }, ms)
    function onAbort () { clearTimeout(timer); reject(signal.reason) }
    signal?.addEventListener('abort', onAbort, { once: true })
  })
}
