// Lint (`npm run lint`, the first step of `npm test`): neostandard, the standard style as fastify
// and pino use it, with its TypeScript support for the erasable-TypeScript sources Node runs
// directly. The code already follows it: no semicolons, a space before function parentheses.
import { createRequire, registerHooks } from 'node:module'

// typescript-eslint needs TypeScript's JavaScript API, which TypeScript 7 (the native compiler
// `npm run typecheck` uses) does not have; npm gave typescript-eslint a TypeScript 6 of its own,
// but its hoisted helper ts-api-utils finds the top-level 7. Point that one import at the 6.
const fromNeostandard = createRequire(createRequire(import.meta.url).resolve('neostandard'))
const fromEstree = createRequire(createRequire(fromNeostandard.resolve('typescript-eslint')).resolve('@typescript-eslint/typescript-estree'))
const typescriptForLint = fromEstree.resolve('typescript')
registerHooks({
  resolve (specifier, context, nextResolve) {
    if (specifier === 'typescript' && context.parentURL?.includes('/ts-api-utils/')) return nextResolve(typescriptForLint, context)
    return nextResolve(specifier, context)
  },
})
const { default: neostandard } = await import('neostandard')

const globals = fromNeostandard('globals')

export default [
  ...neostandard({
    ts: true,
    ignores: ['node_modules/**', '.tap/**', 'coverage/**'],
  }),
  {
    // Where this code base already differs from standard, on purpose.
    rules: {
      // Related properties share a line in a multi-line object ({ url, user, password, ... }).
      '@stylistic/object-property-newline': 'off',
      // A long ternary may break after its condition and keep both branches on one line.
      '@stylistic/multiline-ternary': 'off',
      // `void promise` marks a promise deliberately not awaited (its errors handled inside), also
      // as an arrow function's body (`onclick = () => void load()`).
      'no-void': 'off',
      // `while (!stopped)` loops whose flag a callback or another task sets: the rule cannot see it.
      'no-unmodified-loop-condition': 'off',
      // `new Promise((done) => ...)`, `(r) => setTimeout(r, ms)`: the name says what it is for.
      'promise/param-names': 'off',
      // A trailing comma is allowed, not required, where an argument list or literal spans lines.
      '@stylistic/comma-dangle': ['error', 'only-multiline'],
    },
  },
  {
    // The dashboard's plain JS modules run in the browser.
    files: ['lib/dashboard/public/**/*.js'],
    // uPlot is the charting library's global, loaded by its own script tag (lib/dashboard/public/index.html).
    languageOptions: { globals: { ...globals.browser, uPlot: 'readonly' } },
    rules: { 'new-cap': ['error', { newIsCapExceptions: ['uPlot'] }] },
  },
]
