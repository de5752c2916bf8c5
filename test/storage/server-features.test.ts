// The feature gates by server version (docs/schema-versions.md).
import t from 'tap'
import { featureMinimums, noFeatures, parseVersion, serverFeatures } from '../../lib/storage/server-features.ts'
import type { ServerFeature } from '../../lib/storage/server-features.ts'

const all = Object.keys(featureMinimums) as ServerFeature[]

t.test('18.16 has none of the features: the portable schema', async (t) => {
  const f = serverFeatures('18.16.1')
  t.strictSame(all.filter((x) => f.has(x)), [])
})

t.test('26.7 has every feature', async (t) => {
  const f = serverFeatures('26.7.2.1')
  t.strictSame(all.filter((x) => f.has(x)), all)
})

t.test('each minimum is where its feature starts', async (t) => {
  for (const feature of all) {
    const [major, minor] = featureMinimums[feature]
    t.ok(serverFeatures(`${major}.${minor}.1.1`).has(feature), `${feature} at ${major}.${minor}`)
    const below = minor > 1 ? `${major}.${minor - 1}.9.9` : `${major - 1}.12.9.9`
    t.notOk(serverFeatures(below).has(feature), `${feature} not at ${below}`)
  }
  t.ok(serverFeatures('22.8.1').has('codecs'))
  t.notOk(serverFeatures('24.3.1').has('lightweightDelete'), 'lightweight_deletes_sync came in 24.4')
  t.ok(serverFeatures('24.8.1').has('lightweightDelete'))
})

t.test('a version that does not parse counts as the portable schema', async (t) => {
  t.strictSame(parseVersion('garbage'), [0, 0])
  t.strictSame(all.filter((x) => serverFeatures('').has(x)), [])
  t.strictSame(all.filter((x) => noFeatures.has(x)), [])
})
