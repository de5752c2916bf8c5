// The CLI's HTTP client for a running Sluice (undici). Errors come back as CliError carrying the
// API's error code, printed as `code: message`.
import { request } from 'undici'

export class CliError extends Error {
  readonly code: string
  readonly status: number
  constructor (code: string, message: string, status = 0) {
    super(message)
    this.name = 'CliError'
    this.code = code
    this.status = status
  }
}

export interface ApiClientOptions {
  baseUrl: string
  token: string
}

export class ApiClient {
  readonly baseUrl: string
  #token: string

  constructor (options: ApiClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '')
    this.#token = options.token
  }

  async call<T = any> (method: string, path: string, body?: unknown): Promise<T> {
    let res
    try {
      res = await request(this.baseUrl + path, {
        method: method as 'GET',
        headers: {
          authorization: `Bearer ${this.#token}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      })
    } catch (err) {
      throw new CliError('unreachable', `cannot reach Sluice at ${this.baseUrl}: ${(err as Error).message}`)
    }
    const text = await res.body.text()
    const parsed = text ? JSON.parse(text) : null
    if (res.statusCode >= 400) {
      throw new CliError(parsed?.error ?? 'http_error', parsed?.message ?? `HTTP ${res.statusCode}`, res.statusCode)
    }
    return parsed as T
  }
}
