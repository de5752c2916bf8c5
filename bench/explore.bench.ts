// How long the dashboard's Explore view takes to show its first render over a loaded stream,
// measured in the browser (Debian's Chromium through playwright-core):
//
//   CLICKHOUSE_URL=http://127.0.0.1:18123 node bench/explore.bench.ts --database NAME
//     [--stream find] [--from MS] [--to MS] [--runs 7] [--sluice-data DIR]
//
// It starts Sluice in a child process (sluice-child.ts) on an existing database (the find
// benchmark's, kept with `--keep`: 30 M events of one stream over 24 h, bench/find-dataset.ts),
// installs a fresh admin PAT through SLUICE_BOOTSTRAP_TOKEN (the database's own tokens are not
// read), and opens the dashboard on the range [from, to) (default: the find data set's 24 h).
// Each run is a new browser context (an empty sessionStorage and HTTP cache; the token put in
// before the page's scripts run), so every run loads the page and its assets again:
// - `link`: a URL with view=explore (a shared link): the first render's reads are /fields
//   (sampled past 50,000 events), /stats?by=level and one page of /events, in parallel;
// - `detect`: a URL without view: the page first reads the stream's newest events to choose
//   Explore or the panels, then the same three.
// Reported per case: the time from navigation start until the frame after the first render
// (explore-view.js marks it `explore:rendered`: every part drawn), from the first of its API calls
// to that mark, when each part (events list, histogram, field sidebar: each drawn as its read
// answers) was drawn, and each call's time (request start to response end, Resource Timing). The first run after Sluice
// starts is reported apart (cold ClickHouse caches); then the median and the slowest of `--runs`.
// Timings are wall clock on a shared machine: the load average is printed beside them.
import { parseArgs } from 'node:util'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { cpus, loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { execFileSync } from 'node:child_process'
import { chromium } from 'playwright-core'
import type { Browser } from 'playwright-core'
import { generateToken } from '../lib/auth/token-format.ts'
import { SluiceChild } from './sluice-child.ts'

/** The find data set's range (bench/find-dataset.ts startMs, spanMs): 2025-11-20T00:37Z, 24 h. */
const findStartMs = 1_763_596_800_000 + 37 * 60_000
const dayMs = 86_400_000

const { values: args } = parseArgs({
  options: {
    database: { type: 'string' },
    stream: { type: 'string', default: 'find' },
    from: { type: 'string', default: String(findStartMs) },
    to: { type: 'string', default: String(findStartMs + dayMs) },
    runs: { type: 'string', default: '7' },
    'sluice-data': { type: 'string' },
  },
})
if (!args.database) throw new Error('--database NAME: a database holding the stream (find.bench.ts --keep)')
const chromiumPath = '/usr/bin/chromium'
if (!existsSync(chromiumPath)) throw new Error(`no Chromium at ${chromiumPath} (apt-get install -y chromium)`)
const runs = Number(args.runs)
const clickhouseUrl = process.env.CLICKHOUSE_URL ?? 'http://127.0.0.1:18123'

interface Call { name: string, ms: number }
/** Times from the first read's start: each part drawn, and all of them (the first render). */
interface Run { totalMs: number, viewMs: number, parts: Record<string, number>, calls: Call[] }
const partNames = ['events', 'histogram', 'fields']

/** Which API call a resource URL is, for the report. */
function callName (url: string): string {
  const u = new URL(url)
  const kind = u.pathname.split('/').slice(4).join('/') || u.pathname
  if (kind === 'stats') return `stats?by=${u.searchParams.get('by')}`
  if (kind === 'events') return u.searchParams.has('q') || u.searchParams.get('from') !== 'now-7d' ? 'events' : 'events (view choice)'
  return kind === '' ? 'stream' : kind
}

async function measure (browser: Browser, url: string, token: string): Promise<Run> {
  const context = await browser.newContext({ viewport: { width: 1440, height: 900 } })
  try {
    await context.addInitScript((t) => { sessionStorage.setItem('sluice.token', t) }, token)
    const page = await context.newPage()
    const problems: string[] = []
    page.on('pageerror', (err) => problems.push(err.message))
    await page.goto(url)
    await page.waitForFunction(() => performance.getEntriesByName('explore:rendered').length > 0, null, { timeout: 120_000, polling: 50 })
    if (problems.length > 0) throw new Error(`page errors: ${problems.join('; ')}`)
    // The stream line under the search is read after the first render: let it end before the next
    // run, so that runs never overlap.
    await page.locator('#stream-meta').filter({ hasText: /./ }).waitFor({ timeout: 60_000 })
    const timing = await page.evaluate(() => ({
      rendered: performance.getEntriesByName('explore:rendered')[0].startTime,
      marks: performance.getEntriesByType('mark').map((m) => ({ name: m.name, at: m.startTime })),
      resources: performance.getEntriesByType('resource')
        .filter((e) => e.name.includes('/api/streams/'))
        .map((e) => ({ name: e.name, start: e.startTime, end: (e as unknown as { responseEnd: number }).responseEnd })),
    }))
    const reads = timing.resources.filter((r) => /\/(fields|stats|events)\?/.test(r.name))
    const first = Math.min(...reads.map((r) => r.start))
    return {
      totalMs: timing.rendered,
      viewMs: timing.rendered - first,
      parts: Object.fromEntries(partNames.map((n) => [n, (timing.marks.find((m) => m.name === `explore:${n}`)?.at ?? Number.NaN) - first])),
      calls: timing.resources.filter((r) => r.end <= timing.rendered).map((r) => ({ name: callName(r.name), ms: r.end - r.start })),
    }
  } finally {
    await context.close()
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const ms = (x: number) => `${Math.round(x)} ms`

function report (label: string, list: Run[]): void {
  const names = [...new Set(list.flatMap((r) => r.calls.map((c) => c.name)))]
  const calls = names.map((n) => {
    const times = list.map((r) => r.calls.find((c) => c.name === n)?.ms ?? 0)
    return `${n} ${ms(median(times))}`
  })
  console.log(`${label.padEnd(8)} page load to render: median ${ms(median(list.map((r) => r.totalMs)))}, max ${ms(Math.max(...list.map((r) => r.totalMs)))}; ` +
    `first read to render: median ${ms(median(list.map((r) => r.viewMs)))}, max ${ms(Math.max(...list.map((r) => r.viewMs)))}`)
  console.log(`         drawn after the first read's start (median): ${partNames.map((n) => `${n} ${ms(median(list.map((r) => r.parts[n])))}`).join(', ')}`)
  console.log(`         calls (median): ${calls.join(', ')}`)
}

const dataDir = args['sluice-data'] ?? mkdtempSync(join(tmpdir(), 'sluice-explore-bench-'))
const token = generateToken('pat')
const sluice = await SluiceChild.start({ dataDir, clickhouseUrl, database: args.database, env: { SLUICE_BOOTSTRAP_TOKEN: token } })
const browser = await chromium.launch({
  executablePath: chromiumPath,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
})
try {
  const version = execFileSync(chromiumPath, ['--version'], { encoding: 'utf8' }).trim()
  const rows = await sluice.api<{ stats?: { events: number } }>('GET', `/api/streams/${args.stream}`, token)
  console.log(`Explore first render: stream ${args.stream} (${rows.stats?.events ?? '?'} events), range ${new Date(Number(args.from)).toISOString()} → ${new Date(Number(args.to)).toISOString()}`)
  console.log(`${cpus().length} cores, Node ${process.version}, ${version}, load avg ${loadavg().map((x) => x.toFixed(2)).join(' ')}, ${new Date().toISOString()}`)
  const hash = `stream=${encodeURIComponent(args.stream)}&range=custom&from=${args.from}&to=${args.to}`
  const cases = { link: `${sluice.url}/#${hash}&view=explore`, detect: `${sluice.url}/#${hash}` }
  const cold = await measure(browser, cases.link, token)
  report('cold', [cold])
  for (const [label, url] of Object.entries(cases)) {
    const list: Run[] = []
    for (let i = 0; i < runs; i++) list.push(await measure(browser, url, token))
    report(label, list)
  }
  console.log(`load avg after: ${loadavg().map((x) => x.toFixed(2)).join(' ')}`)
} finally {
  await browser.close()
  await sluice.stop()
  if (!args['sluice-data']) rmSync(dataDir, { recursive: true, force: true })
}
