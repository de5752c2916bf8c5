// @ts-check
// Explore's events list: the chosen columns (a column of the events API or any attribute), newest
// first; history pages appended, live events prepended (at most maxTailRows kept). A row opens
// under itself with every field and attribute, each with "filter for" and "exclude" buttons, and
// the event's actions (show context, copy as JSON). The cursor row moves with j/k (keyboard in
// explore-view.js). Every value goes into the page as text (dom.js).
import { copyText, el, replaceChildren, targetOf } from './dom.js'
import { formatBytes, formatEventTime, formatSeconds, statusClass, zoneLabel } from './format.js'
import { eventColumns, fieldValue, flatAttrs, isColumn, valueText } from './explore-columns.js'
import { levelBadge, maxTailRows, summarizeAttrs } from './panels.js'

/** @typedef {import('./types.js').SluiceEvent} SluiceEvent */

/**
 * @typedef {object} TableHandlers
 * @property {(name: string, value: string, exclude: boolean) => void} onFilter
 * @property {(event: SluiceEvent) => void} onContext
 * @property {(name: string) => void} onColumn toggles a column
 * @property {(event: SluiceEvent | null) => void} onOpen the opened event changed
 */

/** @type {Record<string, string>} */
const labels = { ts: 'Time', rt: 'Duration', src: 'Source', user_agent: 'User agent', trace_id: 'Trace', span_id: 'Span' }

/** @param {string} name */
const labelOf = (name) => labels[name] ?? (isColumn(name) ? name[0].toUpperCase() + name.slice(1) : name)

export class ExploreTable {
  /** @type {HTMLTableElement} */
  #table
  /** @type {HTMLTableSectionElement} */
  #tbody
  /** @type {TableHandlers} */
  #handlers
  /** @type {string[]} */
  #columns = []
  #withDate = false
  /** @type {WeakMap<Element, SluiceEvent>} */
  #events = new WeakMap()
  /** The row whose details are open. @type {HTMLTableRowElement | null} */
  #open = null
  /** The keyboard cursor's row. @type {HTMLTableRowElement | null} */
  #cursor = null

