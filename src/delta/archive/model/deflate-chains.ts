/**
 * The hash chains of the deflate model (deflate-model.ts): zlib's window-sized tables, kept once
 * per thread and shared by every model (one runs at a time: the codec is synchronous; a zip of
 * thousands of small members would otherwise clear them per member and candidate model). An
 * entry counts only when its generation is the running model's.
 *
 * Besides zlib's chains of positions with the same hash of three or four bytes ("short" chains),
 * the model may keep "long" chains, a speed-up that changes nothing it proposes: once the best
 * match is LONG bytes or more, only candidates sharing s's first LONG bytes can beat it, so the
 * walk may go on along the chain of positions with s's hash of LONG bytes and skip the others.
 * zlib's chain budget counts the skipped ones too: each position gets its rank among the
 * positions with its short hash, and a candidate ranked more than the budget below s is one
 * zlib's walk never reaches.
 */

export const WSIZE = 32768;
export const WMASK = WSIZE - 1;
/** zlib's MAX_DIST: the window less the lookahead it keeps (MIN_LOOKAHEAD = 258 + 3 + 1). */
export const MAX_DIST = WSIZE - 262;
const HASH_BITS = 15;
const HASH_SIZE = 1 << HASH_BITS;
const HASH_MASK = HASH_SIZE - 1;
/** A link farther back than any window: `cur - FAR` is below every chain walk's limit. */
const FAR = 0xffff;
/** How many bytes the long chains hash (12 walks fewer steps than 8, more walks than 16). */
export const LONG = 12;

/**
 * Per short hash h: [3h] its newest position, [3h + 1] that entry's generation, [3h + 2] the
 * newest position's rank (side by side: one cache line per insertion, not three).
 */
const shortHeads = new Int32Array(HASH_SIZE * 3);
/** Per long hash h: [2h] its newest position, [2h + 1] that entry's generation. */
const longHeads = new Int32Array(HASH_SIZE * 2);
/**
 * Per position in the window: how far back the previous position with its (short, long) hash is,
 * or FAR when there is none within MAX_DIST (a chain walk stops there either way). Distances
 * rather than positions halve the tables, which a walk reads once per step. Written before read
 * (a position's link is set when it is inserted), so never cleared.
 */
export const shortPrev = new Uint16Array(WSIZE);
export const longPrev = new Uint16Array(WSIZE);
/** Per position in the window: its rank among the positions with its short hash. */
export const rankAt = new Int32Array(WSIZE);

let generation = 0;

/** A generation for a new model: no entry of an earlier model counts for it. */
export function nextGeneration(): number {
  generation = (generation + 1) | 0;
  if (generation === 0) {
    shortHeads.fill(0); // wrapped around: old generations must not match again
    longHeads.fill(0);
    generation = 1;
  }
  return generation;
}

/**
 * Inserts positions from..stop-1 (each with a whole short hash) into the short chains, and with
 * `longStop` > from those before it into the long chains (with their ranks).
 */
export function insertPositions(
  view: DataView,
  d: Uint8Array,
  from: number,
  stop: number,
  longStop: number,
  hash4: boolean,
  current: number,
): void {
  const heads = shortHeads;
  const prev = shortPrev;
  if (longStop <= from) {
    // The short chains alone, zlib's work; one loop per hash, the hot path of most models.
    if (hash4) {
      for (let i = from; i < stop; i++) {
        const at = 3 * (Math.imul(view.getInt32(i, true), 0x9e3779b1) >>> (32 - HASH_BITS));
        const dist = heads[at + 1] === current ? i - heads[at] : FAR;
        prev[i & WMASK] = dist <= MAX_DIST ? dist : FAR;
        heads[at] = i;
        heads[at + 1] = current;
      }
      return;
    }
    // zlib's rolling hash of three bytes: five bits a byte, the oldest shifted out of 15.
    let h = (d[from] << 5) ^ d[from + 1];
    for (let i = from; i < stop; i++) {
      h = ((h << 5) ^ d[i + 2]) & HASH_MASK;
      const at = 3 * h;
      const dist = heads[at + 1] === current ? i - heads[at] : FAR;
      prev[i & WMASK] = dist <= MAX_DIST ? dist : FAR;
      heads[at] = i;
      heads[at + 1] = current;
    }
    return;
  }
  const ranks = rankAt;
  let h3 = (d[from] << 5) ^ d[from + 1];
  for (let i = from; i < stop; i++) {
    let h: number;
    if (hash4) h = Math.imul(view.getInt32(i, true), 0x9e3779b1) >>> (32 - HASH_BITS);
    else h = h3 = ((h3 << 5) ^ d[i + 2]) & HASH_MASK;
    const at = 3 * h;
    let dist = FAR;
    let rank = 0;
    if (heads[at + 1] === current) {
      dist = i - heads[at];
      rank = heads[at + 2] + 1;
    }
    prev[i & WMASK] = dist <= MAX_DIST ? dist : FAR;
    heads[at] = i;
    heads[at + 1] = current;
    heads[at + 2] = rank;
    ranks[i & WMASK] = rank;
  }
  const longs = longHeads;
  const links = longPrev;
  for (let i = from; i < longStop; i++) {
    const word = view.getInt32(i, true) ^
      Math.imul(
        view.getInt32(i + 4, true) ^ Math.imul(view.getInt32(i + 8, true), 0x27d4eb2f),
        0x85ebca6b,
      );
    const at = 2 * (Math.imul(word, 0x9e3779b1) >>> (32 - HASH_BITS));
    const dist = longs[at + 1] === current ? i - longs[at] : FAR;
    links[i & WMASK] = dist <= MAX_DIST ? dist : FAR;
    longs[at] = i;
    longs[at + 1] = current;
  }
}

/** How many bytes at `cur` match those at s (cur < s; the first two are known equal), ≤ maxLen. */
export function matchLength(
  view: DataView,
  d: Uint8Array,
  cur: number,
  s: number,
  maxLen: number,
): number {
  let len = 2;
  const stop = maxLen - 4;
  // Four bytes a step while that cannot pass maxLen, then one at a time.
  while (len <= stop) {
    const x = view.getInt32(cur + len, true) ^ view.getInt32(s + len, true);
    if (x !== 0) return len + ((31 - Math.clz32(x & -x)) >> 3); // the first differing byte
    len += 4;
  }
  while (len < maxLen && d[cur + len] === d[s + len]) len++;
  return len;
}
