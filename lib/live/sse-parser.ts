// The SSE parser for Node code (the CLI's `sluice tail`, the tests), with types. Its one
// implementation is lib/dashboard/public/sse-parser.js, plain browser JS so the dashboard serves
// the very same file; it is loaded here by URL because tsc does not read .js files.

export interface SseParser {
  /** The next chunk of the stream: bytes (decoded with a streaming TextDecoder) or text. */
  push (chunk: Uint8Array | string): void
}

export interface SseParserClass {
  new (onMessage: (type: string, data: string) => void, onComment?: (text: string) => void): SseParser
}

const implementation = new URL('../dashboard/public/sse-parser.js', import.meta.url).href
// eslint-disable-next-line @typescript-eslint/no-redeclare -- the class's value and its instance type share the name, as a class's do
export const SseParser = (await import(implementation) as { SseParser: SseParserClass }).SseParser
