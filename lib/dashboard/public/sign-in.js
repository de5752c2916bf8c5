// @ts-check
// Signing in and out: the sign-in screen (and how to get a token), the "no streams yet" screen,
// which screen shows, and the PAT kept in sessionStorage (gone with the tab).
import { ApiError } from './api.js'
import { $, codeBlock, el, replaceChildren, show } from './dom.js'
import { setBanner } from './status-bar.js'

const tokenKey = 'sluice.token'

/** The PAT of this tab, or ''. */
export function storedToken () {
  return sessionStorage.getItem(tokenKey) ?? ''
}

/** @param {string} token a PAT the server accepted */
export function keepToken (token) {
  sessionStorage.setItem(tokenKey, token)
}

export function forgetToken () {
  sessionStorage.removeItem(tokenKey)
}

/** @param {'signin' | 'nostreams' | 'dashboard'} name */
export function showScreen (name) {
  for (const screen of ['signin', 'nostreams', 'dashboard']) show($(`screen-${screen}`), name === screen)
  show($('controls'), name === 'dashboard')
  show($('sign-out'), name !== 'signin')
  show($('conn'), name === 'dashboard')
}

/**
 * The sign-in screen, with the problem that led there.
 * @param {string | null} [problem]
 */
export function showSignIn (problem = null) {
  showScreen('signin')
  setBanner(null)
  const error = $('signin-error')
  error.textContent = problem ?? ''
  show(error, problem !== null)
  const input = $('token-input', HTMLInputElement)
  input.value = ''
  input.focus()
  $('token-curl').textContent = `curl -s -X POST ${location.origin}/api/tokens \\\n  -H "Authorization: Bearer $(cat data/admin-token)" \\\n  -H 'Content-Type: application/json' \\\n  -d '{"name":"dashboard","abilities":["streams:read","data:read"]}'`
}

/**
 * Why a token did not sign in, under the form.
 * @param {unknown} err
 */
export function showSignInError (err) {
  const error = $('signin-error')
  error.textContent = err instanceof ApiError
    ? (err.isTokenProblem ? `Sluice rejected this token: ${err.message}.` : err.message)
    : 'Cannot reach Sluice. Is the server running?'
  show(error)
}

/** The "create a stream" screen. */
export function showNoStreams () {
  showScreen('nostreams')
  const origin = location.origin
  replaceChildren($('nostreams-help'),
    // With a token of this org: data/admin-token is the first org's (explore32c F6).
    el('p', {}, 'Create one with a token of this org that may create streams (the one you signed in with, if it has streams:create), with curl:'),
    codeBlock(`export SLUICE_TOKEN='<your token>'\ncurl -s -X POST ${origin}/api/streams \\\n  -H "Authorization: Bearer $SLUICE_TOKEN" \\\n  -H 'Content-Type: application/json' -d '{"name":"web"}'`),
    el('p', {}, 'or with the CLI, on the Sluice host:'),
    codeBlock('npx sluice stream create web # with SLUICE_TOKEN set as above'))
}

/**
 * The form's submit and the sign-out button. onToken resolves once the token was tried (the
 * submit button is disabled meanwhile).
 * @param {{ onToken: (token: string) => Promise<void>, onSignOut: () => void }} handlers
 */
export function wireSignIn ({ onToken, onSignOut }) {
  $('signin-form').addEventListener('submit', (e) => {
    e.preventDefault()
    const token = $('token-input', HTMLInputElement).value.trim()
    if (!token) return
    const submit = $('signin-submit', HTMLButtonElement)
    submit.disabled = true
    onToken(token).finally(() => { submit.disabled = false })
  })
  $('sign-out').addEventListener('click', onSignOut)
}
