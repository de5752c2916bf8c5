// The assertions every fault scenario makes on a checker's result (harness.ts check()): events
// were acknowledged, none of them is missing, no duplicate contradicts its answer, nothing is
// stored of a request told "nothing stored", only 200/429/503 answers (and, unless the fault
// drops connections itself, every request answered). Each test adds what its fault promises.
import type { Test } from 'tap'
import type { CheckResult } from './harness.ts'

export interface GuaranteeOptions {
  /** Assert that no request went unanswered (false where the fault kills Sluice itself). */
  everyAnswered?: boolean
  /** Assert nothing stored of requests told "nothing stored" (false where Sluice is SIGKILLed: no answer is told). */
  nothingAfterRefusals?: boolean
}

export function assertGuarantees (t: Test, r: CheckResult, options: GuaranteeOptions = {}): void {
  t.comment(JSON.stringify(r))
  t.ok(r.acknowledged > 0, `${r.acknowledged} events acknowledged`)
  t.equal(r.missing, 0, 'no acknowledged event missing')
  t.equal(r.contradicting, 0, 'no duplicate after answers that said nothing was stored')
  if (options.nothingAfterRefusals ?? true) t.equal(r.storedAfterNothingStored, 0, 'nothing stored of requests told nothing was stored')
  t.equal(r.unexpected, 0, 'only 200, 429 and 503 answers')
  if (options.everyAnswered ?? true) t.notOk(r.answerCounts['0 dropped'], 'every request was answered')
}

/** The same guarantees as a predicate, for `npm run soak`. */
export function guaranteesHeld (r: CheckResult): boolean {
  return r.missing === 0 && r.contradicting === 0 && r.storedAfterNothingStored === 0 && r.unexpected === 0
}
