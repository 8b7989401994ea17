/**
 * A model of how zlib-family deflaters choose their tokens (the lazy-matching parse of zlib's
 * levels 4-9, as RFC 1951 section 4 describes it and zlib, Info-ZIP, Java's and Python's zlib
 * and Chromium's zlib in Node implement it): hash chains over every position, the longest match
 * within the chain budget, and one step of lazy evaluation before a match is taken.
 *
 * The predicted form (predicted-form.ts) stores a deflate stream as its decompressed content plus
 * the tokens where this model and the producer disagree; unchanged content then gives unchanged
 * bytes whatever the producer's matches were. Both directions drive the model in lock step with
 * the real token sequence: `next()` proposes the token at the current position, then `accept()`
 * takes it or `force(token)` replaces it (a correction), after which the model restarts its lazy
 * evaluation fresh at the position after the forced token. Expansion and contraction make the same
 * calls, so they see the same proposals.
 *
 * The parse is part of svc's storage format: a stored form is rebuilt by running this model
 * again. Never change what it proposes for an existing parameter set; add a set instead.
 */

/** One parameter set: zlib's configuration table row plus the hash the producer used. */
export interface ModelParams {
  /** 3: zlib's rolling hash of three bytes; 4: a hash of four bytes (Chromium's zlib, Node). */
  hashBytes: 3 | 4;
  /** Chain budget (max_chain), quartered once a match of `good` bytes is held. */
  maxChain: number;
  good: number;
  /** A match this long is taken without looking further (nice_length). */
  nice: number;
  /** No lazy search once a match this long is held (max_lazy). */
  maxLazy: number;
}

/** Parameter sets by the id stored in a predicted record. Append only. */
export const MODEL_PARAMS: readonly ModelParams[] = [
  { hashBytes: 4, good: 32, maxLazy: 258, nice: 258, maxChain: 4096 }, // 0: Node/Chromium -9
  { hashBytes: 3, good: 32, maxLazy: 258, nice: 258, maxChain: 4096 }, // 1: zlib -9
  { hashBytes: 3, good: 8, maxLazy: 16, nice: 128, maxChain: 128 }, // 2: zlib -6 (default)
  { hashBytes: 4, good: 8, maxLazy: 16, nice: 128, maxChain: 128 }, // 3: Node/Chromium -6
  { hashBytes: 3, good: 32, maxLazy: 128, nice: 258, maxChain: 1024 }, // 4: zlib -8
  { hashBytes: 3, good: 8, maxLazy: 32, nice: 128, maxChain: 256 }, // 5: zlib -7
  { hashBytes: 3, good: 8, maxLazy: 16, nice: 32, maxChain: 32 }, // 6: zlib -5
  { hashBytes: 3, good: 4, maxLazy: 4, nice: 16, maxChain: 16 }, // 7: zlib -4
  { hashBytes: 4, good: 32, maxLazy: 128, nice: 258, maxChain: 1024 }, // 8: Chromium -8
  { hashBytes: 4, good: 8, maxLazy: 32, nice: 128, maxChain: 256 }, // 9: Chromium -7
];

const WSIZE = 32768;
const WMASK = WSIZE - 1;
/** zlib's MAX_DIST: the window less the lookahead it keeps (MIN_LOOKAHEAD = 258 + 3 + 1). */
const MAX_DIST = WSIZE - 262;
/** A three-byte match this far back is not worth its bits (zlib's TOO_FAR). */
const TOO_FAR = 4096;
const HASH_BITS = 15;
const HASH_SIZE = 1 << HASH_BITS;
const HASH_MASK = HASH_SIZE - 1;

/** What `next()` proposes: a literal (length 0) or a match, at position `at` of the content. */
export interface Proposal {
  at: number;
  /** 0 for a literal, else 3..258. */
  length: number;
  /** 1..32768 for a match. */
  distance: number;
}

const enum Pending {
  None,
  Match,
  Literal,
  Tail,
  End,
}

/**
 * The chain heads, shared by every model of this thread (one runs at a time: the codec is
 * synchronous): a zip of thousands of small members would otherwise clear 128 KiB per member and
 * candidate model. A head counts only when its generation is the running model's.
 */
