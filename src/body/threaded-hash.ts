/**
 * A large body's md5 and sha256 on Deno's blocking threads (nonblocking OpenSSL calls), side by
 * side and beside the main thread, which keeps only the socket, one copy and the disk. The body is
 * copied once into a ring of slots (slot-ring.ts) that every hash reads in place (md5, ~660 MiB
 * per CPU second here, is the slowest).
 *
 * This replaced worker isolates (hash-pool.ts, still used where libcrypto is missing): starting
 * the two took ~110 ms of the main thread on the first large body, which every concurrent request
 * waited out, and ~50 MB of memory for as long as the process lived.
 */
import {
  type BackgroundHasher,
  createBackgroundHasher,
  type HashAlgorithm,
} from "../native/mod.ts";
import { SlotRing } from "./slot-ring.ts";

const SLOT_BYTES = 2 << 20;
const SLOTS = 8;
/** Idle rings kept for the next bodies. */
const RING_POOL_LIMIT = 4;
const freeRings: Uint8Array<ArrayBuffer>[] = [];

/** One hash of the job: the next slot it has not hashed, and whether an update is running. */
interface Lane {
  hasher: BackgroundHasher;
  algorithm: HashAlgorithm;
  next: number;
  running: Promise<void> | null;
}

export class ThreadedHash extends SlotRing {
  readonly #lanes: Lane[];
  /** Bytes in the last slot handed on (less than a slot only for the body's end). */
  #lastLength = SLOT_BYTES;

  private constructor(hashes: [HashAlgorithm, BackgroundHasher][]) {
    super(freeRings.pop() ?? new Uint8Array(SLOTS * SLOT_BYTES), SLOTS, SLOT_BYTES);
    this.#lanes = hashes.map(([algorithm, hasher]) => ({
      algorithm,
      hasher,
      next: 0,
      running: null,
    }));
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

  protected busySlots(): number {
    let slowest = Infinity;
    for (const lane of this.#lanes) slowest = Math.min(slowest, lane.next);
    return this.sent - slowest;
  }

  protected handOn(_index: number, length: number): void {
    this.#lastLength = length;
    for (const lane of this.#lanes) if (!lane.running) this.#run(lane);
  }

  /**
   * Hashes every slot the lane has not hashed yet, up to the ring's end, in one update: an update
   * of one slot per call left the hashing thread idle while each result found the main thread
   * and the next call was made (md5 alone then took 1.3 s per 512 MiB instead of 1.1).
   */
  #run(lane: Lane): void {
    const first = lane.next;
    const slot = first % SLOTS;
    const count = Math.min(this.sent - first, SLOTS - slot);
    if (count <= 0 || this.failed || this.closed) return;
    const length = (count - 1) * SLOT_BYTES +
      (first + count === this.sent ? this.#lastLength : SLOT_BYTES);
    const bytes = this.bytes.subarray(slot * SLOT_BYTES, slot * SLOT_BYTES + length);
    lane.running = lane.hasher.update(bytes).then(
      () => {
        lane.next = first + count;
        lane.running = null;
        this.#run(lane);
      },
      (err) => {
        lane.running = null;
        this.failed ??= err;
      },
    ).finally(() => this.wake());
  }

  /** Hex digests per algorithm, once every byte written is hashed. */
  async finish(): Promise<Partial<Record<HashAlgorithm, string>>> {
    if (this.closed) throw new Error("The body hash was already finished");
    this.flush();
    await this.waitUntil(() => this.busySlots() === 0);
    await this.#settled();
    this.closed = true;
    if (this.failed) {
      this.#release();
      throw this.failed;
    }
    const digests: Partial<Record<HashAlgorithm, string>> = {};
    for (const lane of this.#lanes) digests[lane.algorithm] = lane.hasher.hex();
    if (freeRings.length < RING_POOL_LIMIT) freeRings.push(this.bytes as Uint8Array<ArrayBuffer>);
    return digests;
  }

  /** Forgets a body that will not be finished; its hashes are freed once their updates end. */
  abort(): void {
    if (this.closed) return;
    this.closed = true;
    this.wake();
    // An update still running reads the ring and its hash state: both stay until it ends.
    void this.#settled().then(() => this.#release());
  }

  async #settled(): Promise<void> {
    while (this.#lanes.some((lane) => lane.running)) {
      await Promise.all(this.#lanes.map((lane) => lane.running));
    }
  }

  #release(): void {
    for (const lane of this.#lanes) lane.hasher.free();
  }
}
