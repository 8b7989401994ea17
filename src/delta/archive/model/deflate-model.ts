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

import {
  insertPositions,
  LONG,
  longPrev,
  matchLength,
  MAX_DIST,
  MID,
  midPrev,
  newBase,
  rankAt,
  rankedWalk,
  shortPrev,
  walkStart,
  WMASK,
} from "./deflate-chains.ts";

/** One parameter set: zlib's configuration table row plus the hash the producer used. */
export interface ModelParams {
  /** 3: zlib's rolling hash of three bytes; 4: a hash of four bytes (Chromium's zlib, Node). */
  hashBytes: 3 | 4;
  /** Chain budget (max_chain), quartered once a match of `good` bytes is held. */
  maxChain: number;
  good: number;
  /** A match this long is taken without looking further (nice_length). */
  nice: number;
  /**
   * No lazy search once a match this long is held (max_lazy); with `kind: "fast"`, the longest
   * match whose positions are inserted into the chains (max_insert_length).
   */
  maxLazy: number;
  /**
   * "fast": zlib's deflate_fast (levels 1-3): greedy, no lazy step, and the positions inside a
   * match longer than maxLazy are not inserted. Otherwise deflate_slow (levels 4-9).
   */
  kind?: "fast";
}

/**
 * Parameter sets by the id stored in a predicted record. Append only. zlib's levels 1-3 (10-12)
 * predict zlib, gzip(1) and what builds on them; Node's levels 1-3 (Chromium's zlib) follow none
 * of these and keep their tokens.
 */
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
  { hashBytes: 3, good: 4, maxLazy: 4, nice: 8, maxChain: 4, kind: "fast" }, // 10: zlib -1
  { hashBytes: 3, good: 4, maxLazy: 5, nice: 16, maxChain: 8, kind: "fast" }, // 11: zlib -2
  { hashBytes: 3, good: 4, maxLazy: 6, nice: 32, maxChain: 32, kind: "fast" }, // 12: zlib -3
];

/** A three-byte match this far back is not worth its bits (zlib's TOO_FAR). */
const TOO_FAR = 4096;
/**
 * Positions are inserted this far ahead of the search, in batches: a walk from s reads only links
 * of positions before s, and a slot of the window is reused only by a position 32 KiB on, beyond
 * s + 262 for every candidate the walk may reach (zlib's MAX_DIST keeps that lookahead).
 */
const INSERT_AHEAD = 256;
/**
 * The chain budget from which the middle and long chains (deflate-chains.ts) pay for keeping them
 * (below it, their insertion costs more than the walks save).
 */
