// @ts-check
// Explore's field sidebar: the fields of the matching events from /fields (docs/api.md section
// 7.6) with the share of events that have each, and a field's top values with their counts. A
// value click filters for it, a second click (or Alt/Shift-click) excludes it; a field can be
// added as a column or chosen to group the histogram by. It renders what it is given and reports
// clicks; explore-view.js decides what to fetch. Values go into the page as text only.
import { el, replaceChildren } from './dom.js'
import { formatCount, formatCountOf, formatPercent } from './format.js'
import { excludedTerms, filterState } from './explore-query.js'
import { levelBadge } from './panels.js'
import { defaultBy } from './url-state.js'

/** @typedef {import('./types.js').FieldsAnswer} FieldsAnswer */
/** @typedef {import('./types.js').FieldInfo} FieldInfo */

/**
 * @typedef {object} SidebarHandlers
 * @property {(name: string, value: string, exclude: boolean) => void} onValue
 * @property {(name: string) => void} onColumn toggles the field as a column
 * @property {(name: string) => void} onGroup groups the histogram by it
 * @property {(term: string) => void} onDrop drops an excluding term from the search
 */

/** @typedef {{ q: string, columns: readonly string[], by: string }} SidebarContext */

/** Type marks: how a field's values read. */
const typeMarks = { string: 'abc', number: '123', boolean: 't/f' }

export class FieldSidebar {
  /** @type {HTMLElement} */
  #list
  /** @type {HTMLElement} */
  #summary
  /** @type {SidebarHandlers} */
  #handlers
  /** Fields whose values are shown; kept across updates. */
  #open = new Set(['level', 'service'])
  /** @type {FieldsAnswer | null} */
  #answer = null
  /** @type {SidebarContext} */
  #context = { q: '', columns: [], by: 'level' }

  /**
   * @param {HTMLElement} list where the fields go
   * @param {HTMLElement} summary the line above them (events counted, sampled)
   * @param {SidebarHandlers} handlers
   */
  constructor (list, summary, handlers) {
    this.#list = list
    this.#summary = summary
    this.#handlers = handlers
  }

