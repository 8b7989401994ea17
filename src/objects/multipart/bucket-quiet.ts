/**
 * Keeps multipart completions and DeleteBucket of one bucket apart: a DeleteBucket waits until no
 * completion is writing into the bucket, and a completion that starts while a DeleteBucket runs
 * waits for it (and then finds the bucket gone). Without this a completion could stage an object
 * into a bucket that is being removed.
 */
export class BucketQuiet {
  /** Completions in flight per bucket; DeleteBucket waits for them. */
  readonly #completing = new Map<string, Set<Promise<unknown>>>();
  /** DeleteBucket in progress per bucket; completions wait for it. */
  readonly #deleting = new Map<string, Promise<unknown>>();

  /** Runs `work` (a DeleteBucket) once no completion or other deletion runs in the bucket. */
  async whileDeleting<T>(bucket: string, work: () => Promise<T>): Promise<T> {
    for (;;) {
      const busy = this.#completing.get(bucket)?.size ? [...this.#completing.get(bucket)!] : [];
      const deleting = this.#deleting.get(bucket);
      if (deleting) busy.push(deleting);
      if (busy.length === 0) break;
      await Promise.allSettled(busy);
    }
    // Claimed synchronously after the check: no completion can slip in between.
    const running = work();
    this.#deleting.set(bucket, running);
    try {
      return await running;
    } finally {
      if (this.#deleting.get(bucket) === running) this.#deleting.delete(bucket);
    }
  }

  /** Runs a completion of an upload in `bucket` once no DeleteBucket of it is in progress. */
  async whileCompleting<T>(bucket: string, start: () => Promise<T>): Promise<T> {
    // A DeleteBucket in progress goes first; this completion then finds the bucket gone.
    for (
      let deleting = this.#deleting.get(bucket);
      deleting;
      deleting = this.#deleting.get(bucket)
    ) {
      await deleting.catch(() => {});
    }
    let set = this.#completing.get(bucket);
    if (!set) this.#completing.set(bucket, set = new Set());
    const work = start();
    set.add(work);
    try {
      return await work;
    } finally {
      set.delete(work);
      if (set.size === 0) this.#completing.delete(bucket);
    }
  }
}
