/**
 * The hash chains of the deflate model (deflate-model.ts): zlib's window-sized tables, kept once
 * per thread and shared by every model (one runs at a time: the codec is synchronous; a zip of
 * thousands of small members would otherwise clear them per member and candidate model). A head
 * holds a position plus the running model's base (newBase): an entry below the base is an earlier
 * model's and counts as none.
 *
 * Besides zlib's chains of positions with the same hash of three or four bytes ("short" chains),
 * the model may keep "middle" and "long" chains, a speed-up that changes nothing it proposes: once
 * the best match is MID (LONG) bytes or more, only candidates sharing s's first MID (LONG) bytes
 * can beat it, so the walk may go on along the chain of positions with s's hash of that many
 * bytes and skip the others. zlib's chain budget counts the skipped ones too: each position gets
 * its rank among the positions with its short hash, and a candidate ranked more than the budget
 * below s is one zlib's walk never reaches.
 */

export const WSIZE = 32768;
export const WMASK = WSIZE - 1;
/** zlib's MAX_DIST: the window less the lookahead it keeps (MIN_LOOKAHEAD = 258 + 3 + 1). */
export const MAX_DIST = WSIZE - 262;
const HASH_BITS = 15;
const HASH_SIZE = 1 << HASH_BITS;
const HASH_MASK = HASH_SIZE - 1;
/**
 * The middle and long chains' hash sizes: theirs to choose (only the short chains are zlib's).
 * Smaller tables stay in the cache; a collision costs a walk one step.
 */
const MID_BITS = Number(Deno.env.get("MIDB") ?? 13);
const LONG_BITS = Number(Deno.env.get("LONGB") ?? 13);
/** A link farther back than any window: `cur - FAR` is below every chain walk's limit. */
const FAR = 0xffff;
/** How many bytes the long chains hash (12 walks fewer steps than 8, more walks than 16). */
export const LONG = 12;
/** How many bytes the middle chains hash: the walk between a best of MID and LONG bytes. */
export const MID = 6;

/**
 * Per short hash h: [2h] its newest position plus the model's base, [2h + 1] that position's rank
 * (side by side: one cache line per insertion, not two). An entry below the base is an earlier
 * model's: the chain is empty.
 */
const shortHeads = new Int32Array(HASH_SIZE * 2);
/** The same without ranks, for models without middle and long chains: half the cache lines. */
const plainHeads = new Int32Array(HASH_SIZE);
/** Per middle (long) hash: its newest position plus the model's base. */
const midHeads = new Int32Array(1 << MID_BITS);
const longHeads = new Int32Array(1 << LONG_BITS);
/**
 * Per position in the window: how far back the previous position with its (short, middle, long)
 * hash is, or FAR when there is none within MAX_DIST (a chain walk stops there either way).
 * Distances rather than positions halve the tables, which a walk reads once per step. Written
 * before read (a position's link is set when it is inserted), so never cleared.
 */
export const shortPrev = new Uint16Array(WSIZE);
export const midPrev = new Uint16Array(WSIZE);
export const longPrev = new Uint16Array(WSIZE);
/** Per position in the window: its rank among the positions with its short hash. */
export const rankAt = new Int32Array(WSIZE);

/** The base of the next model: above every entry an earlier model wrote. */
let nextBase = 1;

/** Moves the next base up (tests: the wrap-around of newBase without 2 GiB of models first). */
export function advanceBase(to: number): void {
  if (to < nextBase) throw new Error(`Base ${to} below the next base ${nextBase}`);
  nextBase = to;
}

/**
 * The base for a new model over `n` bytes: its entries are position + base, so no entry of an
 * earlier model (all below the base) counts for it and no table is cleared per model.
 */
export function newBase(n: number): number {
  // Positions and heads are 31-bit (the content of a stream is far smaller: PREDICT_MAX_CONTENT).
  if (n >= 0x7ffffffe) throw new Error(`DeflateModel over ${n} bytes`);
  if (nextBase + n >= 0x7fffffff) {
    shortHeads.fill(0); // wrapped around: old entries must not count again
    plainHeads.fill(0);
    midHeads.fill(0);
    longHeads.fill(0);
    nextBase = 1;
  }
  const base = nextBase;
  nextBase += n + 1;
  return base;
}

/**
 * Inserts positions from..stop-1 (each with a whole short hash) into the short chains, and if
 * `ranked`, with their ranks into the middle and long chains (those with enough bytes).
 */
