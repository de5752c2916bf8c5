// Compressed bodies of zeros for the zip-bomb and backpressure tests, made through a streaming
// compressor so that the zeros are never all in memory (a 10 GiB bomb costs 1 MiB to build).
import { Readable, Writable } from 'node:stream'
import type { Transform } from 'node:stream'
import { pipeline } from 'node:stream/promises'

const MiB = 1024 * 1024

/** `mebibytes` MiB of zeros through `compressor`, as one buffer. */
export async function compressZeros (compressor: Transform, mebibytes: number): Promise<Buffer> {
  const zeros = Buffer.alloc(MiB)
  const out: Buffer[] = []
  await pipeline(
    Readable.from((function * () { for (let i = 0; i < mebibytes; i++) yield zeros })()),
    compressor,
    new Writable({ write (chunk: Buffer, _encoding, callback) { out.push(chunk); callback() } }),
  )
  return Buffer.concat(out)
}
