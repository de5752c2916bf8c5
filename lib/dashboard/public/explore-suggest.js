// @ts-check
// Suggestions under the search box as you type: field names (from the last /fields answer) while
// a word has no colon, that field's top values after `name:`. Arrow keys move, Enter or Tab takes
// one (Tab the first when none is chosen), Esc closes; a click takes one too. Enter with no
// suggestion chosen submits the search as before. A combobox in ARIA terms (the input owns the list).
import { el, replaceChildren, show } from './dom.js'
import { formatCount } from './format.js'
import { filterTerm, quoteField, wordAt } from './explore-query.js'

/** @typedef {import('./types.js').FieldInfo} FieldInfo */
/** @typedef {{ label: string, detail: string, insert: string, done: boolean, dashed?: boolean }} Suggestion */

const maxSuggestions = 8
const keywords = ['AND', 'OR', 'NOT']

export class SearchSuggestions {
  /** @type {HTMLInputElement} */
  #input
  /** @type {HTMLElement} */
  #list
  /** @type {() => readonly FieldInfo[]} */
  #fields
  /** @type {Suggestion[]} */
  #items = []
  #active = -1
  /** @type {ReturnType<typeof wordAt> | null} */
  #word = null

  /**
   * @param {HTMLInputElement} input
   * @param {HTMLElement} list the listbox under it
   * @param {() => readonly FieldInfo[]} fields the fields known now
   */
  constructor (input, list, fields) {
    this.#input = input
    this.#list = list
    this.#fields = fields
    input.setAttribute('role', 'combobox')
    input.setAttribute('aria-autocomplete', 'list')
    input.setAttribute('aria-controls', list.id)
    input.setAttribute('aria-expanded', 'false')
    input.addEventListener('input', () => this.#suggest())
    input.addEventListener('click', () => this.#suggest())
    input.addEventListener('blur', () => this.close())
    input.addEventListener('keydown', (e) => this.#onKey(e))
    list.addEventListener('mousedown', (e) => {
      e.preventDefault() // keep the focus in the input
      const li = e.target instanceof Element ? e.target.closest('li[data-index]') : null
      if (li instanceof HTMLElement) this.#take(Number(li.dataset.index))
    })
  }

  close () {
    this.#items = []
    this.#active = -1
    show(this.#list, false)
    this.#input.setAttribute('aria-expanded', 'false')
    this.#input.removeAttribute('aria-activedescendant')
  }

  /** @param {KeyboardEvent} e */
  #onKey (e) {
    if (this.#list.hidden || this.#items.length === 0) return
    if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
      e.preventDefault()
      const n = this.#items.length
      this.#active = e.key === 'ArrowDown' ? (this.#active + 1) % n : (this.#active - 1 + n) % n
      this.#render()
    } else if ((e.key === 'Enter' && this.#active !== -1) || e.key === 'Tab') {
      // Tab completes with the chosen suggestion, or the first (explore26 F4); Enter without one
      // chosen submits the search.
      e.preventDefault()
      this.#take(this.#active === -1 ? 0 : this.#active)
    } else if (e.key === 'Escape') {
      e.preventDefault()
      e.stopPropagation()
      this.close()
    }
  }

  #suggest () {
    const caret = this.#input.selectionStart ?? this.#input.value.length
    const word = wordAt(this.#input.value, caret)
    this.#word = word
    const fields = this.#fields()
    /** @type {Suggestion[]} */
    let items = []
    if (word.field === null) {
      // A name begun in quotes (`"-da`, `"odd k`) is matched by what is inside them.
      const typed = (word.text.startsWith('"') ? word.text.slice(1) : word.text).toLowerCase()
      if (typed === '') { this.close(); return }
      // A `-` before the word is NOT, unless a name starting with it is what was typed: then it
      // belongs to the name, which is written quoted, `"-dash":` (explore34c H9).
      const dashed = word.negated && !word.text.startsWith('"') ? '-' + typed : null
      const begins = (/** @type {string} */ name) => name.toLowerCase().startsWith(typed) || (dashed !== null && name.toLowerCase().startsWith(dashed))
      items = fields
        .filter((f) => f.name !== 'ts' && f.name.toLowerCase().includes(typed))
        .sort((a, b) => Number(!begins(a.name)) - Number(!begins(b.name)))
        .map((f) => ({
          label: f.name, detail: `${f.kind} · ${formatCount(f.count, { short: true })}`, insert: quoteField(f.name) + ':', done: false,
          dashed: dashed !== null && f.name.toLowerCase().startsWith(dashed),
        }))
      for (const k of keywords) if (k.startsWith(word.text) && word.text !== k) items.push({ label: k, detail: 'keyword', insert: k + ' ', done: true })
    } else {
      const field = fields.find((f) => f.name === word.field || quoteField(f.name) === word.field)
      if (field === undefined) { this.close(); return }
      const typed = word.text.toLowerCase()
      items = field.top
        .map((v) => String(v.value))
        .filter((v) => v.toLowerCase().startsWith(typed) && v !== word.text)
        .map((v) => ({ label: v, detail: formatCount(field.top.find((t) => String(t.value) === v)?.count), insert: `${filterTerm(field.name, v, word.negated)} `, done: true }))
    }
    this.#items = items.slice(0, maxSuggestions)
    this.#active = -1
    if (this.#items.length === 0) { this.close(); return }
    this.#render()
  }

  #render () {
    replaceChildren(this.#list, this.#items.map((item, i) => el('li', {
      id: `q-suggest-${i}`, role: 'option', 'aria-selected': String(i === this.#active), dataset: { index: i },
    }, el('span', { class: 'q-suggest-label' }, item.label), el('span', { class: 'q-suggest-detail' }, item.detail))))
    show(this.#list)
    this.#input.setAttribute('aria-expanded', 'true')
    if (this.#active === -1) this.#input.removeAttribute('aria-activedescendant')
    else this.#input.setAttribute('aria-activedescendant', `q-suggest-${this.#active}`)
  }

  /** @param {number} index */
  #take (index) {
    const item = this.#items[index]
    const word = this.#word
    if (item === undefined || word === null) return
    const value = this.#input.value
    // The word's text from its start (a leading "-" stays when a value replaces the whole term,
    // and goes with a name that starts with it).
    const start = (item.done && word.field !== null && word.negated) || item.dashed === true ? word.start - 1 : word.start
    const rest = value.slice(word.end).replace(/^ /, '')
    this.#input.value = value.slice(0, start) + item.insert + rest
    const caret = start + item.insert.length
    this.#input.setSelectionRange(caret, caret)
    this.#input.dispatchEvent(new Event('input')) // clears an error line; suggests values after a field name
    if (item.done) this.close()
  }
}
