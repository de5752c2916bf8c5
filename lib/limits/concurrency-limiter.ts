// Per-org count of ingest requests in progress. acquire() either takes a slot or refuses; the
// caller releases the slot exactly once when the request has been answered.

export class ConcurrencyLimiter {
  #active = new Map<string, number>()

  tryAcquire (key: string, limit: number): boolean {
    const n = this.#active.get(key) ?? 0
    if (n >= limit) return false
    this.#active.set(key, n + 1)
    return true
  }

  release (key: string): void {
    const n = (this.#active.get(key) ?? 0) - 1
    if (n <= 0) this.#active.delete(key)
    else this.#active.set(key, n)
  }

  active (key: string): number {
    return this.#active.get(key) ?? 0
  }
}
