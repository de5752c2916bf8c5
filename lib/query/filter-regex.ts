// The regular expressions of `q`'s `name:~"regex"` (docs/api.md section 7.2): one dialect, parsed
// here into one tree from which both engines are driven, so that they cannot read a pattern
// differently.
//
// - ClickHouse runs `match(value, re2)` (RE2: linear time; in ClickHouse `.` also matches "\n",
//   measured on 18.16). Its pattern is not the user's text but the tree written back in a form with
//   nothing left to interpret: every class as explicit code point ranges (`\s` is RE2's [\t\n\f\r ],
//   not JS's Unicode whitespace), `.` as the class of every code point, groups non-capturing.
// - The live tail runs the same tree as a Thompson NFA over code points (`matchesRegex`), not
//   through RegExp: V8's backtracking takes exponential time on `(a|a)*b` and quadratic time on
//   `.*x` over a long line, and the tail runs every pattern on every event. Simulating the
//   automaton is O(text length x states), like RE2, whatever the pattern.
// A boolean "matches somewhere" has no captures and no leftmost-first choices, so greedy and lazy
// quantifiers accept the same texts: both are accepted and written greedy.
//
// The subset (everything else is refused with the position of the character): literals (any
// character but the metacharacters \ . + * ? ( ) | [ ] { } ^ $, which take a backslash),
// `.`; classes `[abc]`, `[^a-z]` with ranges and the escapes below (a `[` or a leading `]` in a
// class must be escaped: no POSIX classes); `\d \w \s \D \W \S` (ASCII, as in RE2);
// `\t \n \r \f \v`, `\xHH`, `\x{H..}`; anchors `^` and `$` (text start and end: no multi-line
// mode); `* + ? {n} {n,} {n,m}` (counts up to 1000, RE2's limit), each optionally lazy;
// groups `( )` and `(?: )`; alternation `|`. Refused: backreferences, lookaround, named groups,
// inline flags, `\b`, `\p{..}`, `\A`, `\z`, `\Q..\E`.
import { SluiceError } from '../errors.ts'

/** Longest pattern accepted, in UTF-16 units: ample for a filter, cheap to run on every tailed event. */
export const maxRegexLength = 300
/** Most NFA states (counted repetitions expanded): bounds the tail's work per character. */
export const maxRegexStates = 3000
/** RE2 refuses a repetition count, or nested counts multiplied, above 1000. */
const maxRepeat = 1000
const maxCodePoint = 0x10FFFF

/** A set of code points as sorted, disjoint, non-adjacent inclusive ranges: [lo0, hi0, lo1, hi1, ...]. */
type Ranges = number[]

type RegexNode =
  | { readonly t: 'set', readonly ranges: Ranges }
  | { readonly t: 'bol' }
  | { readonly t: 'eol' }
  | { readonly t: 'cat', readonly items: RegexNode[] }
  | { readonly t: 'alt', readonly items: RegexNode[] }
  | { readonly t: 'rep', readonly item: RegexNode, readonly min: number, readonly max: number } // max Infinity: unbounded

/** A pattern of the accepted subset, ready for both engines. */
export interface FilterRegex {
  /** The pattern as written in q. */
  readonly source: string
  /** The same pattern for ClickHouse's match() (RE2 syntax). */
  readonly re2: string
  /** The NFA matchesRegex runs. */
  readonly program: RegexProgram
}

/** matchesRegex's state lists, one set per program, reused by every call (a call never re-enters). */
interface Scratch {
  current: Int32Array
  next: Int32Array
  onList: Int32Array
  stack: Int32Array
  generation: number
}
const scratches = new WeakMap<RegexProgram, Scratch>()

function scratchFor (prog: RegexProgram): Scratch {
  let s = scratches.get(prog)
  if (s === undefined) {
    const n = prog.length
    s = { current: new Int32Array(n), next: new Int32Array(n), onList: new Int32Array(n).fill(-1), stack: new Int32Array(2 * n + 2), generation: 0 }
    scratches.set(prog, s)
  }
  // Generations mark which states a list holds; start over long before they could wrap.
  if (s.generation > 0x3FFFFFFF) { s.onList.fill(-1); s.generation = 0 }
  return s
}

