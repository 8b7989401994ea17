/** Bounds a backend call in time without cancelling it (a backend call has no abort handle). */

/**
 * `work`, or a rejection once `ms` passed (naming `what` when given); the abandoned call's late
 * rejection is swallowed.
 */
export function withTimeout<T>(work: Promise<T>, ms: number, what?: string): Promise<T> {
  work.catch(() => {});
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    const message = what ? `${what} timed out after ${ms} ms` : `no answer within ${ms / 1000} s`;
    timer = setTimeout(() => reject(new Error(message)), ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}
