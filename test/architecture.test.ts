// The import graph of lib/ points down: no cycle between feature folders, and the event model
// (lib/events/) imports nothing outside itself. Built from the sources' own `import … from '…'` and
// `export … from '…'` statements (type-only imports included: they couple folders the same way).
// A node is a folder under lib/ (lib/ingest/…: "ingest"), or a top-level file (lib/app.ts:
// "app.ts"), so app.ts importing every folder and every folder importing errors.ts is no cycle.
import t from 'tap'
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve, sep } from 'node:path'
import { fileURLToPath } from 'node:url'

const libDir = resolve(dirname(fileURLToPath(import.meta.url)), '..', 'lib')

/** Folder-level edges allowed to close a cycle: none. */
const knownEdges = new Set<string>([])

function tsFiles (dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return tsFiles(path)
    return entry.name.endsWith('.ts') ? [path] : []
  })
}

/** The node a lib/ file belongs to: its first folder under lib/, or its own name at the top. */
function nodeOf (file: string): string {
  const parts = relative(libDir, file).split(sep)
  return parts[0]
}

const importPattern = /(?:^|\n)\s*(?:import|export)\s[^'";]*?\sfrom\s+'([^']+)'|(?:^|\n)\s*import\s+'([^']+)'/g

/** file → the lib/ files it imports (relative specifiers only; packages and node: are outside). */
function importsOf (file: string): string[] {
  const source = readFileSync(file, 'utf8')
  const targets: string[] = []
  for (const match of source.matchAll(importPattern)) {
    const spec = match[1] ?? match[2]
    if (!spec.startsWith('.')) continue
    targets.push(resolve(dirname(file), spec))
  }
  return targets
}

interface Edge { from: string, to: string, file: string, target: string }

function folderEdges (): Edge[] {
  const edges: Edge[] = []
  for (const file of tsFiles(libDir)) {
    for (const target of importsOf(file)) {
      if (!target.startsWith(libDir + sep)) continue
      const from = nodeOf(file)
      const to = nodeOf(target)
      if (from !== to) edges.push({ from, to, file: relative(libDir, file), target: relative(libDir, target) })
    }
  }
  return edges
}

/** Strongly connected components of more than one node (Tarjan): the folder cycles. */
function cycles (edges: Array<Pick<Edge, 'from' | 'to'>>): string[][] {
  const next = new Map<string, Set<string>>()
  for (const { from, to } of edges) {
    if (!next.has(from)) next.set(from, new Set())
    if (!next.has(to)) next.set(to, new Set())
    next.get(from)!.add(to)
  }
  let counter = 0
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: string[] = []
  const onStack = new Set<string>()
  const found: string[][] = []
  const visit = (v: string): void => {
    index.set(v, counter)
    low.set(v, counter)
    counter++
    stack.push(v)
    onStack.add(v)
    for (const w of next.get(v)!) {
      if (!index.has(w)) {
        visit(w)
        low.set(v, Math.min(low.get(v)!, low.get(w)!))
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, index.get(w)!))
      }
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = []
      let w: string
      do {
        w = stack.pop()!
        onStack.delete(w)
        component.push(w)
      } while (w !== v)
      if (component.length > 1) found.push(component.sort())
    }
  }
  for (const v of [...next.keys()].sort()) if (!index.has(v)) visit(v)
  return found
}

/** Each edge of a cycle with the files that make it, for a failure message that says what to move. */
function describe (component: string[], edges: Edge[]): string {
  const inside = edges.filter((e) => component.includes(e.from) && component.includes(e.to))
  const lines = [...new Set(inside.map((e) => `  ${e.from} -> ${e.to}: ${e.file} imports ${e.target}`))].sort()
  return `cycle between ${component.join(', ')}:\n${lines.join('\n')}`
}

t.test('the graph finder sees what it must', async (t) => {
  t.same(cycles([{ from: 'a', to: 'b' }, { from: 'b', to: 'c' }, { from: 'c', to: 'a' }, { from: 'c', to: 'd' }]), [['a', 'b', 'c']])
  t.same(cycles([{ from: 'a', to: 'b' }, { from: 'b', to: 'c' }]), [])
  const edges = folderEdges()
  t.ok(edges.some((e) => e.from === 'app.ts' && e.to === 'ingest'), 'app.ts imports lib/ingest')
  t.ok(edges.some((e) => e.from === 'ingest' && e.to === 'errors.ts'), 'lib/ingest imports errors.ts')
  t.ok(edges.some((e) => e.file.startsWith('ingest/') && e.to === 'storage'), 'a multi-line or type-only import is seen')
})

t.test('no cycle between feature folders', async (t) => {
  const edges = folderEdges().filter((e) => !knownEdges.has(`${e.from} -> ${e.to}`))
  const found = cycles(edges)
  t.same(found.map((c) => describe(c, edges)), [], 'imports point down')
})

t.test('lib/events imports nothing outside lib/events', async (t) => {
  const outside = folderEdges().filter((e) => e.from === 'events').map((e) => `${e.file} imports ${e.target}`)
  t.same(outside, [])
})

t.test('lib/ imports nothing outside lib/ (the local cluster, scripts, tests and benches are not the service)', async (t) => {
  const outside: string[] = []
  for (const file of tsFiles(libDir)) {
    for (const target of importsOf(file)) {
      if (!target.startsWith(libDir + sep)) outside.push(`${relative(libDir, file)} imports ${relative(libDir, target)}`)
    }
  }
  t.same(outside, [])
})
