/**
 * Replay detection: a signature seen again within `windowSeconds` on a mutating request is a
 * replay. Memory is bounded: entries expire in insertion order (the window is the same for all),
 * and past `maxEntries` the oldest are forgotten rather than new requests refused.
 */
export class ReplayCache {
  readonly #seen = new Map<string, number>();
  readonly #maxEntries: number;

  constructor(maxEntries = 100_000) {
    this.#maxEntries = maxEntries;
  }

  get size(): number {
    return this.#seen.size;
  }

  /** Whether `signature` was remembered within its window. */
  seen(signature: string, now: number): boolean {
    this.#prune(now);
    const expires = this.#seen.get(signature);
    return expires !== undefined && expires > now;
  }

  /** Remembers `signature` for `windowSeconds`; a window of 0 stores nothing. */
  remember(signature: string, now: number, windowSeconds: number): void {
    if (windowSeconds <= 0) return;
    this.#prune(now);
    this.#seen.delete(signature);
    this.#seen.set(signature, now + windowSeconds * 1000);
    while (this.#seen.size > this.#maxEntries) this.#seen.delete(this.#seen.keys().next().value!);
  }

  #prune(now: number): void {
    for (const [signature, expires] of this.#seen) {
      if (expires > now) break;
      this.#seen.delete(signature);
    }
  }
}