export function insertPositions(
  view: DataView,
  d: Uint8Array,
  from: number,
  stop: number,
  ranked: boolean,
  hash4: boolean,
  base: number,
): void {
  const heads = shortHeads;
  const prev = shortPrev;
  let i = from;
  if (ranked) {
    const longStop = Math.min(stop, d.length - LONG + 1);
    const ranks = rankAt;
    const mids = midHeads;
    const midLinks = midPrev;
    const longs = longHeads;
    const links = longPrev;
    let h3 = (d[from] << 5) ^ d[from + 1];
    for (; i < longStop; i++) {
      const w0 = view.getInt32(i, true);
      const w4 = view.getInt32(i + 4, true);
      const at = 2 *
        (hash4
          ? Math.imul(w0, 0x9e3779b1) >>> (32 - HASH_BITS)
          : (h3 = ((h3 << 5) ^ d[i + 2]) & HASH_MASK));
      const bi = base + i;
      const head = heads[at];
      let rank = 0;
      let dist = FAR;
      if (head >= base) {
        dist = bi - head;
        rank = heads[at + 1] + 1;
      }
      prev[i & WMASK] = dist <= MAX_DIST ? dist : FAR;
      heads[at] = bi;
      heads[at + 1] = rank;
      ranks[i & WMASK] = rank;
      const m = Math.imul(w0 ^ Math.imul(w4 & 0xffff, 0x27d4eb2f), 0x9e3779b1) >>> (32 - MID_BITS);
      const midHead = mids[m];
      const midDist = midHead >= base ? bi - midHead : FAR;
      midLinks[i & WMASK] = midDist <= MAX_DIST ? midDist : FAR;
      mids[m] = bi;
      const l = Math.imul(
        w0 ^ Math.imul(w4 ^ Math.imul(view.getInt32(i + 8, true), 0x27d4eb2f), 0x85ebca6b),
        0x9e3779b1,
      ) >>> (32 - LONG_BITS);
      const longHead = longs[l];
      const longDist = longHead >= base ? bi - longHead : FAR;
      links[i & WMASK] = longDist <= MAX_DIST ? longDist : FAR;
      longs[l] = bi;
    }
    // The last positions, too near the end for a long hash: their ranks count, and those with
    // MID bytes go on the middle chains (a walk from them may follow those).
    if (i < stop) {
      h3 = (d[i] << 5) ^ d[i + 1];
      for (; i < stop; i++) {
        const at = 2 *
          (hash4
            ? Math.imul(view.getInt32(i, true), 0x9e3779b1) >>> (32 - HASH_BITS)
            : (h3 = ((h3 << 5) ^ d[i + 2]) & HASH_MASK));
        const head = heads[at];
        let rank = 0;
        let dist = FAR;
        if (head >= base) {
          dist = base + i - head;
          rank = heads[at + 1] + 1;
        }
        prev[i & WMASK] = dist <= MAX_DIST ? dist : FAR;
        heads[at] = base + i;
        heads[at + 1] = rank;
        ranks[i & WMASK] = rank;
        if (i + MID > d.length) continue;
        const m = Math.imul(
          view.getInt32(i, true) ^ Math.imul(view.getUint16(i + 4, true), 0x27d4eb2f),
          0x9e3779b1,
        ) >>> (32 - MID_BITS);
        const midDist = mids[m] >= base ? base + i - mids[m] : FAR;
        midLinks[i & WMASK] = midDist <= MAX_DIST ? midDist : FAR;
        mids[m] = base + i;
      }
    }
    return;
  }
  // The short chains alone, zlib's work; one loop per hash, the hot path of most models.
  const plain = plainHeads;
  if (hash4) {
    for (; i < stop; i++) {
      const at = Math.imul(view.getInt32(i, true), 0x9e3779b1) >>> (32 - HASH_BITS);
      const head = plain[at];
      const dist = head >= base ? base + i - head : FAR;
      prev[i & WMASK] = dist <= MAX_DIST ? dist : FAR;
      plain[at] = base + i;
    }
    return;
  }
  // zlib's rolling hash of three bytes: five bits a byte, the oldest shifted out of 15.
  let h = (d[from] << 5) ^ d[from + 1];
  for (; i < stop; i++) {
    h = ((h << 5) ^ d[i + 2]) & HASH_MASK;
    const head = plain[h];
    const dist = head >= base ? base + i - head : FAR;
    prev[i & WMASK] = dist <= MAX_DIST ? dist : FAR;
    plain[h] = base + i;
  }
}

/** Where the best match of the last `rankedWalk` starts (a second result, without allocating). */
export let walkStart = 0;

