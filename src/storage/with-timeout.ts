/** Bounds a backend call in time without cancelling it (a backend call has no abort handle). */

/** `work`, or a rejection once `ms` passed; a late rejection of `work` is swallowed. */
export function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  work.catch(() => {});
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms / 1000} s`)), ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}
