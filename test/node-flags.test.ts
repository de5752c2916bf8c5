// Every way of starting Sluice passes lib/node-flags.ts's flags, and they take effect.
import t from 'tap'
import { readFileSync } from 'node:fs'
import { execFileSync } from 'node:child_process'
import { serverNodeFlags } from '../lib/node-flags.ts'

const root = new URL('../', import.meta.url)
const scripts = (JSON.parse(readFileSync(new URL('package.json', root), 'utf8')) as { scripts: Record<string, string> }).scripts

t.test('npm start, npm run sluice and the sluice bin carry the flags', async (t) => {
  t.equal(scripts.start, `node ${serverNodeFlags.join(' ')} lib/main.ts`)
  t.equal(scripts.sluice, `node ${serverNodeFlags.join(' ')} lib/cli/cli.ts`)
  const shebang = readFileSync(new URL('lib/cli/cli.ts', root), 'utf8').split('\n', 1)[0]
  t.equal(shebang, `#!/usr/bin/env -S node ${serverNodeFlags.join(' ')}`)
})

t.test('the semi-space flag bounds the young generation', async (t) => {
  // Allocate enough short-lived objects for V8 to grow new space to its maximum.
  const probe = 'const v8 = require("node:v8"); let a = []; for (let i = 0; i < 3e6; i++) { a.push({ i }); if (a.length > 2e5) a = [] }' +
    'process.stdout.write(String(v8.getHeapSpaceStatistics().find((s) => s.space_name === "new_space").space_size))'
  const semiSpaceMiB = Number(/^--max-semi-space-size=(\d+)$/.exec(serverNodeFlags.find((f) => f.startsWith('--max-semi-space-size=')) ?? '')?.[1])
  t.ok(semiSpaceMiB > 0, 'the flag is there')
  const newSpace = Number(execFileSync(process.execPath, [...serverNodeFlags, '-e', probe], { encoding: 'utf8' }))
  t.ok(newSpace > 0 && newSpace <= 2 * semiSpaceMiB * 2 ** 20, `new space ${(newSpace / 2 ** 20).toFixed(1)} MiB: two semi-spaces of at most ${semiSpaceMiB} MiB`)
})