const everything: Ranges = [0, maxCodePoint]
const digit: Ranges = [0x30, 0x39]
const word: Ranges = normalize([0x30, 0x39, 0x41, 0x5A, 0x5F, 0x5F, 0x61, 0x7A])
const space: Ranges = normalize([0x09, 0x0A, 0x0C, 0x0D, 0x20, 0x20]) // RE2's \s: no \v, no Unicode spaces

function normalize (ranges: number[]): Ranges {
  const pairs: Array<[number, number]> = []
  for (let i = 0; i < ranges.length; i += 2) pairs.push([ranges[i], ranges[i + 1]])
  pairs.sort((a, b) => a[0] - b[0])
  const out: Ranges = []
  for (const [lo, hi] of pairs) {
    if (out.length > 0 && lo <= out[out.length - 1] + 1) out[out.length - 1] = Math.max(out[out.length - 1], hi)
    else out.push(lo, hi)
  }
  return out
}

function complement (ranges: Ranges): Ranges {
  const out: Ranges = []
  let next = 0
  for (let i = 0; i < ranges.length; i += 2) {
    if (ranges[i] > next) out.push(next, ranges[i] - 1)
    next = ranges[i + 1] + 1
  }
  if (next <= maxCodePoint) out.push(next, maxCodePoint)
  return out
}

const metacharacters = new Set('\\.+*?()|[]{}^$')
// Escapes of characters that are literal anyway, accepted because writers escape them by habit.
const escapableLiterals = new Set('-/"\'#&~!%,:;<=>@`_ ')
const classEscapes: Record<string, Ranges> = {
  d: digit, D: complement(digit), w: word, W: complement(word), s: space, S: complement(space),
}
const controlEscapes: Record<string, number> = { t: 9, n: 10, v: 11, f: 12, r: 13 }

/**
 * Parses `source` into the accepted subset; throws invalid_query naming the refused construct and
 * its position in q. `at` is where the pattern starts in q, or per character of `source` its
 * offset in q (a quoted pattern's escapes make the two differ).
 */
