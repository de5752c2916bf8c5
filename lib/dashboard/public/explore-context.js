// @ts-check
// Explore's context view: the lines just before and after one event from the same host and
// service (/events/{id}/context, docs/api.md section 7.7), in time order, the event highlighted,
// "more before" and "more after" reading further each way. A panel over the page; Esc or Close
// closes it. Its rows open like the events list's, so a neighbour's value can be filtered on.
import { $, el, replaceChildren, show } from './dom.js'
import { ExploreTable } from './explore-table.js'
import { formatCount } from './format.js'

/** @typedef {import('./types.js').SluiceEvent} SluiceEvent */
/** @typedef {import('./types.js').ContextAnswer} ContextAnswer */
/** @typedef {import('./explore-table.js').TableHandlers} TableHandlers */

/** Lines each way at first, and how many more a "more" click reads. */
const contextStep = 20

/**
 * @typedef {object} ContextHost
 * @property {(id: string, before: number, after: number, signal: AbortSignal) => Promise<ContextAnswer>} load
 * @property {(err: unknown) => void} onError
 * @property {() => void} onClose
 * @property {(name: string, value: string, exclude: boolean) => void} onFilter
 */

export class ContextView {
  /** @type {HTMLElement} */
  #root
  /** @type {ContextHost} */
  #host
  /** @type {ExploreTable} */
  #table
  /** @type {string | null} */
  #id = null
  #before = contextStep
  #after = contextStep
  /** The last read had fewer events after than asked: "more after" then reads again for newer ones. */
  #atNewest = false
  /** @type {AbortController | null} */
  #loading = null

  /**
   * @param {HTMLElement} root the panel (index.html #x-context)
   * @param {ContextHost} host
   */
  constructor (root, host) {
    this.#root = root
    this.#host = host
    this.#table = new ExploreTable($('x-context-table', HTMLTableElement), {
      onFilter: (name, value, exclude) => host.onFilter(name, value, exclude),
      onContext: (event) => { if (event.id) void this.open(event.id, this.#table.columns) },
      onColumn: () => {},
      onOpen: () => {},
    })
    $('x-context-close').addEventListener('click', () => this.close())
    $('x-more-before').addEventListener('click', () => { this.#before += contextStep; void this.#load('before') })
    $('x-more-after').addEventListener('click', () => {
      if (!this.#atNewest) this.#after += contextStep
      void this.#load('after')
    })
  }

  get isOpen () { return !this.#root.hidden }

  /**
   * Shows the context of the event with this id.
   * @param {string} id
   * @param {string[]} columns the events list's columns
   */
  async open (id, columns) {
    this.#id = id
    this.#before = contextStep
    this.#after = contextStep
    this.#table.reset(columns, { withDate: true })
    replaceChildren($('x-context-title'), 'Context')
    $('x-context-sub').textContent = 'Loading…'
    show(this.#root)
    $('x-context-close').focus()
    await this.#load('event')
  }

  /** Closes it; false when it was not open. */
  close () {
    if (this.#root.hidden) return false
    this.#loading?.abort()
    this.#id = null
    show(this.#root, false)
    this.#host.onClose()
    return true
  }

  /** @param {'event' | 'before' | 'after'} keep which row to keep in view */
  async #load (keep) {
    const id = this.#id
    if (id === null) return
    this.#loading?.abort()
    const controller = new AbortController()
    this.#loading = controller
    /** @type {ContextAnswer} */
    let answer
    try {
      answer = await this.#host.load(id, this.#before, this.#after, controller.signal)
    } catch (err) {
      if (controller.signal.aborted) return
      $('x-context-sub').textContent = 'Could not load the context.'
      this.#host.onError(err)
      return
    }
    if (controller.signal.aborted || this.#id !== id) return
    const { before, event, after } = answer
    const where = [event.host == null ? 'no host' : `host ${event.host}`, event.service == null ? 'no service' : `service ${event.service}`]
    replaceChildren($('x-context-title'), 'Context: ', el('span', { class: 'x-context-where' }, where.join(' · ')))
    $('x-context-sub').textContent = `${formatCount(before.length)} before · ${formatCount(after.length)} after, same host and service`
    $('x-more-before', HTMLButtonElement).disabled = before.length < this.#before
    // Fewer after than asked is the newest event so far, not the end: events keep arriving
    // (explore32c F10), so the button stays and reads again.
    this.#atNewest = after.length < this.#after
    $('x-more-after').textContent = this.#atNewest ? 'Check for newer' : 'More after'
    this.#table.reset(this.#table.columns, { withDate: true })
    this.#table.append([...before, event, ...after])
    const row = this.#table.rowById(id)
    row?.classList.add('x-focus')
    const anchor = keep === 'before' ? this.#table.rowById(before[0]?.id ?? id) : keep === 'after' ? this.#table.rowById(after.at(-1)?.id ?? id) : row
    anchor?.scrollIntoView({ block: keep === 'event' ? 'center' : 'nearest' })
  }
}
