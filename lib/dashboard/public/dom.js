// @ts-check
// Building DOM nodes without innerHTML: every string becomes a text node, so data from the API can
// never turn into markup.

/** @typedef {Node | string | number | null | undefined | false | Child[]} Child */

/**
 * Attribute values of el(): strings and numbers through setAttribute, true as an empty attribute,
 * null/undefined/false skipped, `on*` functions as event listeners, `dataset` copied.
 * @typedef {Record<string, string | number | boolean | null | undefined | ((event: any) => void) | Record<string, string | number>>} Attrs
 */

/**
 * el('td', { class: 'num', title: 'x' }, 'text', childNode). Attribute values go through
 * setAttribute; `on*` keys with a function become event listeners; null/false are skipped.
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {Attrs} [attrs]
 * @param {...Child} children
 * @returns {HTMLElementTagNameMap[K]}
 */
export function el (tag, attrs = {}, ...children) {
  const node = document.createElement(tag)
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue
    if (name.startsWith('on') && typeof value === 'function') node.addEventListener(name.slice(2), value)
    else if (name === 'dataset' && typeof value === 'object') Object.assign(node.dataset, value)
    else node.setAttribute(name, value === true ? '' : String(value))
  }
  append(node, children)
  return node
}

/**
 * @param {Element | DocumentFragment} node
 * @param {Child[]} children
 */
function append (node, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue
    if (Array.isArray(child)) append(node, child)
    else node.append(child instanceof Node ? child : String(child))
  }
}

/**
 * Replaces all children of node.
 * @param {Element} node
 * @param {...Child} children
 */
export function replaceChildren (node, ...children) {
  node.replaceChildren()
  append(node, children)
}

/**
 * The element with this id, checked to be of `type` when given; a page without it is a bug, so it throws.
 * @template {HTMLElement} [T=HTMLElement]
 * @param {string} id
 * @param {{ new (): T, prototype: T }} [type]
 * @returns {T}
 */
export function $ (id, type) {
  const node = document.getElementById(id)
  if (node === null || (type !== undefined && !(node instanceof type))) throw new Error(`the page has no ${type?.name ?? 'element'} #${id}`)
  return /** @type {T} */ (node)
}

/**
 * The element matching `selector`, which the page must have.
 * @param {string} selector
 * @returns {HTMLElement}
 */
export function $$ (selector) {
  const node = document.querySelector(selector)
  if (!(node instanceof HTMLElement)) throw new Error(`the page has no ${selector}`)
  return node
}

/**
 * @param {HTMLElement} node
 * @param {boolean} [visible]
 */
export function show (node, visible = true) {
  node.hidden = !visible
}

/**
 * A copyable shell snippet: a <pre> and a Copy button.
 * @param {string} text
 */
export function codeBlock (text) {
  const pre = el('pre', { class: 'code' }, el('code', {}, text))
  const button = el('button', { type: 'button', class: 'btn btn-small copy' }, 'Copy')
  button.addEventListener('click', () => {
    copyText(text).then(() => {
      button.textContent = 'Copied'
      setTimeout(() => { button.textContent = 'Copy' }, 1500)
    }, () => { button.textContent = 'Select and copy' })
  })
  return el('div', { class: 'code-wrap' }, pre, button)
}

/**
 * Clipboard API where allowed (secure contexts), else a hidden textarea and execCommand.
 * @param {string} text
 * @returns {Promise<void>}
 */
export async function copyText (text) {
  if (navigator.clipboard && window.isSecureContext) return navigator.clipboard.writeText(text)
  const area = el('textarea', { class: 'sr-only', readonly: true })
  area.value = text
  document.body.append(area)
  area.select()
  const ok = document.execCommand('copy')
  area.remove()
  if (!ok) throw new Error('copy failed')
}

/**
 * The element an event happened on, when it is an Element (clicks can land on text nodes' parents only).
 * @param {Event} event
 * @returns {Element | null}
 */
export function targetOf (event) {
  return event.target instanceof Element ? event.target : null
}
