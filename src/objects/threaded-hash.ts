/**
 * A large body's md5 and sha256 on Deno's blocking threads (nonblocking OpenSSL calls), side by
 * side and beside the main thread, which keeps only the socket, one copy and the disk. The body is
 * copied once into a ring of slots; each slot is handed to every hash and is reused only once
 * all of them have hashed it, so memory per body is the ring whatever the body's size, and the
 * upload runs at most a ring ahead of the slowest hash (md5, ~540 MiB/s per core here).
 *
 * This replaced worker isolates (hash-pool.ts, still used where libcrypto is missing): starting
 * the two took ~110 ms of the main thread on the first large body, which every concurrent request
 * waited out, and ~50 MB of memory for as long as the process lived.
 */
import {
  type BackgroundHasher,
  createBackgroundHasher,
  type HashAlgorithm,
} from "./native-hash.ts";

const SLOT_BYTES = 2 << 20;
const SLOTS = 4;
/** Idle rings kept for the next bodies. */
const RING_POOL_LIMIT = 4;
const freeRings: Uint8Array<ArrayBuffer>[] = [];

export class ThreadedHash {
  readonly #hashes: [HashAlgorithm, BackgroundHasher][];
  readonly #ring: Uint8Array<ArrayBuffer>;
  /** Per slot: settles once every hash is done with the slot's last contents. */
  readonly #slotFree: Promise<void>[] = [];
  /** Per hash: its last update (updates of one hash run one after the other). */
  readonly #tails: Promise<void>[];
  #sent = 0;
  #filled = 0;
  #failed: Error | undefined;
  #closed = false;

  private constructor(hashes: [HashAlgorithm, BackgroundHasher][]) {
    this.#hashes = hashes;
    this.#tails = hashes.map(() => Promise.resolve());
    this.#ring = freeRings.pop() ?? new Uint8Array(SLOTS * SLOT_BYTES);
  }

  /** A job hashing with each of `algorithms`; null when OpenSSL cannot be loaded. */
  static open(algorithms: HashAlgorithm[]): ThreadedHash | null {
    const hashes: [HashAlgorithm, BackgroundHasher][] = [];
    for (const algorithm of algorithms) {
      const hasher = createBackgroundHasher(algorithm);
      if (hasher === null) {
        for (const [, opened] of hashes) opened.free();
        return null;
      }
      hashes.push([algorithm, hasher]);
    }
    return new ThreadedHash(hashes);
  }

  /** Copies `chunk` into the ring, handing each slot on as it fills; waits while the ring is full. */
  async write(chunk: Uint8Array): Promise<void> {
    for (let offset = 0; offset < chunk.byteLength;) {
      if (this.#filled === 0) await this.#slotFree[this.#sent % SLOTS];
      if (this.#failed) throw this.#failed;
      if (this.#closed) return;
      const n = Math.min(SLOT_BYTES - this.#filled, chunk.byteLength - offset);
      const slotStart = (this.#sent % SLOTS) * SLOT_BYTES;
      this.#ring.set(chunk.subarray(offset, offset + n), slotStart + this.#filled);
      this.#filled += n;
      offset += n;
      if (this.#filled === SLOT_BYTES) this.#handOn();
    }
  }

  #handOn(): void {
    const start = (this.#sent % SLOTS) * SLOT_BYTES;
    const bytes = this.#ring.subarray(start, start + this.#filled);
    const done = this.#hashes.map(([, hasher], i) =>
      this.#tails[i] = this.#tails[i].then(() => this.#failed ? undefined : hasher.update(bytes))
        .catch((err) => void (this.#failed ??= err))
    );
    this.#slotFree[this.#sent % SLOTS] = Promise.all(done).then(() => {});
    this.#sent++;
    this.#filled = 0;
  }

  /** Hex digests per algorithm, once every byte written is hashed. */
  async finish(): Promise<Partial<Record<HashAlgorithm, string>>> {
    if (this.#closed) throw new Error("The body hash was already finished");
    if (this.#filled > 0) this.#handOn();
    await this.#settled();
    this.#closed = true;
    if (this.#failed) {
      this.#release();
      throw this.#failed;
    }
    const digests: Partial<Record<HashAlgorithm, string>> = {};
    for (const [algorithm, hasher] of this.#hashes) digests[algorithm] = hasher.hex();
    if (freeRings.length < RING_POOL_LIMIT) freeRings.push(this.#ring);
    return digests;
  }

  /** Forgets a body that will not be finished; its hashes are freed once their updates end. */
  abort(): void {
    if (this.#closed) return;
    this.#closed = true;
    // An update still running reads the ring and its hash state: both stay until it ends.
    void this.#settled().then(() => this.#release());
  }

  #settled(): Promise<unknown> {
    return Promise.all(this.#tails);
  }

  #release(): void {
    for (const [, hasher] of this.#hashes) hasher.free();
  }
}