export function parseRegex (source: string, at: number | readonly number[]): FilterRegex {
  const start = typeof at === 'number' ? at : at.length > 0 ? at[0] : 0
  const positionOf = (k: number): number => typeof at === 'number' ? at + k : k < at.length ? at[k] : (at.length > 0 ? at[at.length - 1] + 1 : start)
  if (source.length === 0) fail('empty regular expression', start)
  if (source.length > maxRegexLength) fail(`regular expression is ${source.length} characters long; at most ${maxRegexLength} are allowed`, start)
  let i = 0

  function fail (message: string, position: number): never {
    throw new SluiceError('invalid_query', `${message} at position ${position}`, { details: { parameter: 'q', position } })
  }
  const here = (): number => positionOf(i)

  function codePointAt (): number {
    const cp = source.codePointAt(i) as number
    i += cp > 0xFFFF ? 2 : 1
    return cp
  }

  // After a backslash at i - 1: a single code point, or a class (d w s ...).
  function readEscape (): number | Ranges {
    const escapeAt = positionOf(i - 1)
    if (i >= source.length) fail('trailing backslash in regular expression', escapeAt)
    const ch = source[i]
    if (ch in classEscapes) { i++; return classEscapes[ch] }
    if (ch in controlEscapes) { i++; return controlEscapes[ch] }
    if (ch === 'x') {
      i++
      const braced = source[i] === '{'
      const hex = braced ? /^\{([0-9A-Fa-f]{1,6})\}/.exec(source.slice(i)) : /^[0-9A-Fa-f]{2}/.exec(source.slice(i))
      if (hex === null) fail('\\x takes two hex digits or \\x{...}', escapeAt)
      const cp = parseInt(braced ? hex[1] : hex[0], 16)
      if (cp > maxCodePoint || (cp >= 0xD800 && cp <= 0xDFFF)) fail('\\x{...} is not a character', escapeAt)
      i += hex[0].length
      return cp
    }
    if (metacharacters.has(ch) || escapableLiterals.has(ch)) { i++; return ch.charCodeAt(0) }
    return fail(`regular expression escape \\${ch} is not supported`, escapeAt)
  }

  function readClass (): Ranges {
    const open = here()
    i++ // [
    const negated = source[i] === '^'
    if (negated) i++
    const parts: number[] = []
    let first = true
    for (;;) {
      if (i >= source.length) fail('unterminated [ in regular expression', open)
      const ch = source[i]
      if (ch === ']') {
        if (first) fail('empty class or leading ] in regular expression (escape it as \\])', here())
        i++
        break
      }
      if (ch === '[') fail('[ inside a class must be escaped (no POSIX classes)', here())
      first = false
      const lowStart = here()
      const low = ch === '\\' ? (i++, readEscape()) : codePointAt()
      if (typeof low !== 'number') { parts.push(...low); continue }
      if (source[i] === '-' && i + 1 < source.length && source[i + 1] !== ']') {
        i++
        const high = source[i] === '\\' ? (i++, readEscape()) : codePointAt()
        if (typeof high !== 'number') fail('a class range must end at a character', lowStart)
        if (high < low) fail('class range out of order', lowStart)
        parts.push(low, high)
      } else {
        parts.push(low, low)
      }
    }
    const set = normalize(parts)
    const ranges = negated ? complement(set) : set
    if (ranges.length === 0) fail('class matches no character', open)
    return ranges
  }

  function parseAlternation (): RegexNode {
    const items = [parseConcatenation()]
    while (source[i] === '|') { i++; items.push(parseConcatenation()) }
    return items.length === 1 ? items[0] : { t: 'alt', items }
  }

  function parseConcatenation (): RegexNode {
    const items: RegexNode[] = []
    while (i < source.length && source[i] !== '|' && source[i] !== ')') {
      let atom = parseAtom()
      let quantified = false
      for (;;) {
        const q = readQuantifier()
        if (q === null) break
        if (quantified) fail('a repetition of a repetition must be grouped', q.position)
        if (atom.t === 'bol' || atom.t === 'eol') fail('nothing to repeat', q.position)
        atom = { t: 'rep', item: atom, min: q.min, max: q.max }
        quantified = true
      }
      items.push(atom)
    }
    return items.length === 1 ? items[0] : { t: 'cat', items }
  }

  function readQuantifier (): { min: number, max: number, position: number } | null {
    const position = here()
    const ch = source[i]
    let min: number
    let max: number
    if (ch === '*') { min = 0; max = Infinity; i++ } else if (ch === '+') { min = 1; max = Infinity; i++ } else if (ch === '?') { min = 0; max = 1; i++ } else if (ch === '{') {
      const m = /^\{(\d{1,4})(,(\d{0,4}))?\}/.exec(source.slice(i))
      if (m === null) fail('{ must start a repetition {n}, {n,} or {n,m} (escape it as \\{)', position)
      min = Number(m[1])
      max = m[2] === undefined ? min : m[3] === '' ? Infinity : Number(m[3])
      if (min > maxRepeat || (max !== Infinity && max > maxRepeat)) fail(`repetition count above ${maxRepeat}`, position)
      if (max < min) fail('repetition {n,m} with m < n', position)
      i += m[0].length
    } else {
      return null
    }
    if (source[i] === '?') i++ // lazy: the same texts match
    return { min, max, position }
  }

  function parseAtom (): RegexNode {
    const position = here()
    const ch = source[i]
    switch (ch) {
      case '(': {
        i++
        if (source[i] === '?') {
          if (source[i + 1] !== ':') fail('only (...) and (?:...) groups are supported (no lookaround, named groups or flags)', position)
          i += 2
        }
        const inner = parseAlternation()
        if (source[i] !== ')') fail('unclosed ( in regular expression', position)
        i++
        return inner
      }
      case ')': return fail('unmatched ) in regular expression', position)
      case '[': return { t: 'set', ranges: readClass() }
      case '.': i++; return { t: 'set', ranges: everything }
      case '^': i++; return { t: 'bol' }
      case '$': i++; return { t: 'eol' }
      case '\\': {
        i++
        const e = readEscape()
        return { t: 'set', ranges: typeof e === 'number' ? [e, e] : e }
      }
      case '*': case '+': case '?': case '{':
        return fail('nothing to repeat', position)
      case ']': case '}':
        return fail(`${ch} must be escaped in a regular expression`, position)
      default: {
        const cp = codePointAt()
        return { t: 'set', ranges: [cp, cp] }
      }
    }
  }

  const tree = parseAlternation()
  if (i < source.length) fail('unmatched ) in regular expression', here())
  if (repeatProduct(tree) > maxRepeat) fail(`nested repetition counts multiply to more than ${maxRepeat}`, start)
  const program = compileProgram(tree)
  if (program.length > maxRegexStates) fail(`regular expression is too large (more than ${maxRegexStates} states once repetitions are expanded)`, start)
  return { source, re2: toRe2(tree), program }
}

