// `sluice tail` keeps multibyte UTF-8 whole when the network cuts a character in two: a real
// Sluice, a proxy in front of it that passes its answer on one byte per write (so the CLI gets
// chunks that end inside "é", "—", "日" and "🎉"), and the tail command run against the proxy.
import t from 'tap'
import type { Test } from 'tap'
import { createServer, connect } from 'node:net'
import type { AddressInfo, Socket } from 'node:net'
import { startServer } from '../helpers/server.ts'
import { createIngestTarget, postIngest } from '../helpers/ingest.ts'
import { tailCommand } from '../../lib/cli/tail-command.ts'
import { waitFor } from '../helpers/wait-for.ts'

const message = 'héllo — 日本語 🎉'

/** A TCP proxy passing the server's bytes on one per write, a millisecond apart. */
async function startByteProxy (t: Test, targetUrl: string): Promise<{ url: string, received: () => number }> {
  const target = new URL(targetUrl)
  const sockets = new Set<Socket>()
  let received = 0
  const server = createServer((client) => {
    const upstream = connect(Number(target.port), target.hostname)
    for (const s of [client, upstream]) { sockets.add(s); s.on('error', () => {}); s.on('close', () => { client.destroy(); upstream.destroy() }) }
    client.pipe(upstream)
    const pending: number[] = []
    let pumping = false
    upstream.on('data', async (chunk: Buffer) => {
      pending.push(...chunk)
      if (pumping) return
      pumping = true
      while (pending.length > 0 && !client.destroyed) {
        client.write(Uint8Array.of(pending.shift()!))
        received++
        await new Promise((resolve) => setTimeout(resolve, 1))
      }
      pumping = false
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => { for (const s of sockets) s.destroy(); server.close() })
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, received: () => received }
}

t.test('tail --json and the formatted line: multibyte characters cut across chunks arrive whole', async (t) => {
  const s = await startServer(t, { writer: { flushIntervalMs: 10, minInsertIntervalMs: 0 } })
  const tgt = await createIngestTarget(s, 'utf8')
  const proxy = await startByteProxy(t, s.url)
  const outputs: Record<'json' | 'text', string[]> = { json: [], text: [] }
  const runs = (['json', 'text'] as const).map((mode) => tailCommand({
    baseUrl: proxy.url,
    token: s.adminToken,
    stream: 'utf8',
    q: '',
    json: mode === 'json',
    out: (line) => outputs[mode].push(line),
    err: () => {},
  }).catch((err: Error & { code?: string }) => err))
  await waitFor(() => s.app.tailHub.clientCount >= 2, { what: 'both tails to connect' })
  t.equal(s.app.tailHub.clientCount, 2, 'both tails connected through the proxy')
  const r = await postIngest(tgt, JSON.stringify({ log: message, path: '/日本', status: 200 }) + '\n')
  t.equal(r.status, 200)
  await waitFor(() => outputs.json.length > 0 && outputs.text.length > 0, { what: 'both tails to print the event', intervalMs: 20 })
  t.ok(proxy.received() > 100, `the answer went through one byte per write (${proxy.received()} writes)`)
  t.equal(outputs.json.length, 1)
  const event = JSON.parse(outputs.json[0])
  t.equal(event.message, message, 'the message decodes to the original')
  t.equal(event.path, '/日本')
  t.notOk(outputs.json[0].includes('\uFFFD'), 'no replacement character')
  t.equal(outputs.text.length, 1)
  t.match(outputs.text[0], / - 200 \/日本 - héllo — 日本語 🎉$/)
  s.app.tailHub.close()
  for (const result of await Promise.all(runs)) t.notOk(result instanceof Error && result.message, 'the tail command ended with the stream')
})
