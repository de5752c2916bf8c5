// Counts one task's paths by their UTF-8 bytes, for the live stats of rows the line scanner read
// (lib/ingest/line-scanner.ts), whose paths are byte spans, not strings. Decoding every row's path
// and counting it in a Map<string> cost the worker about a tenth of a line's time while a stream
// had tail clients (bench/live.bench.ts); here a row costs a hash of its bytes and one compare,
// and only the paths a task reports are ever decoded.
//
// An open-addressing table over a byte arena. A worker keeps one and clears it per task (it runs
// one task at a time); sized for a task's lines (about 600), it doubles when half full.
import { Buffer } from 'node:buffer'

export class PathCounter {
  #slots = new Int32Array(2048).fill(-1) // entry index or -1
  #hashes = new Int32Array(1024)
  #offsets = new Int32Array(1024)
  #lengths = new Int32Array(1024)
  #counts = new Int32Array(1024)
  #entries = 0
  #arena = Buffer.allocUnsafeSlow(16 * 1024)
  #arenaLength = 0

  /** Forgets every path: the next task starts from nothing. */
  clear (): void {
    this.#slots.fill(-1)
    this.#entries = 0
    this.#arenaLength = 0
  }

  /** Counts the path src[start, end) once. */
  add (src: Uint8Array, start: number, end: number): void {
    // FNV-1a.
    let hash = 0x811c9dc5
    for (let i = start; i < end; i++) hash = Math.imul(hash ^ src[i], 0x01000193)
    const mask = this.#slots.length - 1
    const length = end - start
    for (let slot = hash & mask; ; slot = (slot + 1) & mask) {
      const e = this.#slots[slot]
      if (e < 0) {
        this.#insert(slot, hash, src, start, length)
        return
      }
      if (this.#hashes[e] === hash && this.#lengths[e] === length && this.#equals(e, src, start)) {
        this.#counts[e]++
        return
      }
    }
  }

  /** Distinct paths counted. */
  get size (): number {
    return this.#entries
  }

  /**
   * Up to `n` of the counted paths, decoded: every path seen more than once if they are no more
   * than n (else the n most frequent), then paths seen once in the order they came. The same
   * choice LiveStats makes for the paths it counts as strings.
   */
  frequent (n: number): Array<[string, number]> {
    const chosen: number[] = []
    for (let e = 0; e < this.#entries; e++) if (this.#counts[e] > 1) chosen.push(e)
    if (chosen.length >= n) {
      chosen.sort((a, b) => this.#counts[b] - this.#counts[a])
      chosen.length = n
    } else {
      for (let e = 0; e < this.#entries && chosen.length < n; e++) if (this.#counts[e] === 1) chosen.push(e)
    }
    return chosen.map((e) => [this.#arena.toString('utf8', this.#offsets[e], this.#offsets[e] + this.#lengths[e]), this.#counts[e]])
  }

  #equals (e: number, src: Uint8Array, start: number): boolean {
    const arena = this.#arena
    const offset = this.#offsets[e]
    for (let k = 0, length = this.#lengths[e]; k < length; k++) if (arena[offset + k] !== src[start + k]) return false
    return true
  }

  #insert (slot: number, hash: number, src: Uint8Array, start: number, length: number): void {
    if (this.#arenaLength + length > this.#arena.length) {
      const grown = Buffer.allocUnsafeSlow(Math.max(2 * this.#arena.length, this.#arenaLength + length))
      this.#arena.copy(grown, 0, 0, this.#arenaLength)
      this.#arena = grown
    }
    const e = this.#entries++
    if (e === this.#hashes.length) this.#growEntries()
    this.#hashes[e] = hash
    this.#offsets[e] = this.#arenaLength
    this.#lengths[e] = length
    this.#counts[e] = 1
    for (let k = 0; k < length; k++) this.#arena[this.#arenaLength++] = src[start + k]
    this.#slots[slot] = e
    if (2 * this.#entries > this.#slots.length) this.#rehash()
  }

  #growEntries (): void {
    const grow = (old: Int32Array<ArrayBuffer>): Int32Array<ArrayBuffer> => {
      const grown = new Int32Array(2 * old.length)
      grown.set(old)
      return grown
    }
    this.#hashes = grow(this.#hashes)
    this.#offsets = grow(this.#offsets)
    this.#lengths = grow(this.#lengths)
    this.#counts = grow(this.#counts)
  }

  #rehash (): void {
    const slots = new Int32Array(2 * this.#slots.length).fill(-1)
    const mask = slots.length - 1
    for (let e = 0; e < this.#entries; e++) {
      let slot = this.#hashes[e] & mask
      while (slots[slot] >= 0) slot = (slot + 1) & mask
      slots[slot] = e
    }
    this.#slots = slots
  }
}
