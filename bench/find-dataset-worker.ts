// A worker thread of find-dataset.ts's loader: generates the batches it is asked for, so that
// several are generated at once while the loader inserts the previous ones in order.
import { parentPort } from 'node:worker_threads'
import { generateBatch } from './find-dataset.ts'

export interface BatchOrder { orgId: string, first: number, count: number, totalRows: number, receivedAt: number }

parentPort!.on('message', (order: BatchOrder) => {
  const body = generateBatch(order.orgId, order.first, order.count, order.totalRows, order.receivedAt)
  const bytes = new Uint8Array(body.buffer, body.byteOffset, body.byteLength)
  parentPort!.postMessage(bytes, [bytes.buffer as ArrayBuffer])
})
