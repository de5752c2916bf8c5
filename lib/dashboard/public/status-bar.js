// @ts-check
// What the page says about itself: the banner (failures, retries), the connection badge, the
// search box's error line, the dimmed panels while a view loads, and the retry backoff.
import { $, el, replaceChildren, show } from './dom.js'

/**
 * The banner, or none (text null); action adds a button.
 * @param {string | null} text
 * @param {'error' | 'warn'} [kind]
 * @param {{ label: string, run: () => void } | null} [action]
 */
export function setBanner (text, kind = 'error', action = null) {
  const banner = $('banner')
  if (text === null) { show(banner, false); return }
  banner.dataset.kind = kind
  replaceChildren(banner, el('span', {}, text),
    action ? el('button', { type: 'button', class: 'btn btn-small', onclick: action.run }, action.label) : null)
  show(banner)
}

/** @typedef {'live' | 'paused' | 'connecting' | 'reconnecting' | 'history'} ConnState */

/** @type {Record<ConnState, string>} */
const connText = { live: 'Live', paused: 'Paused', connecting: 'Connecting…', reconnecting: 'Reconnecting…', history: '' }

/**
 * The connection badge; text replaces the state's usual words.
 * @param {ConnState} conn
 * @param {string} [text]
 */
export function setConn (conn, text) {
  $('conn').dataset.state = conn
  $('conn-text').textContent = text ?? connText[conn]
  show($('refresh'), conn === 'history')
}

/**
 * The search's error line, or none. With a position (the 400's `position`), the query is shown
 * under it with the character where it goes wrong marked, and the caret is put there.
 * @param {string | null} message
 * @param {number | null} [position] UTF-16 offset into the search box's text
 */
export function showQueryError (message, position = null) {
  const q = $('q', HTMLInputElement)
  const line = $('q-error')
  if (message !== null && position !== null && position >= 0 && position <= q.value.length) {
    const text = q.value
    const end = position < text.length ? position + 1 : position
    replaceChildren(line, el('span', {}, message), el('code', { class: 'q-where', 'aria-hidden': 'true' },
      text.slice(0, position), el('mark', {}, text.slice(position, end) || ' '), text.slice(end)))
    q.setSelectionRange(position, end)
  } else {
    line.textContent = message ?? ''
  }
  show(line, message !== null)
  q.classList.toggle('invalid', message !== null)
  if (message === null) q.removeAttribute('aria-invalid')
  else q.setAttribute('aria-invalid', 'true')
}

/**
 * Dims the panels while a new view loads, so old numbers are not read as new ones.
 * @param {boolean} loading
 */
export function setLoading (loading) {
  $('screen-dashboard').classList.toggle('loading', loading)
}

/**
 * ms before retry number `failures`: Retry-After when the server gave one, else 1, 2, 4, 8, 15 s
 * with ±20% jitter.
 * @param {number} failures
 * @param {number | null | undefined} retryAfterS
 */
export function retryDelayMs (failures, retryAfterS) {
  if (retryAfterS) return retryAfterS * 1000
  return Math.min(15_000, 1000 * 2 ** Math.min(failures - 1, 4)) * (0.8 + Math.random() * 0.4)
}
