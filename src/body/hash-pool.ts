/**
 * Hashing large bodies off the main thread. Each algorithm of a body runs on its own worker
 * (md5 ~550 MiB/s and sha256 ~1.5 GiB/s on one core here: one after the other on one worker they
 * cap a PUT near 400 MiB/s, side by side the cap is md5's speed). The body's bytes are copied once
 * into a ring of SharedArrayBuffer slots that every worker of the job reads in place; messages
 * only name a slot, so nothing of the body is cloned or transferred per chunk, and memory per body
 * is the ring's size whatever the body's size.
 */
import type { HashAlgorithm, HashReply, HashRequest } from "./hash-worker.ts";
import { SlotRing } from "./slot-ring.ts";

export type { HashAlgorithm } from "./hash-worker.ts";

/** Bytes per ring slot: one message per slot per worker. */
export const SLOT_BYTES = 2 << 20;
/** Slots per ring: how far the upload may run ahead of the slowest hash. */
const SLOTS = 4;
/** Most hash workers ever started. */
const MAX_WORKERS = 6;
/** Idle rings kept for the next bodies. */
const RING_POOL_LIMIT = 4;
const freeRings: SharedArrayBuffer[] = [];

interface PoolWorker {
  worker: Worker;
  /** Jobs using this worker now: a new job takes the least busy ones. */
  jobs: number;
}

type Listener = (reply: HashReply | { id: number; failed: Error }, worker: PoolWorker) => void;

class HashPool {
  readonly #workers: PoolWorker[] = [];
  readonly #listeners = new Map<number, Listener>();
  #nextId = 1;

  #spawn(): PoolWorker {
    const entry: PoolWorker = {
      worker: new Worker(new URL("./hash-worker.ts", import.meta.url), { type: "module" }),
      jobs: 0,
    };
    entry.worker.onmessage = (event: MessageEvent<HashReply>) =>
      this.#listeners.get(event.data.id)?.(event.data, entry);
    // A dead worker fails the bodies it was hashing (they would otherwise wait forever); the
    // next body gets a fresh worker.
    entry.worker.onerror = (event) => {
      event.preventDefault();
      const index = this.#workers.indexOf(entry);
      if (index >= 0) this.#workers.splice(index, 1);
      const failed = new Error(`Hash worker failed: ${event.message}`);
      for (const [id, listener] of this.#listeners) listener({ id, failed }, entry);
      entry.worker.terminate();
    };
    return entry;
  }

  /** `count` distinct workers (the least busy), and a job id whose replies go to `listener`. */
  open(count: number, listener: Listener): { id: number; workers: PoolWorker[] } {
    // Two at least, so md5 and sha256 of one body run side by side even on two cores; more only
    // while every worker is busy (concurrent uploads), up to the cores left beside the main
    // thread, at most MAX_WORKERS: each worker is an isolate of ~20 MB.
    const limit = Math.max(2, Math.min(MAX_WORKERS, (navigator.hardwareConcurrency ?? 2) - 1));
    while (this.#workers.length < Math.max(2, count)) this.#workers.push(this.#spawn());
    if (this.#workers.length < limit && this.#workers.every((entry) => entry.jobs > 0)) {
      this.#workers.push(this.#spawn());
    }
    const workers = [...this.#workers].sort((a, b) => a.jobs - b.jobs).slice(0, count);
    for (const entry of workers) entry.jobs++;
    const id = this.#nextId++;
    this.#listeners.set(id, listener);
    return { id, workers };
  }

  close(id: number, workers: PoolWorker[]): void {
    if (!this.#listeners.delete(id)) return;
    for (const entry of workers) entry.jobs--;
  }

  /** Ends the workers (tests, shutdown). */
  terminate(): void {
    for (const entry of this.#workers.splice(0)) entry.worker.terminate();
  }
}

const pool = new HashPool();

export function terminateHashWorkers(): void {
  pool.terminate();
}

/** One body being hashed on workers, one algorithm per worker. */
export class RemoteHash extends SlotRing {
  readonly #id: number;
  readonly #assignments: { entry: PoolWorker; acked: number }[];
  readonly #ring: SharedArrayBuffer;
  #digests: Partial<Record<HashAlgorithm, string>> = {};
  #ended: (() => void) | undefined;

  constructor(algorithms: HashAlgorithm[]) {
    const ring = freeRings.pop() ?? new SharedArrayBuffer(SLOTS * SLOT_BYTES);
    super(new Uint8Array(ring), SLOTS, SLOT_BYTES);
    this.#ring = ring;
    const { id, workers } = pool.open(
      algorithms.length,
      (reply, entry) => this.#reply(reply, entry),
    );
    this.#id = id;
    // With fewer workers than algorithms (never with the pool's minimum of two) one worker
    // takes the rest.
    const byWorker = new Map<PoolWorker, HashAlgorithm[]>();
    algorithms.forEach((algorithm, i) => {
      const entry = workers[i % workers.length];
      byWorker.set(entry, [...(byWorker.get(entry) ?? []), algorithm]);
    });
    this.#assignments = [...byWorker.keys()].map((entry) => ({ entry, acked: 0 }));
    for (const [entry, assigned] of byWorker) {
      this.#post(entry, { id, ring: this.#ring, algorithms: assigned });
    }
  }

  #post(entry: PoolWorker, message: HashRequest): void {
    entry.worker.postMessage(message);
  }

  #reply(reply: HashReply | { id: number; failed: Error }, entry: PoolWorker): void {
    const assignment = this.#assignments.find((a) => a.entry === entry);
    if (!assignment) return;
    if ("failed" in reply) {
      this.failed ??= reply.failed;
      this.wake();
      this.#ended?.();
      return;
    }
    if (reply.digests) {
      Object.assign(this.#digests, reply.digests);
      assignment.acked = Infinity;
      if (this.#assignments.every((a) => a.acked === Infinity)) this.#ended?.();
      return;
    }
    assignment.acked++;
    this.wake();
  }

  /** Slots posted but not yet hashed by every worker of the job. */
  protected busySlots(): number {
    return this.sent - Math.min(...this.#assignments.map((a) => a.acked));
  }

  protected handOn(index: number, length: number): void {
    const offset = (index % SLOTS) * SLOT_BYTES;
    for (const { entry } of this.#assignments) this.#post(entry, { id: this.#id, offset, length });
  }

  /** Hex digests per algorithm, once every byte written is hashed. */
  async finish(): Promise<Partial<Record<HashAlgorithm, string>>> {
    this.flush();
    const ended = new Promise<void>((resolve) => this.#ended = resolve);
    for (const { entry } of this.#assignments) this.#post(entry, { id: this.#id, end: true });
    if (!this.failed) await ended;
    this.#close();
    if (this.failed) throw this.failed;
    // Every worker answered its last message, so none reads the ring any more.
    if (freeRings.length < RING_POOL_LIMIT) freeRings.push(this.#ring);
    return this.#digests;
  }

  /** Forgets a body that will not be finished (its ring is left to the garbage collector). */
  abort(): void {
    if (this.closed) return;
    for (const { entry } of this.#assignments) this.#post(entry, { id: this.#id, abort: true });
    this.#close();
    this.wake();
  }

  #close(): void {
    if (this.closed) return;
    this.closed = true;
    pool.close(this.#id, this.#assignments.map((a) => a.entry));
  }
}
