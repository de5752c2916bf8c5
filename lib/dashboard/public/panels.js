// @ts-check
// The dashboard's panels: totals, top lists, the events table (live tail or history) and the
// event detail drawer. They render what they are given and report clicks; app.js decides what to
// fetch. Every value goes into the page as text (dom.js), never as markup.
import { $, el, replaceChildren, show, copyText, targetOf } from './dom.js'
import {
  filterTerm, formatBytes, formatCount, formatCountOf, formatEventTime, formatPercent, formatSeconds, statusClass,
} from './format.js'

/** @typedef {import('./types.js').SluiceEvent} SluiceEvent */
/** @typedef {import('./types.js').TopRow} TopRow */
/** @typedef {(terms: string[]) => void} OnFilter */

// --- totals ----------------------------------------------------------------------------------

/**
 * @typedef {object} Totals
 * @property {number | null} count
 * @property {number | null} errorRate 0..1
 * @property {number | null} bytes
 * @property {number | null} uniqueSources
 */

/**
 * totals plus a sub-line for each.
 * @param {Totals} totals
 * @param {{ count?: string, errors?: string, bytes?: string, sources?: string }} [subs]
 */
export function renderTotals (totals, subs = {}) {
  $('total-count').textContent = formatCount(totals.count, { short: (totals.count ?? 0) >= 1e5 })
  $('total-count').title = formatCount(totals.count)
  $('total-errors').textContent = formatPercent(totals.errorRate)
  const errorRate = totals.errorRate ?? 0
  $('total-errors').dataset.level = errorRate >= 0.05 ? 'bad' : errorRate >= 0.01 ? 'warn' : 'ok'
  $('total-bytes').textContent = formatBytes(totals.bytes)
  $('total-sources').textContent = formatCount(totals.uniqueSources)
  for (const key of /** @type {const} */ (['count', 'errors', 'bytes', 'sources'])) $(`total-${key}-sub`).textContent = subs[key] ?? ''
}

// --- top lists -------------------------------------------------------------------------------

/**
 * A number column of a top list; `bar` draws the ranking bar behind the key from it.
 * @typedef {{ key: string, label: string, format: (value: number | null) => string, bar?: boolean }} TopColumn
 */

/**
 * A top list of /stats `top`: `key` in that object, `field` the event field its rows name (and filter on).
 * @typedef {{ key: string, title: string, field: string, wide?: boolean, extra?: string[], columns: TopColumn[] }} TopList
 */

/** @type {TopColumn} */
const countColumn = { key: 'count', label: 'Events', format: (v) => formatCount(v, { short: (v ?? 0) >= 1e5 }), bar: true }
/** @type {TopList[]} */
const topLists = [
  {
    key: 'paths', title: 'Paths', field: 'path', wide: true,
    columns: [countColumn, { key: 'error_share', label: 'Errors', format: formatPercent }, { key: 'rt_p95', label: 'p95', format: formatSeconds }],
  },
  { key: 'status', title: 'Status codes', field: 'status', columns: [countColumn] },
  { key: 'hosts', title: 'Hosts', field: 'host', columns: [countColumn] },
  { key: 'sources', title: 'Sources', field: 'src', columns: [countColumn] },
  {
    key: 'slowest_paths', title: 'Slowest paths', field: 'path',
    columns: [{ key: 'rt_p95', label: 'p95', format: formatSeconds, bar: true }, { key: 'count', label: 'Events', format: formatCount }],
  },
  { key: 'not_found_paths', title: '404 paths', field: 'path', extra: ['status:404'], columns: [countColumn] },
  { key: 'user_agents', title: 'User agents', field: 'user_agent', columns: [countColumn] },
  { key: 'filenames', title: 'Files', field: 'filename', columns: [countColumn] },
  { key: 'levels', title: 'Levels', field: 'level', columns: [countColumn] },
]

export class TopLists {
  /** @type {Map<string, HTMLTableSectionElement>} */
  #bodies = new Map()
  /** @type {OnFilter} */
  #onFilter