/**
 * The rest of a walk of zlib's longest_match along a middle or long chain (`links`, positions with
 * the same hash of `hashed` bytes) from `cur`, a position on s's chain: candidates that share s's
 * first four bytes and rank at least `lowestRank` (the ones zlib's chain budget reaches), before
 * the window's `limit`. Stops early at a match of `upTo` bytes, whose start (walkStart) is on the
 * next chain. Returns the best length (at least `bestLen`, whose match starts at `start`).
 *
 * A run of one byte value (a tar's zero padding, indentation) puts each of its positions on the
 * chain one after the other, and a walk from s, which starts with a run of the same byte, would
 * visit them all: thousands of steps a search in tar content. The walk crosses such a run at once
 * instead (`run` below), with what visiting each position would have given.
 */
export function rankedWalk(
  view: DataView,
  d: Uint8Array,
  links: Uint16Array,
  hashed: number,
  cur: number,
  s: number,
  bestLen: number,
  start: number,
  maxLen: number,
  limit: number,
  lowestRank: number,
  upTo: number,
): number {
  const ranks = rankAt;
  const scanWord = view.getInt32(s, true);
  let scanEnd = view.getUint16(s + bestLen - 1, true);
  const stopLen = upTo < maxLen ? upTo : maxLen;
  /** How many bytes s starts with equal to its first, up to maxLen (-1: not counted yet). */
  let sRun = -1;
  for (;;) {
    cur -= links[cur & WMASK];
    if (cur <= limit) break;
    if (links[cur & WMASK] === 1) {
      // The chain goes on at cur - 1: cur is in a run (or, rarely, a collision of the hash).
      const z = d[cur];
      if (sRun < 0) {
        sRun = 1;
        while (sRun < maxLen && d[s + sRun] === d[s]) sRun++;
      }
      const k = sRun;
      if (d[s] === z && k >= hashed) {
        // f: where the run ends after cur, looked for up to cur + k + 1 (all that matters).
        let f = cur + 1;
        const fStop = cur + k + 1;
        while (f < fStop && d[f] === z) f++;
        if (f - cur >= hashed) {
          // Every position of the run from r0 to cur is on this chain, one after the other, each
          // ranked one below the next. lo: the lowest one within the window and the budget.
          const budgetLo = cur - (ranks[cur & WMASK] - lowestRank);
          const lo = budgetLo > limit + 1 ? budgetLo : limit + 1;
          if (lo > cur) break; // past the budget: nothing from here on can be taken
          let r0 = cur;
          while (r0 > lo && d[r0 - 1] === z) r0--;
          // A candidate c of the run matches s for f - c bytes while that is under k (the
          // run's end meets s's run), for k when its run reaches past s's (f - c > k), and the
          // one whose run ends where s's does (c = f - k) matches on after it. Going down from
          // cur, the lengths rise one a step until f - k: each beats the best once past it.
          let stop = false;
          const aLo = r0 > f - k + 1 ? r0 : f - k + 1;
          const aHi = cur < f - bestLen - 1 ? cur : f - bestLen - 1;
          if (aHi >= aLo) {
            const cStop = f - stopLen; // the first of them as long as stopLen
            const c = cStop >= aHi ? aHi : cStop >= aLo ? cStop : aLo;
            start = c;
            bestLen = f - c;
            stop = bestLen >= stopLen;
          }
          const star = f - k;
          if (!stop && star >= r0 && star <= cur) {
            const len = matchLength(view, d, star, s, maxLen);
            if (len > bestLen) {
              start = star;
              bestLen = len;
              stop = len >= stopLen;
            }
          } else if (!stop && star > cur && k > bestLen) {
            // Every run from cur down reaches past s's: cur, the first, matches k bytes.
            start = cur;
            bestLen = k;
            stop = k >= stopLen;
          }
          if (stop || r0 === lo) break; // a match long enough, or the rest is out of reach
          scanEnd = view.getUint16(s + bestLen - 1, true);
          cur = r0;
          continue;
        }
      }
    }
    // Most candidates end before the best: the two bytes ending it decide first (one load).
    if (view.getUint16(cur + bestLen - 1, true) !== scanEnd) continue;
    // Other first four bytes: perhaps another short hash (its rank means nothing here), and a
    // candidate that cannot share this chain's bytes (a collision of its hash).
    if (view.getInt32(cur, true) !== scanWord) continue;
    // Past the budget: zlib stops before it. Ranks fall along the walk among candidates with
    // s's first four bytes, so one skipped above was past the budget only if this one is too.
    if (ranks[cur & WMASK] < lowestRank) break;
    const len = matchLength(view, d, cur, s, maxLen);
    if (len > bestLen) {
      start = cur;
      bestLen = len;
      if (len >= upTo || len >= maxLen) break;
      scanEnd = view.getUint16(s + bestLen - 1, true);
    }
  }
  walkStart = start;
  return bestLen;
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