// The largest product of nested counted repetitions (RE2 refuses above 1000).
function repeatProduct (node: RegexNode): number {
  switch (node.t) {
    case 'cat': case 'alt': return Math.max(1, ...node.items.map(repeatProduct))
    case 'rep': {
      const count = node.max === Infinity ? Math.max(node.min, 1) : Math.max(node.max, 1)
      return count * repeatProduct(node.item)
    }
    default: return 1
  }
}

// ---- RE2 text ----

function hex (cp: number): string {
  return '\\x{' + cp.toString(16).toUpperCase() + '}'
}

function literalRe2 (cp: number): string {
  if ((cp >= 0x30 && cp <= 0x39) || (cp >= 0x41 && cp <= 0x5A) || (cp >= 0x61 && cp <= 0x7A)) return String.fromCharCode(cp)
  if (cp >= 0x20 && cp < 0x7F) return metacharacters.has(String.fromCharCode(cp)) ? '\\' + String.fromCharCode(cp) : String.fromCharCode(cp)
  return hex(cp)
}

function toRe2 (node: RegexNode): string {
  switch (node.t) {
    case 'set': {
      const r = node.ranges
      if (r.length === 2 && r[0] === r[1]) return literalRe2(r[0])
      let out = '['
      for (let k = 0; k < r.length; k += 2) out += r[k] === r[k + 1] ? hex(r[k]) : hex(r[k]) + '-' + hex(r[k + 1])
      return out + ']'
    }
    case 'bol': return '^'
    case 'eol': return '$'
    case 'cat': return node.items.map((item) => item.t === 'alt' ? `(?:${toRe2(item)})` : toRe2(item)).join('')
    case 'alt': return node.items.map(toRe2).join('|')
    case 'rep': {
      const inner = node.item.t === 'set' ? toRe2(node.item) : `(?:${toRe2(node.item)})`
      const { min, max } = node
      const op = min === 0 && max === Infinity ? '*' : min === 1 && max === Infinity ? '+' : min === 0 && max === 1 ? '?'
        : max === Infinity ? `{${min},}` : min === max ? `{${min}}` : `{${min},${max}}`
      return inner + op
    }
  }
}

// ---- the NFA ----

const opSet = 0
const opSplit = 1
const opJump = 2
const opBol = 3
const opEol = 4
const opMatch = 5

interface Instruction {
  op: number
  /** opSet: the code points it consumes. */
  ranges: Ranges
  /** opSplit, opJump: the next states. */
  x: number
  y: number
}

export type RegexProgram = readonly Instruction[]

function compileProgram (tree: RegexNode): Instruction[] {
  const prog: Instruction[] = []
  const emit = (op: number, ranges: Ranges = [], x = -1, y = -1): number => {
    prog.push({ op, ranges, x, y })
    return prog.length - 1
  }
  function gen (node: RegexNode): void {
    if (prog.length > maxRegexStates) return // refused by the caller; stop expanding
    switch (node.t) {
      case 'set': emit(opSet, node.ranges); return
      case 'bol': emit(opBol); return
      case 'eol': emit(opEol); return
      case 'cat': for (const item of node.items) gen(item); return
      case 'alt': {
        const jumps: number[] = []
        for (let k = 0; k < node.items.length - 1; k++) {
          const split = emit(opSplit)
          prog[split].x = prog.length
          gen(node.items[k])
          jumps.push(emit(opJump))
          prog[split].y = prog.length
        }
        gen(node.items[node.items.length - 1])
        for (const j of jumps) prog[j].x = prog.length
        return
      }
      case 'rep': {
        for (let k = 0; k < node.min; k++) gen(node.item)
        if (node.max === Infinity) {
          const split = emit(opSplit)
          prog[split].x = prog.length
          gen(node.item)
          emit(opJump, [], split)
          prog[split].y = prog.length
        } else {
          const splits: number[] = []
          for (let k = node.min; k < node.max; k++) {
            const split = emit(opSplit)
            prog[split].x = prog.length
            splits.push(split)
            gen(node.item)
          }
          for (const s of splits) prog[s].y = prog.length
        }
      }
    }
  }
  gen(tree)
  emit(opMatch)
  return prog
}

