/**
 * Bounds the bytes per second a background check reads from the backend, so S3 traffic keeps its
 * latency while a scrub runs. One pacer is shared by everything one run reads: after each chunk
 * the reader waits until the run's average is back under the rate (a small burst is allowed, so
 * chunks flow in their natural sizes). `bytesPerSec` 0 means unpaced. The rate may change while
 * a run goes (it is read on each chunk).
 */
export class Pacer {
  #allowedAt = 0;
  constructor(private readonly rate: () => number, private readonly signal?: AbortSignal) {}

  /** Accounts for `bytes` just read and waits as long as the rate asks. */
  async take(bytes: number): Promise<void> {
    const rate = this.rate();
    if (!(rate > 0)) return;
    const now = performance.now();
    this.#allowedAt = Math.max(this.#allowedAt, now - BURST_MS) + (bytes * 1000) / rate;
    const wait = this.#allowedAt - now;
    if (wait > 0) await sleep(wait, this.signal);
  }

  /** `body`, read at the paced rate. */
  paced(body: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
    return body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform: async (chunk, controller) => {
          await this.take(chunk.byteLength);
          controller.enqueue(chunk);
        },
      }),
    );
  }
}

/** How far behind schedule a reader may fall and then catch up at full speed. */
const BURST_MS = 250;

/** Waits `ms`; rejects with the signal's reason when it aborts first. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
