// The node registry: nodes sharing a ClickHouse count each other from their heartbeats, and a
// stopped node stops counting at the others' next beat.
import t from 'tap'
import { createTestDatabase } from '../helpers/clickhouse.ts'
import { migrate } from '../../lib/storage/migrate.ts'
import { NodeRegistry } from '../../lib/storage/node-registry.ts'
import { createLogger } from '../../lib/logger.ts'

t.test('live nodes are counted from heartbeats', async (t) => {
  const { clickhouse } = await createTestDatabase(t)
  const log = createLogger({ level: 'silent' })
  await migrate(clickhouse, log)
  let now = 1_000_000
  const clock = (): number => now
  const a = new NodeRegistry({ clickhouse, log, intervalMs: 1000, now: clock })
  const b = new NodeRegistry({ clickhouse, log, intervalMs: 1000, now: clock })
  await a.beat()
  t.equal(a.liveNodes, 1, 'alone')
  await b.beat()
  await a.beat()
  t.equal(a.liveNodes, 2, 'a counts b')
  t.equal(b.liveNodes, 2, 'b counts a')
  await b.stop()
  await a.beat()
  t.equal(a.liveNodes, 1, 'a stopped node is not counted')
  const c = new NodeRegistry({ clickhouse, log, intervalMs: 1000, now: clock })
  await c.beat()
  now += 2_500 // c missed two beats: still live
  await a.beat()
  t.equal(a.liveNodes, 2, 'two missed heartbeats are tolerated')
  now += 1_000 // three: gone
  await a.beat()
  t.equal(a.liveNodes, 1, 'a node silent for 3 intervals is not counted')
})