function inRanges (ranges: Ranges, cp: number): boolean {
  let lo = 0
  let hi = (ranges.length >> 1) - 1
  while (lo <= hi) {
    const mid = (lo + hi) >> 1
    if (cp < ranges[2 * mid]) hi = mid - 1
    else if (cp > ranges[2 * mid + 1]) lo = mid + 1
    else return true
  }
  return false
}

/**
 * Thrown by matchesRegex past the steps setRegexStepLimit allowed: the tail's matching of one
 * filter stays within its share of a task's steps even on one long line (a 1,000-state pattern
 * over a 2,000-character message took 20 ms; docs/api.md section 7.5). A step is one state on
 * the automaton's list at one character, about 10 ns here.
 */
export class RegexStepLimit extends Error {}
const stepLimitError = new RegexStepLimit('regex step limit')

/** NFA steps (states on a list, per character) matchesRegex may still take: Infinity unless set. */
let stepsLeft = Infinity

/** Sets the NFA steps the matchesRegex calls from now on may take together (Infinity: no limit). */
export function setRegexStepLimit (steps: number): void {
  stepsLeft = steps
}

/** The steps left of the last setRegexStepLimit (what the calls since took is the difference). */
export function regexStepsLeft (): number {
  return stepsLeft
}

/**
 * Whether `regex` matches somewhere in `text` (a well-formed string), as ClickHouse's match()
 * does on its UTF-8: a Thompson simulation over code points, one pass, no backtracking.
 */
export function matchesRegex (regex: FilterRegex, text: string): boolean {
  const prog = regex.program
  const scratch = scratchFor(prog)
  let { current, next } = scratch
  const { onList, stack } = scratch
  let currentCount = 0
  let nextCount = 0
  // onList[pc] === generation: pc is already on the list being built for this position.
  let generation = ++scratch.generation

  // Adds pc and its epsilon closure at `position` to the list being built; true on a match.
  const add = (list: Int32Array, count: number, pc: number, atStart: boolean, atEnd: boolean): number => {
    let top = 0
    stack[top++] = pc
    while (top > 0) {
      const p = stack[--top]
      if (onList[p] === generation) continue
      onList[p] = generation
      const ins = prog[p]
      switch (ins.op) {
        case opSet: list[count++] = p; break
        case opJump: stack[top++] = ins.x; break
        case opSplit: stack[top++] = ins.y; stack[top++] = ins.x; break
        case opBol: if (atStart) stack[top++] = p + 1; break
        case opEol: if (atEnd) stack[top++] = p + 1; break
        case opMatch: return -1
      }
    }
    return count
  }

  const length = text.length
  let i = 0
  try {
    currentCount = add(current, 0, 0, true, length === 0)
    if (currentCount < 0) return true
    for (;;) {
      if (i >= length) return false
      const cp = text.codePointAt(i) as number
      i += cp > 0xFFFF ? 2 : 1
      const atEnd = i >= length
      generation++
      nextCount = 0
      if ((stepsLeft -= currentCount + 1) < 0) throw stepLimitError
      for (let k = 0; k < currentCount; k++) {
        const ins = prog[current[k]]
        if (inRanges(ins.ranges, cp)) {
          nextCount = add(next, nextCount, current[k] + 1, false, atEnd)
          if (nextCount < 0) return true
        }
      }
      // Unanchored search: a match may also start here.
      nextCount = add(next, nextCount, 0, false, atEnd)
      if (nextCount < 0) return true
      const swap = current; current = next; next = swap
      currentCount = nextCount
    }
  } finally {
    scratch.generation = generation
  }
}
