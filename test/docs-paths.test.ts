// Every repository file the README and docs/ name exists: a path from the root (`lib/app.ts`,
// `bench/README.md`), a path inside lib/ as the architecture map writes them (`live/tail-hub.ts`),
// or a file name (`ingest-pipeline.ts`, unique across lib/ as the style guide asks). Renaming or
// moving a file without its docs fails here, with the doc and line that name it.
import t from 'tap'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve, sep } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const skipDirs = new Set(['node_modules', '.git', '.tap', 'coverage'])

function filesUnder (dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    if (skipDirs.has(entry.name)) return []
    const path = join(dir, entry.name)
    return entry.isDirectory() ? filesUnder(path) : [relative(root, path).split(sep).join('/')]
  })
}

const repoFiles = filesUnder(root)
const repoPaths = new Set(repoFiles)
const repoDirs = new Set(repoFiles.flatMap((f) => f.split('/').slice(0, -1).map((_, i, parts) => parts.slice(0, i + 1).join('/'))))
const baseNames = new Set(repoFiles.map((f) => f.slice(f.lastIndexOf('/') + 1)))
const topDirs = ['lib', 'test', 'bench', 'scripts', 'docs', 'config', '.ci']
const sourceExt = /\.(ts|js|mjs|json|md|sh|css|html|yaml|yml|sql|xml|conf)$/

/** The names a doc gives as code (`...`) or as a link target, with their line numbers. */
function namedPaths (doc: string): Array<{ line: number, name: string }> {
  const out: Array<{ line: number, name: string }> = []
  readFileSync(join(root, doc), 'utf8').split('\n').forEach((text, i) => {
    for (const m of text.matchAll(/`([^`\s]+)`|\]\(([^)\s#]+)(?:#[^)]*)?\)/g)) {
      let name = m[1] ?? m[2]
      if (m[2] !== undefined) {
        if (/^[a-z]+:/.test(name)) continue // a URL
        name = relative(root, resolve(root, dirname(doc), name)).split(sep).join('/')
      }
      out.push({ line: i + 1, name: name.replace(/[.,:;)]+$/, '').replace(/:\d+(-\d+)?$/, '') })
    }
  })
  return out
}

/** True when `name` looks like a repository file or folder and none is there. */
function isMissing (name: string): boolean {
  const clean = name.replace(/\/$/, '')
  if (topDirs.some((d) => clean === d || clean.startsWith(d + '/'))) {
    if (/[*{}<>]/.test(clean)) return false // a pattern (`test/**/*.test.ts`, `lib/inputs/<name>/`)
    return !repoPaths.has(clean) && !repoDirs.has(clean)
  }
  if (/[*{}<>$]/.test(clean) || clean.startsWith('/') || clean.startsWith('.') || clean.includes('=')) return false
  if (!sourceExt.test(clean) || !/^[\w./-]+$/.test(clean)) return false
  if (!clean.includes('/')) return !baseNames.has(clean)
  // A path inside lib/ (`live/tail-hub.ts`), or relative to the folder the doc is describing.
  return !repoFiles.some((f) => f === clean || f.endsWith('/' + clean))
}

/** Files the docs name that are not this repository's: a shipper's sources, a user's files. */
const notOurs: Record<string, string[]> = {
  'README.md': ['data/clickhouse/config.xml'], // written by the managed ClickHouse at its first start
  'docs/shippers/fluent-bit.md': ['parsers.conf'], // Fluent Bit's
  'docs/shippers/node.md': [ // the Node shipper packages' own sources, cited with their versions
    'build/src/is-export-retryable.js', 'build/src/retrying-transport.js', 'BatchLogRecordProcessorBase.js', 'lib/helpers.js',
    'lib/Transport.js', 'lib.js', 'dist/index.mjs', 'src/batcher.js', 'lib/winston/transports/http.js',
  ],
}

const docs = ['README.md', ...repoFiles.filter((f) => f.startsWith('docs/') && f.endsWith('.md'))]

t.test('every repository file named in README.md and docs/ exists', async (t) => {
  t.ok(docs.length > 1, `checked ${docs.join(', ')}`)
  const missing = docs.flatMap((doc) => namedPaths(doc).filter((p) => !(notOurs[doc] ?? []).includes(p.name) && isMissing(p.name)).map((p) => `${doc}:${p.line} ${p.name}`))
  t.same(missing, [], 'no named file is missing')
})

t.test('the checker sees a missing file', async (t) => {
  t.ok(isMissing('lib/no-such-file.ts'))
  t.ok(isMissing('no-such-stage.ts'))
  t.ok(isMissing('live/no-such-file.ts'))
  t.notOk(isMissing('lib/app.ts'))
  t.notOk(isMissing('ingest-pipeline.ts'))
  t.notOk(isMissing('live/tail-hub.ts'))
  t.notOk(isMissing('lib/inputs/<name>/'))
  t.ok(existsSync(join(root, 'README.md')))
})