const LONG_CHAINS_FROM = 1024;

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
  /** deflate_fast rather than deflate_slow (ModelParams.kind). */
  readonly #fast: boolean;
  /**
   * Whether the middle and long chains are kept: they pay off only for long chain budgets, and ranks
   * need every position inserted (deflate_slow).
   */
  readonly #useLong: boolean;
  /** Chain entries are positions plus this; lower ones are earlier models' (deflate-chains.ts). */
  readonly #base: number;
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
    this.#fast = params.kind === "fast";
    this.#useLong = !this.#fast && params.maxChain >= LONG_CHAINS_FROM;
    this.#base = newBase(data.length);
  }

  /**
   * Starts the parse at `position` instead of 0, as if a match had just ended there: every
   * position before it goes into the chains at the first `next()`. A chunk of a stream
   * (model-chunks.ts) starts so, over the content from 32 KiB before it; for deflate_slow that is
   * the state a run from 0 has after a match, so a chunk needs no corrections a whole run would
   * not. Only before the first `next()`.
   */
  startAt(position: number): void {
    if (this.#s !== 0 || this.#inserted !== 0) throw new Error("DeflateModel.startAt after next()");
    this.#s = position;
  }

  /** Inserts every position before `end` not yet in the chains (those with enough bytes). */
  #insertUpTo(end: number): void {
    const from = this.#inserted;
    if (end <= from) return;
    this.#inserted = end;
    const n = this.#n;
    const last = n - (this.#hash4 ? 4 : 3); // the last position with a whole hash
    const stop = end < last + 1 ? end : last + 1;
    if (from >= stop) return;
    insertPositions(this.#view, this.#data, from, stop, this.#useLong, this.#hash4, this.#base);
  }

  /** zlib's chain budget: max_chain, quartered once a match of `good` bytes is held. */
  #chainFor(best: number): number {
    return best >= this.#good ? this.#maxChain >> 2 : this.#maxChain;
  }

  /** zlib's longest_match: the best match at s along the chain from `cur`, at least `best` long. */
  #longest(cur: number, s: number, best: number): number {
    const view = this.#view;
    const prev = shortPrev;
    const lookahead = this.#n - s;
    const maxLen = lookahead < 258 ? lookahead : 258;
    let bestLen = best;
    if (bestLen >= maxLen) return bestLen;
    let chain = this.#chainFor(bestLen);
    const nice = this.#nice < lookahead ? this.#nice : lookahead;
    const limit = s > MAX_DIST ? s - MAX_DIST : 0;
    let start = this.#matchStart;
    // A candidate must match the two bytes that end the best so far (most fail there) and the
    // first two; then four bytes a step while that cannot pass maxLen.
    let scanEnd = view.getUint16(s + bestLen - 1, true);
    const scanStart = view.getUint16(s, true);
    const d = this.#data;
    const useLong = this.#useLong;
    // 0: the short chain; 1: the middle chain; 2: the long chain (deflate-chains.ts). A better
    // match than one of MID - 1 bytes has MID, so it is on s's middle chain (the same for LONG).
    let level = useLong ? (bestLen >= LONG - 1 ? 2 : bestLen >= MID - 1 ? 1 : 0) : 0;
    if (level !== 0) cur = s; // the chain from s itself: the short head may not share its bytes
    else {
      for (;;) {
        if (
          view.getUint16(cur + bestLen - 1, true) === scanEnd &&
          view.getUint16(cur, true) === scanStart
        ) {
          const len = matchLength(view, d, cur, s, maxLen);
          if (len > bestLen) {
            start = cur;
            bestLen = len;
            if (len >= nice || len >= maxLen) break;
            scanEnd = view.getUint16(s + bestLen - 1, true);
            if (useLong && bestLen >= MID - 1) {
              level = bestLen >= LONG - 1 ? 2 : 1;
              // cur is on s's chain of that level if it shares as many bytes; else the walk
              // starts from s again (the candidates down to cur cannot beat the best).
              if (bestLen < (level === 2 ? LONG : MID)) cur = s;
              break;
            }
          }
        }
        cur -= prev[cur & WMASK];
        if (cur <= limit || --chain === 0) break;
      }
    }
    if (level === 0 || bestLen >= nice || bestLen >= maxLen) {
      this.#matchStart = start;
      return bestLen;
    }
    // Candidates are ranked below s's rank; the short walk reaches `chain` of them in all.
    const lowestRank = rankAt[s & WMASK] - this.#chainFor(best);
    const upTo = nice < maxLen ? nice : maxLen;
    if (level === 1) {
      bestLen = rankedWalk(
        view,
        d,
        midPrev,
        MID,
        cur,
        s,
        bestLen,
        start,
        maxLen,
        limit,
        lowestRank,
        LONG - 1,
      );
      start = walkStart;
      // The long walk goes on from a match of LONG bytes (on s's long chain), else from s.
      cur = bestLen >= LONG ? start : s;
    }
    if (bestLen >= LONG - 1 && bestLen < upTo) {
      bestLen = rankedWalk(
        view,
        d,
        longPrev,
        LONG,
        cur,
        s,
        bestLen,
        start,
        maxLen,
        limit,
        lowestRank,
        upTo,
      );
      start = walkStart;
    }
    this.#matchStart = start;
    return bestLen;
  }

  /** Proposes the next token (sets `proposal`); false at the end of the content. */
  next(): boolean {
    if (this.#pending !== Pending.None) return this.#pending !== Pending.End;
    if (this.#fast) return this.#nextFast();
    const n = this.#n;
    const hashBytes = this.#hash4 ? 4 : 3;
    const maxLazy = this.#maxLazy;
    const prev = shortPrev;
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
        if (s >= this.#inserted) this.#insertUpTo(s + INSERT_AHEAD);
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

  /** deflate_fast: the longest match at s if it is 3 bytes or more, else a literal. */
  #nextFast(): boolean {
    const s = this.#s;
    const n = this.#n;
    if (s >= n) {
      this.#pending = Pending.End;
      return false;
    }
    // Only s itself: positions inside long matches are skipped, not inserted ahead.
    let hashHead = -1;
    if (s + (this.#hash4 ? 4 : 3) <= n) {
      this.#insertUpTo(s + 1);
      hashHead = s - shortPrev[s & WMASK];
    }
    if (hashHead > 0 && s - hashHead <= MAX_DIST) {
      const length = this.#longest(hashHead, s, 2);
      if (length >= 3) {
        this.#propose(Pending.Match, s, length, s - this.#matchStart);
        return true;
      }
    }
    this.#propose(Pending.Literal, s, 0, 0);
    return true;
  }

  /**
   * Inserts what a match of `length` at `at` inserts (deflate_slow: every position; deflate_fast:
   * those of a match up to max_insert_length with three bytes after it) and skips the rest.
   */
  #insertMatch(at: number, length: number): void {
    const end = at + length;
    const n = this.#n;
    if (!this.#fast || (length <= this.#maxLazy && n - end >= 3)) {
      this.#insertUpTo(end < n ? end : n);
    } else if (end > this.#inserted) this.#inserted = end;
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
      this.#insertMatch(this.proposal.at, this.proposal.length);
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
    this.#insertMatch(at, end - at);
    this.#s = end;
    this.#matchAvailable = false;
    this.#matchLength = 2;
  }
}