  /** The last answer's fields (for the search suggestions). */
  get fields () { return this.#answer?.fields ?? [] }

  /**
   * @param {FieldsAnswer | null} answer null: loading or failed, nothing shown
   * @param {SidebarContext} context
   */
  update (answer, context) {
    this.#answer = answer
    this.#context = context
    this.#render()
  }

  /** @param {SidebarContext} context columns or grouping changed: the same fields, new marks */
  refresh (context) {
    this.#context = context
    this.#render()
  }

  #render () {
    const answer = this.#answer
    if (answer === null) {
      this.#summary.textContent = ''
      replaceChildren(this.#list)
      return
    }
    this.#summary.textContent = `${formatCountOf(answer.total, 'event')}${answer.sampled ? ' · counts sampled' : ''}`
    this.#summary.title = answer.sampled ? 'Counted over evenly spread slices of the range and scaled up (docs/api.md section 7.6)' : ''
    const fields = answer.fields.filter((f) => f.name !== 'ts' && f.name !== 'id')
    // Exclusions of a field no matching event has any more: listed after the fields, for the
    // click that drops them.
    const excluded = excludedTerms(this.#context.q)
    const gone = [...new Set(excluded.map((x) => x.name))].filter((name) => !fields.some((f) => f.name === name))
    if (fields.length === 0 && gone.length === 0) {
      replaceChildren(this.#list, el('li', { class: 'x-none' }, 'No fields: no events match.'))
      return
    }
    replaceChildren(this.#list, [
      ...fields.map((field) => this.#field(field, answer.total)),
      ...gone.map((name) => el('li', { class: 'x-field', dataset: { field: name } },
        el('div', { class: 'x-field-head' }, el('span', { class: 'x-field-name', title: `No matching event has ${name}` }, name)),
        el('ul', { class: 'x-values' }, this.#excluded(name)))),
    ])
  }

  /**
   * The search's exclusions of field `name`, each a click away from being dropped.
   * @param {string} name
   * @param {readonly string[]} [shown] values listed already (their own click drops them)
   */
  #excluded (name, shown = []) {
    return excludedTerms(this.#context.q).filter((x) => x.name === name && !shown.includes(x.label)).map((x) => el('li', {},
      el('button', {
        type: 'button', class: 'x-value x-against', dataset: { value: x.label },
        title: `Click to stop excluding ${x.term.replace(/^(NOT |-)/, '')}`,
        onclick: () => this.#handlers.onDrop(x.term),
      }, el('span', { class: 'x-bar', 'aria-hidden': 'true' }), el('span', { class: 'x-value-text' }, x.label), el('span', { class: 'x-count' }, '0'))))
  }

  /**
   * @param {FieldInfo} field
   * @param {number} total
   */
  #field (field, total) {
    const { name } = field
    const open = this.#open.has(name)
    const isColumn = this.#context.columns.includes(name)
    const isGroup = this.#context.by === name
    // Values the search excludes are in no matching event: listed after the top ones (count 0), so
    // that a click can stop excluding them.
    const values = el('ul', { class: 'x-values', hidden: !open },
      ...field.top.map((v) => this.#value(field, v, field.count)), ...this.#excluded(name, field.top.map((v) => String(v.value))))
    const toggle = el('button', {
      type: 'button', class: 'x-field-name', 'aria-expanded': String(open), title: field.kind === 'attribute' ? `Attribute ${name}` : `Column ${name}`,
    }, name)
    toggle.addEventListener('click', () => {
      if (this.#open.has(name)) this.#open.delete(name)
      else this.#open.add(name)
      const nowOpen = this.#open.has(name)
      toggle.setAttribute('aria-expanded', String(nowOpen))
      values.hidden = !nowOpen
    })
    return el('li', { class: 'x-field', dataset: { field: name } },
      el('div', { class: 'x-field-head' },
        toggle,
        el('span', { class: 'x-type', title: field.type }, typeMarks[field.type] ?? field.type),
        el('span', { class: 'x-share', title: `${formatCount(field.count)} of ${formatCountOf(total, 'event')}` }, shareText(field.count, total)),
        el('button', {
          type: 'button', class: 'x-icon x-col', 'aria-pressed': String(isColumn),
          title: isColumn ? `Remove the ${name} column` : `Add ${name} as a column`,
          onclick: () => this.#handlers.onColumn(name),
        }, 'col'),
        el('button', {
          type: 'button', class: 'x-icon x-group', 'aria-pressed': String(isGroup),
          title: isGroup ? (name === defaultBy ? `The histogram is grouped by ${name}` : `Grouped by ${name}: group by ${defaultBy} again`) : `Group the histogram by ${name}`,
          onclick: () => this.#handlers.onGroup(name),
        }, 'group')),
      values)
  }

  /**
   * @param {FieldInfo} field
   * @param {{ value: string | number, count: number }} entry
   * @param {number} fieldCount
   */
  #value (field, entry, fieldCount) {
    const text = String(entry.value)
    const state = filterState(this.#context.q, field.name, text)
    const bar = el('span', { class: 'x-bar', 'aria-hidden': 'true' })
    bar.style.width = `${Math.max(1, Math.round((100 * entry.count) / Math.max(1, fieldCount)))}%`
    const label = field.name === 'level' ? levelBadge(text) : text === '' ? el('span', { class: 'none' }, '(empty)') : text
    return el('li', {},
      el('button', {
        type: 'button',
        class: 'x-value' + (state ? ` x-${state}` : ''),
        dataset: { value: text },
        title: state === 'for' ? `Click to exclude ${field.name}:${text}` : state === 'against' ? `Click to stop excluding ${field.name}:${text}` : `Click to filter for ${field.name}:${text}; Alt-click to exclude it`,
        onclick: (/** @type {MouseEvent} */ e) => this.#handlers.onValue(field.name, text, e.altKey || e.shiftKey),
      }, bar, el('span', { class: 'x-value-text' }, label), el('span', { class: 'x-count' }, formatCount(entry.count, { short: entry.count >= 1e5 }))))
  }
}

/**
 * The share of events holding a field, never rounded to 100% when some lack it (nor to 0% when
 * some hold it).
 * @param {number} count
 * @param {number} total
 */
function shareText (count, total) {
  if (total <= 0) return formatPercent(0)
  const share = count / total
  if (share < 1 && share > 0.99) return '>99%'
  return formatPercent(share)
}