  /**
   * @param {HTMLElement} container
   * @param {OnFilter} onFilter called with the terms a clicked row adds to q
   */
  constructor (container, onFilter) {
    this.#onFilter = onFilter
    for (const list of topLists) {
      const tbody = el('tbody')
      this.#bodies.set(list.key, tbody)
      container.append(el('section', { class: 'card toplist' + (list.wide ? ' wide' : ''), 'data-list': list.key },
        el('h2', { class: 'card-title' }, list.title),
        el('table', { class: 'table' },
          el('thead', {}, el('tr', {},
            el('th', { scope: 'col' }, fieldLabel(list.field)),
            list.columns.map((c) => el('th', { scope: 'col', class: 'num' }, c.label)))),
          tbody)))
    }
  }

  /**
   * top: the `top` object of a /stats answer; lists it lacks stay empty.
   * @param {Record<string, TopRow[]> | null} top
   */
  update (top) {
    for (const list of topLists) {
      const rows = top?.[list.key] ?? []
      const tbody = this.#bodies.get(list.key)
      if (tbody === undefined) continue
      if (rows.length === 0) {
        replaceChildren(tbody, el('tr', { class: 'empty-row' }, el('td', { colspan: list.columns.length + 1 }, 'Nothing in this range')))
        continue
      }
      const maxima = list.columns.map((c) => (c.bar ? Math.max(...rows.map((r) => numberOf(r[c.key]) ?? 0)) : 0))
      replaceChildren(tbody, rows.map((row) => this.#row(list, row, maxima)))
    }
  }

  /**
   * @param {TopList} list
   * @param {TopRow} row
   * @param {number[]} maxima per column, the largest value (for the bar)
   */
  #row (list, row, maxima) {
    const value = row[list.field]
    const terms = [filterTerm(list.field, value), ...(list.extra ?? [])]
    const label = value === null || value === undefined ? el('span', { class: 'none' }, '(none)') : String(value)
    const keyCell = el('td', { class: 'key', title: `Filter: ${terms.join(' ')}` },
      list.field === 'status' ? el('span', { class: `status s${statusClass(value)}` }, label)
        : list.field === 'level' && value !== null ? levelBadge(value) : label)
    // A bar behind the name, as long as the row's share of the largest value: the ranking at a glance.
    const barColumn = list.columns.findIndex((c) => c.bar)
    if (barColumn !== -1 && maxima[barColumn] > 0) {
      const bar = el('span', { class: 'bar', 'aria-hidden': 'true' })
      bar.style.width = `${Math.max(1, (100 * (numberOf(row[list.columns[barColumn].key]) ?? 0)) / maxima[barColumn])}%`
      keyCell.prepend(bar)
    }
    const cells = list.columns.map((c) => el('td', { class: 'num' }, c.format(numberOf(row[c.key]))))
    return el('tr', {
      class: 'clickable',
      tabindex: 0,
      onclick: () => this.#onFilter(terms),
      onkeydown: (/** @type {KeyboardEvent} */ e) => { if (e.key === 'Enter') this.#onFilter(terms) },
    }, keyCell, cells)
  }
}

/** @type {Record<string, string>} */
const fieldLabels = { path: 'Path', status: 'Status', host: 'Host', src: 'Source', user_agent: 'User agent', filename: 'File', level: 'Level' }

/** @param {string} field */
function fieldLabel (field) {
  return fieldLabels[field] ?? field
}

/**
 * A top-list cell's number, or null.
 * @param {unknown} value
 * @returns {number | null}
 */
function numberOf (value) {
  return typeof value === 'number' ? value : null
}

/** The levels of docs/api.md section 7.3, each with its colour (app.css, `.lvl-<level>`). */
const knownLevels = new Set(['trace', 'debug', 'info', 'warn', 'error', 'fatal'])

/**
 * A level as a coloured badge; a value outside the known six keeps the neutral colour.
 * @param {unknown} level
 * @returns {HTMLSpanElement | string}
 */
export function levelBadge (level) {
  if (typeof level !== 'string' || level === '') return ''
  return el('span', { class: knownLevels.has(level) ? `lvl lvl-${level}` : 'lvl' }, level)
}

// --- events table ----------------------------------------------------------------------------

/** Rows kept in the live tail: enough to scroll back a little, few enough to stay fast. */
export const maxTailRows = 500
/** Columns of the events table (index.html), which a notice row spans. */
const eventColumns = 10

export class EventsTable {
  /** @type {HTMLTableSectionElement} */
  #tbody
  /** @type {WeakMap<Element, SluiceEvent>} */
  #events = new WeakMap()
  /** @type {(event: SluiceEvent) => void} */
  #onSelect
  #withDate = false
  /** @type {Element | null} */
  #selected = null

  /**
   * @param {HTMLTableSectionElement} tbody
   * @param {(event: SluiceEvent) => void} onSelect called with the event of a clicked row
   */
  constructor (tbody, onSelect) {
    this.#tbody = tbody
    this.#onSelect = onSelect
    tbody.addEventListener('click', (e) => this.#select(targetOf(e)?.closest('tr') ?? null))
    tbody.addEventListener('keydown', (e) => { if (e.key === 'Enter') this.#select(targetOf(e)?.closest('tr') ?? null) })
  }

  get size () { return this.#tbody.querySelectorAll('tr.event').length }

  /**
   * withDate: show the date in the time column (ranges longer than a day).
   * @param {{ withDate?: boolean }} [options]
   */
  clear ({ withDate = false } = {}) {
    this.#withDate = withDate
    this.#tbody.parentElement?.classList.toggle('with-date', withDate) // a wider time column (app.css)
    this.#tbody.replaceChildren()
    this.#selected = null
  }

  /**
   * Adds events on top, newest (the last of the array) first, and keeps at most maxTailRows rows.
   * fresh: flash the new rows (live arrivals, not a backfill).
   * @param {SluiceEvent[]} events
   * @param {{ fresh?: boolean }} [options]
   */
  prepend (events, { fresh = true } = {}) {
    const max = maxTailRows
    const fragment = document.createDocumentFragment()
    for (let i = events.length - 1; i >= Math.max(0, events.length - max); i--) fragment.append(this.#row(events[i], fresh))
    this.#tbody.prepend(fragment)
    this.#trim(max)
  }

  /**
   * Adds events at the bottom, in the order given (history pages).
   * @param {SluiceEvent[]} events
   */
  append (events) {
    this.#tbody.append(...events.map((e) => this.#row(e, false)))
  }

  /**
   * A notice line on top of the tail (reconnects, events lost while paused).
   * @param {string} text
   */
  notice (text) {
    this.#tbody.prepend(el('tr', { class: 'notice' }, el('td', { colspan: eventColumns }, text)))
    this.#trim(maxTailRows)
  }

  /**
   * Events the server dropped for this tail; consecutive notices add up into one line.
   * @param {number} count
   */
  noticeDropped (count) {
    /** @type {HTMLTableRowElement | undefined} */
    let row = this.#tbody.rows[0]
    if (row === undefined || !row.classList.contains('dropped')) {
      row = el('tr', { class: 'notice dropped', dataset: { count: 0 } }, el('td', { colspan: eventColumns }))
      this.#tbody.prepend(row)
      this.#trim(maxTailRows)
    }
    row.dataset.count = String(Number(row.dataset.count) + count)
    row.cells[0].textContent = `${formatCountOf(Number(row.dataset.count), 'event')} not shown: they came faster than a tail sends them (the stored data has them all).`
  }

  /** @param {number} max rows kept */
  #trim (max) {
    const rows = this.#tbody.rows
    while (rows.length > max) rows[rows.length - 1].remove()
  }

  /** @param {Element | null} tr */
  #select (tr) {
    const event = tr === null ? undefined : this.#events.get(tr)
    if (tr === null || event === undefined) return
    this.#selected?.classList.remove('selected')
    this.#selected = tr
    tr.classList.add('selected')
    this.#onSelect(event)
  }

  /**
   * @param {SluiceEvent} event
   * @param {boolean} fresh
   */
  #row (event, fresh) {
    const message = event.message ?? summarizeAttrs(event.attrs) ?? event.user_agent ?? ''
    const cls = statusClass(event.status)
    const tr = el('tr', { class: 'event' + (fresh ? ' fresh' : ''), tabindex: 0 },
      el('td', { class: 'time', title: new Date(event.ts).toISOString() }, formatEventTime(event.ts, { withDate: this.#withDate })),
      el('td', { class: 'level' }, levelBadge(event.level)),
      el('td', {}, event.status == null ? '' : el('span', { class: `status s${cls}` }, String(event.status))),
      el('td', { class: 'method' }, event.method ?? ''),
      el('td', { class: 'host' }, event.host ?? ''),
      el('td', { class: 'path', title: event.path ?? '' }, event.path ?? ''),
      el('td', { class: 'num' }, event.rt == null ? '' : formatSeconds(event.rt)),
      el('td', { class: 'num' }, event.bytes == null ? '' : formatBytes(event.bytes)),
      el('td', { class: 'src' }, event.src ?? ''),
      el('td', { class: 'message', title: message.length > 60 ? message.slice(0, 2000) : null }, message))
    this.#events.set(tr, event)
    return tr
  }
}

/**
 * An event's attributes as `key=value ...`, or null when it has none: what a row without a
 * message shows in its place (the panels' table; Explore's message column after the request).
 * @param {SluiceEvent['attrs']} attrs
 * @returns {string | null}
 */
export function summarizeAttrs (attrs) {
  if (!attrs || typeof attrs !== 'object') return null
  const keys = Object.keys(attrs)
  return keys.length === 0 ? null : keys.map((k) => `${k}=${JSON.stringify(attrs[k])}`).join(' ')
}

// --- detail drawer ---------------------------------------------------------------------------

/** @type {Array<[keyof SluiceEvent, string]>} */
const detailFields = [
  ['level', 'Level'], ['status', 'Status'], ['method', 'Method'], ['host', 'Host'], ['path', 'Path'], ['rt', 'Response time'],
  ['bytes', 'Bytes'], ['src', 'Source'], ['user_agent', 'User agent'], ['filename', 'File'],
]
/** @param {string} text */
const aside = (text) => el('span', { class: 'aside' }, text)
/** @type {Set<string>} */
const filterable = new Set(['level', 'host', 'path', 'method', 'src', 'status', 'filename', 'user_agent'])

export class DetailDrawer {
  /** @type {HTMLElement} */
  #root
  /** @type {OnFilter} */
  #onFilter

  /**
   * @param {HTMLElement} root
   * @param {OnFilter} onFilter called with the term of a field's Filter button
   */
  constructor (root, onFilter) {
    this.#root = root
    this.#onFilter = onFilter
    $('detail-close').addEventListener('click', () => this.close())
    document.addEventListener('keydown', (e) => { if (e.key === 'Escape' && !root.hidden) this.close() })
  }

  /** @param {SluiceEvent} event */
  open (event) {
    const rows = [
      this.#item('Time', [formatEventTime(event.ts, { withDate: true }), aside(`${new Date(event.ts).toISOString()} · ${event.ts}`)]),
      this.#item('Received', event.received_at == null ? '–'
        : [formatEventTime(event.received_at, { withDate: true }), aside(`${formatSeconds(Math.max(0, event.received_at - event.ts) / 1000)} after the event time`)]),
    ]
    for (const [key, label] of detailFields) {
      const value = event[key]
      if (value == null) continue
      const text = key === 'rt' && typeof value === 'number' ? [formatSeconds(value), aside(`${value} s`)]
        : key === 'bytes' && typeof value === 'number' ? [formatBytes(value), aside(`${value} bytes`)] : String(value)
      rows.push(this.#item(label, text, filterable.has(key) ? filterTerm(key, value) : null))
    }
    const attrs = event.attrs && Object.keys(event.attrs).length > 0 ? JSON.stringify(event.attrs, null, 2) : null
    const copy = el('button', { type: 'button', class: 'btn btn-small' }, 'Copy JSON')
    copy.addEventListener('click', () => copyText(JSON.stringify(event, null, 2)).then(() => { copy.textContent = 'Copied' }, () => {}))
    replaceChildren($('detail-body'),
      el('dl', { class: 'fields' }, rows),
      event.message == null ? null : [el('h3', {}, 'Message'), el('pre', { class: 'code wrap' }, event.message)],
      el('h3', {}, 'Attributes'),
      attrs === null ? el('p', { class: 'muted' }, 'None') : el('pre', { class: 'code' }, attrs),
      el('div', { class: 'detail-actions' }, copy))
    show(this.#root)
    $('detail-close').focus()
  }

  close () {
    show(this.#root, false)
  }

  /**
   * @param {string} label
   * @param {import('./dom.js').Child} text
   * @param {string | null} [term] the filter term of its Filter button, or none
   */
  #item (label, text, term = null) {
    return el('div', { class: 'field' },
      el('dt', {}, label),
      el('dd', {}, el('span', { class: 'value' }, text),
        term === null ? null : el('button', {
          type: 'button', class: 'btn btn-small filter', title: `Add ${term} to the search`,
          onclick: () => this.#onFilter([term]),
        }, 'Filter')))
  }
}