  /**
   * @param {HTMLTableElement} table
   * @param {TableHandlers} handlers
   */
  constructor (table, handlers) {
    this.#table = table
    this.#tbody = table.tBodies[0] ?? table.createTBody()
    this.#handlers = handlers
    this.#tbody.addEventListener('click', (e) => {
      const target = targetOf(e)
      if (target?.closest('.x-detail')) return
      const tr = target?.closest('tr.event')
      if (tr instanceof HTMLTableRowElement) this.toggle(tr)
    })
  }

  get size () { return this.#tbody.querySelectorAll('tr.event').length }
  get columns () { return this.#columns }

  /**
   * Empties the list; the columns and the time format for the next events.
   * @param {string[]} columns
   * @param {{ withDate?: boolean }} [options]
   */
  reset (columns, { withDate = false } = {}) {
    this.#columns = columns
    this.#withDate = withDate
    this.#table.classList.toggle('x-with-date', withDate) // a wider time column (app.css)
    this.#open = null
    this.#cursor = null
    this.#tbody.replaceChildren()
    this.#renderHead()
  }

  /** @param {string[]} columns new columns for the rows shown: they are drawn again */
  setColumns (columns) {
    const events = [...this.#tbody.querySelectorAll('tr.event')].map((tr) => this.#events.get(tr)).filter((e) => e !== undefined)
    const openId = this.#open ? this.#events.get(this.#open)?.id : undefined
    this.reset(columns, { withDate: this.#withDate })
    this.append(events)
    if (openId) this.openById(openId)
  }

  /** @param {SluiceEvent[]} events newest first */
  append (events) {
    this.#tbody.append(...events.map((e) => this.#row(e, false)))
  }

  /**
   * Live arrivals on top, oldest of them first in the array; at most maxTailRows rows kept.
   * @param {SluiceEvent[]} events
   */
  prepend (events) {
    const fragment = document.createDocumentFragment()
    for (let i = events.length - 1; i >= Math.max(0, events.length - maxTailRows); i--) fragment.append(this.#row(events[i], true))
    this.#tbody.prepend(fragment)
    const rows = this.#tbody.querySelectorAll('tr.event')
    for (let i = maxTailRows; i < rows.length; i++) {
      const tr = rows[i]
      if (tr === this.#open) this.#close()
      tr.remove()
    }
  }

  /**
   * Opens the row of the event with this id; false when it is not in the list.
   * @param {string} id
   */
  openById (id) {
    const tr = this.rowById(id)
    if (tr === null) return false
    if (this.#open !== tr) this.toggle(tr, { quiet: true })
    tr.scrollIntoView({ block: 'nearest' })
    return true
  }

  /**
   * The row of the event with this id, or null.
   * @param {string} id
   * @returns {HTMLTableRowElement | null}
   */
  rowById (id) {
    for (const tr of this.#tbody.querySelectorAll('tr.event')) {
      if (tr instanceof HTMLTableRowElement && this.#events.get(tr)?.id === id) return tr
    }
    return null
  }

  /**
   * A pinned event on top (a link's event that is not on the first page), opened.
   * @param {SluiceEvent} event
   */
  pin (event) {
    const tr = this.#row(event, false)
    tr.classList.add('pinned')
    this.#tbody.prepend(tr)
    this.toggle(tr, { quiet: true })
  }

  /**
   * Opens a row's details, or closes them when open.
   * @param {HTMLTableRowElement} tr
   * @param {{ quiet?: boolean }} [options] quiet: do not report it (restoring a link)
   */
  toggle (tr, { quiet = false } = {}) {
    const wasOpen = this.#open === tr
    this.#close()
    this.#setCursor(tr)
    if (!wasOpen) {
      const event = this.#events.get(tr)
      if (event === undefined) return
      tr.classList.add('open')
      tr.setAttribute('aria-expanded', 'true')
      tr.after(this.#detail(event))
      this.#open = tr
      if (!quiet) this.#handlers.onOpen(event)
    } else if (!quiet) this.#handlers.onOpen(null)
  }

  /** Closes the open row; false when none was open. */
  close () {
    if (this.#open === null) return false
    const tr = this.#open
    this.#close()
    tr.focus()
    this.#handlers.onOpen(null)
    return true
  }

  #close () {
    if (this.#open === null) return
    this.#open.classList.remove('open')
    this.#open.setAttribute('aria-expanded', 'false')
    const next = this.#open.nextElementSibling
    if (next?.classList.contains('x-detail')) next.remove()
    this.#open = null
  }

  /**
   * Moves the keyboard cursor by delta rows (j: +1, k: -1).
   * @param {number} delta
   */
  move (delta) {
    const rows = [...this.#tbody.querySelectorAll('tr.event')]
    if (rows.length === 0) return
    const at = this.#cursor ? rows.indexOf(this.#cursor) : -1
    const next = at === -1 ? 0 : Math.min(rows.length - 1, Math.max(0, at + delta))
    const tr = rows[next]
    if (tr instanceof HTMLTableRowElement) this.#setCursor(tr)
  }

  /** Opens (or closes) the cursor's row. */
  openCursor () {
    if (this.#cursor) this.toggle(this.#cursor)
  }

  /** @param {HTMLTableRowElement} tr */
  #setCursor (tr) {
    this.#cursor?.classList.remove('cursor')
    this.#cursor = tr
    tr.classList.add('cursor')
    tr.focus({ preventScroll: true })
    tr.scrollIntoView({ block: 'nearest' })
  }

  #renderHead () {
    const head = this.#table.tHead ?? this.#table.createTHead()
    // Every column keeps a readable width, the table scrolls sideways past the window: with the
    // fixed layout the chosen columns shared what the message left, down to nothing on a phone
    // (explore34c H6).
    const withDate = this.#table.classList.contains('x-with-date')
    this.#table.style.minWidth = `${this.#columns.reduce((sum, name) => sum + (name === 'ts' && withDate ? 196 : minColumnPx[name] ?? otherColumnPx), 0)}px`
    replaceChildren(head, el('tr', {}, this.#columns.map((name) => el('th', { scope: 'col', class: `c-${cssName(name)}`, dataset: { column: name } },
      labelOf(name),
      // The zone the times are in (explore32c F13), beside the Time heading.
      name === 'ts' ? el('span', { class: 'x-zone' }, ` ${zoneLabel()}`) : null,
      name === 'ts' ? null : el('button', {
        type: 'button', class: 'x-remove', title: `Remove the ${name} column`, 'aria-label': `Remove the ${name} column`,
        onclick: () => this.#handlers.onColumn(name),
      }, '×')))))
  }

  /**
   * @param {SluiceEvent} event
   * @param {boolean} fresh
   */
  #row (event, fresh) {
    const tr = el('tr', { class: 'event' + (fresh ? ' fresh' : ''), tabindex: -1, 'aria-expanded': 'false', dataset: { id: event.id ?? '' } },
      this.#columns.map((name) => this.#cell(event, name)))
    this.#events.set(tr, event)
    return tr
  }

  /**
   * @param {SluiceEvent} event
   * @param {string} name
   */
  #cell (event, name) {
    const value = fieldValue(event, name)
    const cls = `c-${cssName(name)}`
    if (name === 'ts') return el('td', { class: cls, title: new Date(event.ts).toISOString() }, formatEventTime(event.ts, { withDate: this.#withDate }))
    if (name === 'message' && value === undefined) {
      // No message (an access log beside application logs): its request, else its attributes,
      // dimmed, so that the row says what it is (explore32c F4: such rows showed only a time).
      const summary = requestOf(event) ?? summarizeAttrs(event.attrs) ?? event.user_agent ?? null
      return el('td', { class: cls + ' x-summary', title: summary !== null && summary.length > 40 ? summary.slice(0, 2000) : null }, summary ?? '')
    }
    if (value === undefined) return el('td', { class: cls })
    if (name === 'level') return el('td', { class: cls }, levelBadge(value))
    if (name === 'status') return el('td', { class: cls }, el('span', { class: `status s${statusClass(value)}` }, String(value)))
    if (name === 'rt' && typeof value === 'number') return el('td', { class: cls + ' num' }, formatSeconds(value))
    if (name === 'bytes' && typeof value === 'number') return el('td', { class: cls + ' num' }, formatBytes(value))
    const text = valueText(value)
    return el('td', { class: cls, title: text.length > 40 ? text.slice(0, 2000) : null }, text)
  }

  /** @param {SluiceEvent} event */
  #detail (event) {
    /** @type {Array<[string, unknown]>} */
    const columns = []
    for (const name of eventColumns) {
      const value = fieldValue(event, name)
      if (value !== undefined && name !== 'message') columns.push([name, value])
    }
    const attrs = flatAttrs(event)
    const copy = el('button', { type: 'button', class: 'btn btn-small' }, 'Copy JSON')
    copy.addEventListener('click', () => copyText(JSON.stringify(event, null, 2)).then(() => { copy.textContent = 'Copied' }, () => {}))
    return el('tr', { class: 'x-detail' }, el('td', { colspan: this.#columns.length },
      el('div', { class: 'x-detail-body' },
        el('div', { class: 'x-detail-actions' },
          el('button', { type: 'button', class: 'btn btn-small x-show-context', disabled: !event.id, onclick: () => this.#handlers.onContext(event) }, 'Show context'),
          copy,
          el('span', { class: 'muted small' }, event.id ? `id ${event.id}` : '')),
        // The message filters as the fields do (explore32c F9: it had no + and −).
        event.message == null ? null : el('div', { class: 'x-message-block', dataset: { field: 'message' } },
          el('pre', { class: 'code wrap x-message' }, event.message), this.#actions('message', event.message)),
        el('dl', { class: 'x-kv' }, columns.map(([name, value]) => this.#pair(name, value, name === 'ts' ? `${formatEventTime(event.ts, { withDate: true })} · ${event.ts}` : null))),
        el('h3', {}, 'Attributes'),
        attrs.length === 0 ? el('p', { class: 'muted' }, 'None') : el('dl', { class: 'x-kv' }, attrs.map(([name, value]) => this.#pair(name, value, null))))))
  }

  /**
   * @param {string} name
   * @param {unknown} value
   * @param {string | null} shown the value as shown, when not its text
   */
  #pair (name, value, shown) {
    const text = valueText(value)
    return el('div', { class: 'x-pair', dataset: { field: name } },
      el('dt', {}, name),
      el('dd', {},
        el('span', { class: 'x-pair-value' }, shown ?? text),
        name === 'ts' ? null : this.#actions(name, text)))
  }

  /**
   * A value's filter for (+), exclude (−) and column buttons; none when the text a filter would
   * hold (its first line: a stack trace is filtered for by it) passes 1,000 characters.
   * @param {string} name
   * @param {string} text
   */
  #actions (name, text) {
    const line = text.includes('\n') ? text.slice(0, text.indexOf('\n')) : text
    if (line.length > 1000) return null
    return el('span', { class: 'x-pair-actions' },
      el('button', { type: 'button', class: 'x-icon x-for', title: `Filter for ${name}:${text}`, onclick: () => this.#handlers.onFilter(name, text, false) }, '+'),
      el('button', { type: 'button', class: 'x-icon x-against', title: `Exclude ${name}:${text}`, onclick: () => this.#handlers.onFilter(name, text, true) }, '−'),
      el('button', { type: 'button', class: 'x-icon x-col', 'aria-pressed': String(this.#columns.includes(name)), title: `Show ${name} as a column`, onclick: () => this.#handlers.onColumn(name) }, 'col'))
  }
}

/** The least width of a column, px: the fixed ones as app.css sets them, the message a line's start. */
const minColumnPx = /** @type {Readonly<Record<string, number>>} */ ({ ts: 112, level: 78, status: 64, method: 70, rt: 84, bytes: 84, message: 280 })
/** The least width of any other column, px: a host name, a service, an id's first characters. */
const otherColumnPx = 120

/** @param {string} name a field name as a CSS class part */
function cssName (name) {
  return name.replace(/[^a-zA-Z0-9_-]/g, '_')
}

/**
 * An access log's request as a line (`GET /api/orders 502 web-1`), or null without method, path
 * and status.
 * @param {SluiceEvent} event
 * @returns {string | null}
 */
function requestOf (event) {
  const parts = [event.method, event.path, event.status].filter((part) => part != null)
  if (parts.length === 0) return null
  if (event.host != null) parts.push(event.host)
  return parts.join(' ')
}
