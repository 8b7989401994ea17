/**
 * A pass-through stream that hashes (md5 for the ETag, sha256 for verification) and counts an
 * object body on its way to the backend, so both digests are known when the last byte is written
 * without a second read. Small bodies are hashed inline; once a body passes INLINE_LIMIT its
 * hashing moves to a worker thread, because md5 + sha256 on the main thread (~410 MiB/s here)
 * would otherwise cap upload throughput below what the disk and socket can do.
 */
import { createHash } from "node:crypto";
import { SvcError } from "../errors.ts";

/** Bodies up to this size are hashed on the main thread: a worker round trip costs more. */
export const INLINE_LIMIT = 1 << 20;
/** Bytes travel to the worker in reusable buffers of this size, transferred, never cloned. */
const BUFFER_BYTES = 1 << 20;
/** Buffers at the worker per body; past this the upload waits for acknowledgements. */
const MAX_IN_FLIGHT = 8;
/** Idle buffers kept for reuse across bodies. */
const POOL_LIMIT = 32;
const freeBuffers: ArrayBuffer[] = [];

export interface Digests {
  md5: string;
  sha256: string;
}

interface Reply {
  id: number;
  buffer?: ArrayBuffer;
  md5?: string;
  sha256?: string;
}

/** The shared hashing worker(s); created on first use. */
class HashPool {
  readonly #workers: Worker[] = [];
  readonly #listeners = new Map<number, (reply: Reply) => void>();
  #nextId = 1;
  #nextWorker = 0;

  #spawn(): Worker {
    const worker = new Worker(new URL("./hash-worker.ts", import.meta.url), { type: "module" });
    worker.onmessage = (event: MessageEvent<Reply>) =>
      this.#listeners.get(event.data.id)?.(event.data);
    return worker;
  }

  open(onReply: (reply: Reply) => void): { id: number; worker: Worker } {
    const size = Math.max(1, (navigator.hardwareConcurrency ?? 2) - 1);
    if (this.#workers.length < size) this.#workers.push(this.#spawn());
    const worker = this.#workers[this.#nextWorker++ % this.#workers.length];
    const id = this.#nextId++;
    this.#listeners.set(id, onReply);
    return { id, worker };
  }

  close(id: number): void {
    this.#listeners.delete(id);
  }

  /** Ends the workers (tests, shutdown). */
  terminate(): void {
    for (const worker of this.#workers.splice(0)) worker.terminate();
  }
}

const pool = new HashPool();

export function terminateHashWorkers(): void {
  pool.terminate();
}

export class BodyDigest {
  #bytes = 0;
  /** Chunks seen while the body is still small enough to hash inline. */
  #held: Uint8Array[] = [];
  #remote: { id: number; worker: Worker } | undefined;
  /** The buffer being filled for the worker, and how much of it is filled. */
  #fill: Uint8Array | undefined;
  #filled = 0;
  #inFlight = 0;
  #drained: (() => void) | undefined;
  #digest: ((d: Digests) => void) | undefined;
  #done: Digests | undefined;
  readonly #withMd5: boolean;
  readonly transform: TransformStream<Uint8Array, Uint8Array>;

  /**
   * @param maxBytes the body errors with EntityTooLarge once it passes this many bytes.
   * @param options.md5 false skips the md5 (reported as ""), for bodies whose ETag comes from
   *   elsewhere: md5 is the slowest of the two hashes.
   */
  constructor(maxBytes: number, options: { md5?: boolean } = {}) {
    this.#withMd5 = options.md5 ?? true;
    this.transform = new TransformStream({
      transform: async (chunk, controller) => {
        this.#bytes += chunk.byteLength;
        if (this.#bytes > maxBytes) {
          this.#release();
          controller.error(tooLarge(maxBytes));
          return;
        }
        if (this.#remote === undefined && this.#bytes <= INLINE_LIMIT) this.#held.push(chunk);
        else {
          if (this.#remote === undefined) await this.#goRemote();
          await this.#feed(chunk);
        }
        controller.enqueue(chunk);
      },
    });
  }

  get bytes(): number {
    return this.#bytes;
  }

  async #goRemote(): Promise<void> {
    this.#remote = pool.open((reply) => {
      if (reply.buffer !== undefined) {
        if (freeBuffers.length < POOL_LIMIT) freeBuffers.push(reply.buffer);
        this.#inFlight--;
        if (this.#inFlight <= MAX_IN_FLIGHT / 2) this.#drained?.();
      } else if (reply.md5 !== undefined) this.#digest?.({ md5: reply.md5, sha256: reply.sha256! });
    });
    for (const held of this.#held.splice(0)) await this.#feed(held);
  }

  /** Copies a chunk into pooled buffers, sending each one as it fills. */
  async #feed(chunk: Uint8Array): Promise<void> {
    for (let offset = 0; offset < chunk.byteLength;) {
      this.#fill ??= new Uint8Array(freeBuffers.pop() ?? new ArrayBuffer(BUFFER_BYTES));
      const n = Math.min(BUFFER_BYTES - this.#filled, chunk.byteLength - offset);
      this.#fill.set(chunk.subarray(offset, offset + n), this.#filled);
      this.#filled += n;
      offset += n;
      if (this.#filled === BUFFER_BYTES) await this.#send();
    }
  }

  async #send(): Promise<void> {
    const buffer = this.#fill!.buffer as ArrayBuffer;
    const remote = this.#remote!;
    remote.worker.postMessage(
      { id: remote.id, buffer, length: this.#filled, md5: this.#withMd5 },
      [buffer],
    );
    this.#fill = undefined;
    this.#filled = 0;
    this.#inFlight++;
    if (this.#inFlight >= MAX_IN_FLIGHT) {
      await new Promise<void>((resolve) => this.#drained = resolve);
      this.#drained = undefined;
    }
  }

  /** Frees the worker job of a body that will not be finished. */
  #release(): void {
    if (this.#remote) {
      this.#remote.worker.postMessage({ id: this.#remote.id, abort: true });
      pool.close(this.#remote.id);
    }
  }

  /** The digests of everything that passed; call once the body is fully consumed. */
  async finish(): Promise<Digests> {
    if (this.#done) return this.#done;
    if (this.#remote === undefined) {
      const md5 = this.#withMd5 ? createHash("md5") : null, sha256 = createHash("sha256");
      for (const chunk of this.#held) {
        md5?.update(chunk);
        sha256.update(chunk);
      }
      this.#held = [];
      this.#done = { md5: md5?.digest("hex") ?? "", sha256: sha256.digest("hex") };
      return this.#done;
    }
    if (this.#filled > 0) await this.#send();
    const remote = this.#remote;
    const digest = new Promise<Digests>((resolve) => this.#digest = resolve);
    remote.worker.postMessage({ id: remote.id, end: true });
    this.#done = await digest;
    pool.close(remote.id);
    return this.#done;
  }

  /** The digests after finish(). */
  result(): Digests {
    if (!this.#done) throw new Error("BodyDigest.result() called before finish()");
    return this.#done;
  }

  /** Drops a worker job left by a body that failed part way. */
  discard(): void {
    if (!this.#done) this.#release();
  }
}

export function tooLarge(maxBytes: number): SvcError {
  return maxBytes === 0
    ? new SvcError("EntityTooLarge", "Uploads are disabled on this server (max_object_size is 0)")
    : new SvcError(
      "EntityTooLarge",
      `Your proposed upload exceeds the maximum allowed object size of ${maxBytes} bytes`,
      { MaxSizeAllowed: String(maxBytes) },
    );
}
