/**
 * Per-key mutual exclusion inside one process. Conditional writes check the current object and
 * commit under the key's lock, so two writers with `If-None-Match: *` cannot both succeed.
 */
export class KeyLock {
  readonly #tails = new Map<string, Promise<void>>();

  async run<T>(key: string, work: () => Promise<T>): Promise<T> {
    const previous = this.#tails.get(key) ?? Promise.resolve();
    let release!: () => void;
    const current = new Promise<void>((resolve) => release = resolve);
    const tail = previous.then(() => current);
    this.#tails.set(key, tail);
    await previous;
    try {
      return await work();
    } finally {
      release();
      // Forget the key once nobody queued behind us, so the map stays as small as the contention.
      if (this.#tails.get(key) === tail) this.#tails.delete(key);
    }
  }

  get size(): number {
    return this.#tails.size;
  }
}
