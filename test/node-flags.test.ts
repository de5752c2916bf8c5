// Every way of starting Sluice passes lib/node-flags.ts's flags, and they take effect.
import t from 'tap'
import { readFileSync } from 'node:fs'
import { execFileSync } from 'node:child_process'
import { serverEnv, serverEnvPrefix, serverNodeFlags } from '../lib/node-flags.ts'

const root = new URL('../', import.meta.url)
/** The main thread's semi-space bound, MiB, from the flag. */
const semiSpaceMiB = Number(/^--max-semi-space-size=(\d+)$/.exec(serverNodeFlags.find((f) => f.startsWith('--max-semi-space-size=')) ?? '')?.[1])
const scripts = (JSON.parse(readFileSync(new URL('package.json', root), 'utf8')) as { scripts: Record<string, string> }).scripts

t.test('npm start, npm run sluice and the sluice bin carry the flags and the environment', async (t) => {
  t.equal(serverEnvPrefix, 'MALLOC_ARENA_MAX=2 MALLOC_MMAP_THRESHOLD_=262144')
  t.equal(scripts.start, `${serverEnvPrefix} node ${serverNodeFlags.join(' ')} lib/main.ts`)
  t.equal(scripts.sluice, `${serverEnvPrefix} node ${serverNodeFlags.join(' ')} lib/cli/cli.ts`)
  const shebang = readFileSync(new URL('lib/cli/cli.ts', root), 'utf8').split('\n', 1)[0]
  t.equal(shebang, `#!/usr/bin/env -S ${serverEnvPrefix} node ${serverNodeFlags.join(' ')}`)
})

t.test('the shebang\'s env -S sets the environment for the process it starts', async (t) => {
  // The same `env -S` line with a probe in place of the CLI: what the process sees.
  const probe = 'process.stdout.write(JSON.stringify(Object.fromEntries(Object.keys(' + JSON.stringify(serverEnv) + ').map((k) => [k, process.env[k]]))))'
  const out = execFileSync('/usr/bin/env', ['-S', `${serverEnvPrefix} ${process.execPath} ${serverNodeFlags.join(' ')} -e`, probe], { encoding: 'utf8' })
  t.same(JSON.parse(out), serverEnv)
})

t.test('the semi-space flag bounds the young generation', async (t) => {
  // Allocate enough short-lived objects for V8 to grow new space to its maximum.
  const probe = 'const v8 = require("node:v8"); let a = []; for (let i = 0; i < 3e6; i++) { a.push({ i }); if (a.length > 2e5) a = [] }' +
    'process.stdout.write(String(v8.getHeapSpaceStatistics().find((s) => s.space_name === "new_space").space_size))'
  t.ok(semiSpaceMiB > 0, 'the flag is there')
  const newSpace = Number(execFileSync(process.execPath, [...serverNodeFlags, '-e', probe], { encoding: 'utf8' }))
  t.ok(newSpace > 0 && newSpace <= 2 * semiSpaceMiB * 2 ** 20, `new space ${(newSpace / 2 ** 20).toFixed(1)} MiB: two semi-spaces of at most ${semiSpaceMiB} MiB`)
})

t.test('forMainThreadOnly: workers created afterwards keep V8\'s own young generation', async (t) => {
  // In a process started with the flags (the semi-space bound lowered to 1 MiB, so that the
  // worker's growth past it does not depend on how busy the machine is): the main thread's new
  // space stays bounded, a worker created after forMainThreadOnly() grows past it.
  const script = `
    import { Worker } from 'node:worker_threads'
    import v8 from 'node:v8'
    import { forMainThreadOnly } from ${JSON.stringify(new URL('../lib/node-flags.ts', import.meta.url).href)}
    const grow = 'let a = []; for (let i = 0; i < 3e6; i++) { a.push({ i }); if (a.length > 2e5) a = [] }'
    const newSpace = () => v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size
    eval(grow)
    const main = newSpace()
    forMainThreadOnly()
    const report = 'process.getBuiltinModule("node:worker_threads").parentPort.postMessage(process.getBuiltinModule("node:v8").getHeapSpaceStatistics().find((s) => s.space_name === "new_space").space_size)'
    const worker = new Worker(grow + ';' + report, { eval: true })
    const inWorker = await new Promise((resolve) => worker.once('message', resolve))
    await worker.terminate()
    eval(grow)
    process.stdout.write(JSON.stringify({ main, inWorker, mainAfter: newSpace() }))`
  const bound = 2 * 2 ** 20 // two semi-spaces of 1 MiB
  const out = JSON.parse(execFileSync(process.execPath, [...serverNodeFlags, '--max-semi-space-size=1', '--input-type=module', '-e', script], { encoding: 'utf8' })) as { main: number, inWorker: number, mainAfter: number }
  t.ok(out.main <= bound, `main thread: ${out.main / 2 ** 20} MiB`)
  t.ok(out.mainAfter <= bound, 'the main thread keeps its bound')
  t.ok(out.inWorker > bound, `worker: ${out.inWorker / 2 ** 20} MiB`)
})
