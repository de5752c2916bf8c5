// The 'body' framing of the ingest pipeline: a whole decoded body as one worker task.
import t from 'tap'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { Writable } from 'node:stream'
import { BodyCollector } from '../../lib/ingest/body-collector.ts'
import type { LineBatch } from '../../lib/ingest/line-batcher.ts'

async function collect (chunks: Buffer[]): Promise<{ batches: LineBatch[], sawInput: boolean }> {
  const batches: LineBatch[] = []
  const body = new BodyCollector()
  await pipeline(Readable.from(chunks), body, new Writable({
    objectMode: true,
    write (batch: LineBatch, _enc, done) { batches.push(batch); done() },
  }))
  return { batches, sawInput: body.sawInput }
}

t.test('the chunks of a body become one task holding exactly its bytes', async (t) => {
  const { batches, sawInput } = await collect([Buffer.from([1, 2, 3]), Buffer.from('\n{"a":1}\n'), Buffer.from([0xff])])
  t.equal(batches.length, 1)
  t.equal(batches[0].firstLine, 1)
  t.equal(batches[0].lineCount, 1)
  t.ok(batches[0].input instanceof ArrayBuffer)
  t.same([...new Uint8Array(batches[0].input)], [1, 2, 3, ...Buffer.from('\n{"a":1}\n'), 0xff])
  t.equal(batches[0].input.byteLength, 13, 'an exact-size buffer, ready to transfer')
  t.ok(sawInput)
})

t.test('an empty body yields no task', async (t) => {
  const { batches, sawInput } = await collect([])
  t.same(batches, [])
  t.notOk(sawInput)
})
