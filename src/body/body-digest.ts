/**
 * A pass-through stream that hashes (md5 for the ETag, sha256 for verification) and counts an
 * object body on its way to the backend, so both digests are known when the last byte is written
 * without a second read. Small bodies are hashed inline; once a body passes INLINE_LIMIT md5 and
 * sha256 each move off the main thread, reading the body from a ring: OpenSSL's updates run on
 * Deno's blocking threads (threaded-hash.ts), else on worker isolates (hash-pool.ts). On the main
 * thread the two (~410 MiB/s together here) would cap upload throughput below what the disk and
 * socket can do, and sha256 alone (~430 ms per 512 MiB) was ~40% of the main thread's work on a
 * large PUT. md5 on its own core is the slowest link at ~540 MiB/s.
 */
import { createHash } from "node:crypto";
import { isLent, SvcError } from "../lib/mod.ts";
import { type HashAlgorithm, RemoteHash } from "./hash-pool.ts";
import { ThreadedHash } from "./threaded-hash.ts";

export { terminateHashWorkers } from "./hash-pool.ts";

/** Bodies up to this size are hashed on the main thread: a hand-off costs more. */
export const INLINE_LIMIT = 1 << 20;

export interface Digests {
  md5: string;
  sha256: string;
}

/**
 * Where a large body is hashed: on OpenSSL's blocking threads when libcrypto loads (falling back
 * to workers when it does not), or always on worker isolates. Production uses the default;
 * tests run both paths.
 */
export type HashPlace = "threads" | "workers";

export interface BodyDigestOptions {
  /** false skips the md5 (reported as ""), for bodies whose ETag comes from elsewhere. */
  md5?: boolean;
  /** Default "threads". */
  hashOn?: HashPlace;
}

export class BodyDigest {
  #bytes = 0;
  /** Chunks seen while the body is still small enough to hash inline. */
  #held: Uint8Array[] = [];
  #remote: ThreadedHash | RemoteHash | undefined;
  #done: Digests | undefined;
  readonly #withMd5: boolean;
  readonly #onThreads: boolean;
  readonly transform: TransformStream<Uint8Array, Uint8Array>;

  /**
   * @param maxBytes the body errors with EntityTooLarge once it passes this many bytes.
   * @param options.md5 false skips the md5 (reported as ""), for bodies whose ETag comes from
   *   elsewhere: md5 is the slowest of the two hashes.
   * @param options.hashOn where a body past INLINE_LIMIT is hashed (HashPlace).
   */
  constructor(maxBytes: number, options: BodyDigestOptions = {}) {
    this.#withMd5 = options.md5 ?? true;
    this.#onThreads = (options.hashOn ?? "threads") === "threads";
    this.transform = new TransformStream({
      transform: async (chunk, controller) => {
        this.#bytes += chunk.byteLength;
        if (this.#bytes > maxBytes) {
          this.discard();
          controller.error(tooLarge(maxBytes));
          return;
        }
        if (this.#remote === undefined && this.#bytes <= INLINE_LIMIT) {
          // Held past this turn: a lent read buffer is overwritten once the writer recycles it.
          this.#held.push(isLent(chunk) ? chunk.slice() : chunk);
        } else {
          if (this.#remote === undefined) {
            // md5 and sha256 each on a thread of their own, reading the same ring: the main
            // thread keeps only the socket, the copy into the ring and the disk.
            const algorithms: HashAlgorithm[] = this.#withMd5 ? ["md5", "sha256"] : ["sha256"];
            this.#remote = (this.#onThreads && ThreadedHash.open(algorithms)) ||
              new RemoteHash(algorithms);
            for (const held of this.#held.splice(0)) await this.#hashLarge(held);
          }
          await this.#hashLarge(chunk);
        }
        controller.enqueue(chunk);
      },
    });
  }

  get bytes(): number {
    return this.#bytes;
  }

  async #hashLarge(chunk: Uint8Array): Promise<void> {
    await this.#remote!.write(chunk);
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
    const digests = await this.#remote.finish();
    this.#done = { md5: digests.md5 ?? "", sha256: digests.sha256! };
    return this.#done;
  }

  /** The digests after finish(). */
  result(): Digests {
    if (!this.#done) throw new Error("BodyDigest.result() called before finish()");
    return this.#done;
  }

  /** Drops the off-thread job of a body that failed part way. */
  discard(): void {
    if (!this.#done) this.#remote?.abort();
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