const sharedHead = new Int32Array(HASH_SIZE);
const sharedHeadGeneration = new Uint32Array(HASH_SIZE);
/**
 * For each position in the window: how far back the previous position with its hash is, or FAR
 * when there is none within MAX_DIST (a chain walk stops there either way). Distances rather than
 * positions halve the table, which the walk reads once per step. Written before read (a position's
 * link is set when it is inserted), so never cleared.
 */
const sharedPrev = new Uint16Array(WSIZE);
/** Farther back than any window: `cur - FAR` is below every chain walk's limit. */
const FAR = 0xffff;
let generation = 0;

export class DeflateModel {
  readonly #data: Uint8Array;
  /** The same bytes, for two- and four-byte compares (little endian, unaligned). */
  readonly #view: DataView;
  readonly #n: number;
  readonly #hash4: boolean;
  readonly #maxChain: number;
  readonly #good: number;
  readonly #nice: number;
  readonly #maxLazy: number;
  /** Heads count only when their generation is this (see sharedHead). */
  readonly #generation: number;
  /** Next position to insert into the chains: every position before it is in. */
  #inserted = 0;
  #s = 0;
  #matchLength = 2;
  #matchStart = 0;
  #matchAvailable = false;
  #pending = Pending.None;
  /** The proposal `next()` made (valid while a proposal is pending). */
  readonly proposal: Proposal = { at: 0, length: 0, distance: 0 };

  constructor(data: Uint8Array, params: ModelParams) {
    this.#data = data;
    this.#view = new DataView(data.buffer, data.byteOffset, data.byteLength);
    this.#n = data.length;
    this.#hash4 = params.hashBytes === 4;
    this.#maxChain = params.maxChain;
    this.#good = params.good;
    this.#nice = params.nice;
    this.#maxLazy = params.maxLazy;
    generation = (generation + 1) >>> 0;
    if (generation === 0) {
      sharedHeadGeneration.fill(0); // wrapped around: old generations must not match again
      generation = 1;
    }
    this.#generation = generation;
  }

