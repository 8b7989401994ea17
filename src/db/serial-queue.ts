/**
 * Runs database calls one at a time, in arrival order. libSQL's local client keeps a pool of
 * connections, and two of them writing at once answer SQLITE_BUSY at once (an interactive
 * transaction holds its connection across awaits); a busy timeout would block the event loop
 * instead, as libSQL calls are synchronous. Each call is a synchronous native step of
 * microseconds, so one queue costs nothing measurable for a config database, and it also gives
 * a rekey its quiet moment: the rekey is one more entry, so calls queued behind it run on the new
 * client and none ever sees the old one closed.
 */
export class SerialQueue {
  #tail: Promise<void> = Promise.resolve();
  #pending = 0;

  /** Calls queued or running. */
  get pending(): number {
    return this.#pending;
  }

  run<T>(fn: () => Promise<T>): Promise<T> {
    this.#pending++;
    const result = this.#tail.then(fn).finally(() => this.#pending--);
    this.#tail = result.then(() => {}, () => {});
    return result;
  }
}
