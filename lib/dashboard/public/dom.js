// Building DOM nodes without innerHTML: every string becomes a text node, so data from the API can
// never turn into markup.

/**
 * el('td', { class: 'num', title: 'x' }, 'text', childNode). Attribute values go through
 * setAttribute; `on*` keys with a function become event listeners; null/false are skipped.
 */
export function el (tag, attrs = {}, ...children) {
  const node = document.createElement(tag)
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue
    if (name.startsWith('on') && typeof value === 'function') node.addEventListener(name.slice(2), value)
    else if (name === 'dataset') Object.assign(node.dataset, value)
    else node.setAttribute(name, value === true ? '' : String(value))
  }
  append(node, children)
  return node
}

function append (node, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue
    if (Array.isArray(child)) append(node, child)
    else node.append(child instanceof Node ? child : String(child))
  }
}

/** Replaces all children of node. */
export function replaceChildren (node, ...children) {
  node.replaceChildren()
  append(node, children)
}

export const $ = (id) => document.getElementById(id)

export function show (node, visible = true) {
  node.hidden = !visible
}

/** A copyable shell snippet: a <pre> and a Copy button. */
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

/** Clipboard API where allowed (secure contexts), else a hidden textarea and execCommand. */
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