  /**
   * Inserts every position before `end` not yet in the chains (those with enough bytes): each
   * position's link is the previous position with its hash (-1: none).
   */
  #insertUpTo(end: number): void {
    let i = this.#inserted;
    if (end <= i) return;
    this.#inserted = end;
    const hash4 = this.#hash4;
    const last = this.#n - (hash4 ? 4 : 3); // the last position with a whole hash
    const stop = end < last + 1 ? end : last + 1;
    if (i >= stop) return;
    const head = sharedHead;
    const headGeneration = sharedHeadGeneration;
    const prev = sharedPrev;
    const current = this.#generation;
    if (hash4) {
      const view = this.#view;
      for (; i < stop; i++) {
        const h = Math.imul(view.getInt32(i, true), 0x9e3779b1) >>> (32 - HASH_BITS);
        const dist = headGeneration[h] === current ? i - head[h] : FAR;
        prev[i & WMASK] = dist <= MAX_DIST ? dist : FAR;
        head[h] = i;
        headGeneration[h] = current;
      }
      return;
    }
    // zlib's rolling hash of three bytes: five bits a byte, the oldest shifted out of 15.
    const d = this.#data;
    let h = (d[i] << 5) ^ d[i + 1];
    for (; i < stop; i++) {
      h = ((h << 5) ^ d[i + 2]) & HASH_MASK;
      const dist = headGeneration[h] === current ? i - head[h] : FAR;
      prev[i & WMASK] = dist <= MAX_DIST ? dist : FAR;
      head[h] = i;
      headGeneration[h] = current;
    }
  }

  /** zlib's longest_match: the best match at s along the chain from `cur`, at least `best` long. */
  #longest(cur: number, s: number, best: number): number {
    const view = this.#view;
    const prev = sharedPrev;
    const lookahead = this.#n - s;
    const maxLen = lookahead < 258 ? lookahead : 258;
    let bestLen = best;
    if (bestLen >= maxLen) return bestLen;
    let chain = this.#maxChain;
    if (bestLen >= this.#good) chain >>= 2;
    const nice = this.#nice < lookahead ? this.#nice : lookahead;
    const limit = s > MAX_DIST ? s - MAX_DIST : 0;
    let start = this.#matchStart;
    // A candidate must match the two bytes that end the best so far (most fail there) and the
    // first two; then four bytes a step while that cannot pass maxLen.
    let scanEnd = view.getUint16(s + bestLen - 1, true);
    const scanStart = view.getUint16(s, true);
    const stop = maxLen - 4;
    for (;;) {
      if (
        view.getUint16(cur + bestLen - 1, true) === scanEnd &&
        view.getUint16(cur, true) === scanStart
      ) {
        let len = 2;
        for (;;) {
          if (len > stop) {
            const d = this.#data;
            while (len < maxLen && d[cur + len] === d[s + len]) len++;
            break;
          }
          const x = view.getInt32(cur + len, true) ^ view.getInt32(s + len, true);
          if (x !== 0) {
            len += (31 - Math.clz32(x & -x)) >> 3; // the first differing byte (little endian)
            break;
          }
          len += 4;
        }
        if (len > bestLen) {
          start = cur;
          bestLen = len;
          if (len >= nice || len >= maxLen) break;
          scanEnd = view.getUint16(s + bestLen - 1, true);
        }
      }
      cur -= prev[cur & WMASK];
      if (cur <= limit || --chain === 0) break;
    }
    this.#matchStart = start;
    return bestLen;
  }

  /** Proposes the next token (sets `proposal`); false at the end of the content. */
  next(): boolean {
    if (this.#pending !== Pending.None) return this.#pending !== Pending.End;
    const n = this.#n;
    const hashBytes = this.#hash4 ? 4 : 3;
    const maxLazy = this.#maxLazy;
    const prev = sharedPrev;
    for (;;) {
      const s = this.#s;
      if (s >= n) {
        if (this.#matchAvailable) {
          this.#propose(Pending.Tail, s - 1, 0, 0);
          return true;
        }
        this.#pending = Pending.End;
        return false;
      }
      // The chain head for s (inserting s first): the previous position with its hash.
      let hashHead = -1;
      if (s + hashBytes <= n) {
        if (s >= this.#inserted) this.#insertUpTo(s + 1);
        hashHead = s - prev[s & WMASK];
      }
      const prevLength = this.#matchLength;
      const prevMatch = this.#matchStart;
      let matchLength = 2;
      if (hashHead > 0 && prevLength < maxLazy && s - hashHead <= MAX_DIST) {
        matchLength = this.#longest(hashHead, s, prevLength);
        if (matchLength === 3 && s - this.#matchStart > TOO_FAR) matchLength = 2;
      }
      this.#matchLength = matchLength;
      if (prevLength >= 3 && matchLength <= prevLength) {
        this.#propose(Pending.Match, s - 1, prevLength, s - 1 - prevMatch);
        return true;
      }
      if (this.#matchAvailable) {
        this.#propose(Pending.Literal, s - 1, 0, 0);
        return true;
      }
      this.#matchAvailable = true;
      this.#s = s + 1;
    }
  }

  #propose(kind: Pending, at: number, length: number, distance: number): void {
    this.#pending = kind;
    this.proposal.at = at;
    this.proposal.length = length;
    this.proposal.distance = distance;
  }

  /** Takes the proposal. */
  accept(): void {
    const kind = this.#pending;
    this.#pending = Pending.None;
    if (kind === Pending.Match) {
      const end = this.proposal.at + this.proposal.length;
      this.#insertUpTo(Math.min(end, this.#n));
      this.#s = end;
      this.#matchAvailable = false;
      this.#matchLength = 2;
    } else if (kind === Pending.Literal) {
      this.#s++;
    } else if (kind === Pending.Tail) {
      this.#s++;
      this.#matchAvailable = false;
    } else {
      throw new Error("DeflateModel.accept without a proposal");
    }
  }

  /**
   * Replaces the proposal (or, past the end, the missing one) by the real token of `length` (0 for
   * a literal) at the proposal's position; the parse restarts fresh after it.
   */
  force(length: number): void {
    const at = this.#pending === Pending.End ? this.#n : this.proposal.at;
    this.#pending = Pending.None;
    const end = at + (length === 0 ? 1 : length);
    this.#insertUpTo(Math.min(end, this.#n));
    this.#s = end;
    this.#matchAvailable = false;
    this.#matchLength = 2;
  }
}
