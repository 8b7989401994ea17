/**
 * The memory of replay detection: one entry per header-signed mutating request, keyed by its
 * signature, from the moment it is first seen until its signature could no longer verify (or the
 * configured window ends, whichever is first). An entry is either in flight (a repeat waits for
 * it) or settled with what a byte-identical repeat gets: the first answer, or nothing (refused).
 *
 * Memory is bounded twice, and neither bound ever forgets a live signature (forgetting would let
 * a replay execute again):
 * - `maxEntries`: past it, a new mutating request is refused with 503 SlowDown until entries
 *   expire. scripts/bench/replay-memory.ts measures the cost of an entry.
 * - `maxAnswerBytes` (all kept answer bodies together) and `maxBodyBytes` (one answer): an answer
 *   past them is not kept, so its repeat is refused with 400 as if it were not idempotent.
 */
import { SvcError } from "../../lib/mod.ts";

/** What a repeat is answered with: the first answer's status, headers and (small) body. */
export interface ReplayAnswer {
  status: number;
  /** `name\nvalue\nname\nvalue…` (no header holds a newline): one string per answer. */
  headers: string;
  body: Uint8Array | null;
}

/**
 * One remembered signature, kept small (scripts/bench/replay-memory.ts): the answer's fields
 * live on the entry itself, and `expires` is whole seconds after the store's first claim, a small
 * integer V8 keeps unboxed.
 */
export class ReplayEntry {
  expires: number;
  /** Set while the first execution runs; resolves once it settled (or was forgotten). */
  inFlight: Promise<void> | null;
  /** 0 while no answer is kept: a repeat is refused (not idempotent, or too large to keep). */
  status = 0;
  headers = "";
  body: Uint8Array | null = null;
  /** Unpinned small bodies: the digest a repeat's body must have to be answered. */
  bodyDigest: string | null = null;

  constructor(expires: number, inFlight: Promise<void>) {
    this.expires = expires;
    this.inFlight = inFlight;
  }

  /** What a repeat gets, or null when it is refused. */
  get answer(): ReplayAnswer | null {
    return this.status === 0
      ? null
      : { status: this.status, headers: this.headers, body: this.body };
  }
}

export interface ReplayLimits {
  maxEntries: number;
  maxBodyBytes: number;
  maxAnswerBytes: number;
}

export const DEFAULT_REPLAY_LIMITS: ReplayLimits = {
  /** About 200 MiB of heap at ~200 bytes an entry (scripts/bench/replay-memory.ts). */
  maxEntries: 1_000_000,
  maxBodyBytes: 64 * 1024,
  maxAnswerBytes: 64 * 1024 * 1024,
};

/** A signature's first execution, held by the request that runs it. */
export interface ReplayClaim {
  readonly key: string;
  readonly entry: ReplayEntry;
  readonly settled: () => void;
}

/**
 * Keys are the first 128 bits of the signature as a 16-character string: an HMAC-SHA256 that
 * verified, so no client can choose one to collide with another's, and 16 one-byte characters
 * are the smallest string that holds them.
 */
export function replayKey(signature: string): string {
  const bytes = new Array<number>(16);
  for (let i = 0; i < 16; i++) bytes[i] = parseInt(signature.slice(2 * i, 2 * i + 2), 16) | 0;
  return String.fromCharCode(...bytes);
}

export class ReplayStore {
  readonly #entries = new Map<string, ReplayEntry>();
  readonly #limits: ReplayLimits;
  #answerBytes = 0;
  /** The second entries' expiry counts from (set by the first claim). */
  #base: number | undefined;

  constructor(limits: Partial<ReplayLimits> = {}) {
    this.#limits = { ...DEFAULT_REPLAY_LIMITS, ...limits };
  }

  get size(): number {
    return this.#entries.size;
  }

  get limits(): ReplayLimits {
    return this.#limits;
  }

  get answerBytes(): number {
    return this.#answerBytes;
  }

  #seconds(ms: number): number {
    this.#base ??= Math.floor(ms / 1000);
    return Math.ceil(ms / 1000) - this.#base;
  }

  /** The live entry of `signature`, or undefined. */
  get(signature: string, now: number): ReplayEntry | undefined {
    this.#prune(now);
    const entry = this.#entries.get(replayKey(signature));
    return entry !== undefined && this.#live(entry, now) ? entry : undefined;
  }

  #live(entry: ReplayEntry, now: number): boolean {
    return entry.inFlight !== null || entry.expires > now / 1000 - (this.#base ?? 0);
  }

  /**
   * Records the first sight of `signature` (the caller checked get() first), in flight until
   * settle() or forget(); remembered until `expires` (ms, rounded up to the second). Throws
   * SlowDown when the store is full: refusing is safe, forgetting an entry is not.
   */
  claim(signature: string, now: number, expires: number): ReplayClaim {
    this.#prune(now);
    if (this.#entries.size >= this.#limits.maxEntries) {
      throw new SvcError(
        "SlowDown",
        `Too many recent write requests to remember for replay protection (${this.#limits.maxEntries}); retry shortly`,
      );
    }
    const key = replayKey(signature);
    let settled!: () => void;
    const inFlight = new Promise<void>((resolve) => settled = resolve);
    const entry = new ReplayEntry(this.#seconds(expires), inFlight);
    this.#entries.delete(key);
    this.#entries.set(key, entry);
    return { key, entry, settled };
  }

  /** The first execution succeeded: keep what a repeat gets (an answer only if it fits). */
  settle(
    claim: ReplayClaim,
    answer: ReplayAnswer | null,
    bodyDigest: string | null = null,
  ): void {
    const size = answer?.body?.byteLength ?? 0;
    const fits = size <= this.#limits.maxBodyBytes &&
      this.#answerBytes + size <= this.#limits.maxAnswerBytes;
    const entry = claim.entry;
    if (answer !== null && fits) {
      entry.status = answer.status;
      entry.headers = answer.headers;
      entry.body = answer.body;
      entry.bodyDigest = bodyDigest;
      this.#answerBytes += size;
    }
    entry.inFlight = null;
    claim.settled();
  }

  /** The first execution failed: forget it, so an honest retry of it runs. */
  forget(claim: ReplayClaim): void {
    if (this.#entries.get(claim.key) === claim.entry) this.#remove(claim.key, claim.entry);
    claim.entry.inFlight = null;
    claim.settled();
  }

  /**
   * Drops expired entries from the oldest. Expiry is not strictly in insertion order (it also
   * depends on the signed time), so an expired entry may wait behind a live one, but never longer
   * than the window: memory stays bounded by the rate of writes times the window.
   */
  #prune(now: number): void {
    for (const [key, entry] of this.#entries) {
      if (this.#live(entry, now)) break;
      this.#remove(key, entry);
    }
  }

  #remove(key: string, entry: ReplayEntry): void {
    this.#entries.delete(key);
    this.#answerBytes -= entry.body?.byteLength ?? 0;
  }
}
