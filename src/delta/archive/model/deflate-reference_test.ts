/**
 * The deflate model against a plain reference of the same parse: zlib's deflate_slow with
 * whole-position hash chains walked one candidate after the other, without the model's
 * speed-ups (window-sized distance links, insertion ahead, middle and long chains with ranks).
 * The inputs give chains far longer than the chain budget (indentation, repeated lines), where a
 * ranked walk must stop exactly where zlib's budget does.
 */
import assert from "node:assert/strict";
import { sample } from "../../../testing/archive-samples.ts";
import { advanceBase } from "./deflate-chains.ts";
import { DeflateModel, MODEL_PARAMS, type ModelParams } from "./deflate-model.ts";

const MAX_DIST = 32768 - 262;
const TOO_FAR = 4096;

/** The reference: the parse as RFC 1951 and zlib describe it, with the model's token API. */
class ReferenceParse {
  readonly proposal = { at: 0, length: 0, distance: 0 };
  #head = new Map<number, number>();
  #prev: Int32Array;
  #inserted = 0;
  #s = 0;
  #matchLength = 2;
  #matchStart = 0;
  #matchAvailable = false;
  #pending = "";
  constructor(readonly data: Uint8Array, readonly params: ModelParams) {
    this.#prev = new Int32Array(data.length).fill(-1);
  }

  #hash(i: number): number {
    const d = this.data;
    if (this.params.hashBytes === 3) return ((d[i] << 10) ^ (d[i + 1] << 5) ^ d[i + 2]) & 0x7fff;
    const word = d[i] | (d[i + 1] << 8) | (d[i + 2] << 16) | (d[i + 3] << 24);
    return Math.imul(word, 0x9e3779b1) >>> 17;
  }

  /** Inserts every position up to and including `last` that has a whole hash. */
  #insertThrough(last: number): void {
    const stop = Math.min(last, this.data.length - this.params.hashBytes);
    for (; this.#inserted <= stop; this.#inserted++) {
      const h = this.#hash(this.#inserted);
      this.#prev[this.#inserted] = this.#head.get(h) ?? -1;
      this.#head.set(h, this.#inserted);
    }
  }

  #longest(cur: number, s: number, best: number): number {
    const d = this.data;
    const p = this.params;
    const lookahead = d.length - s;
    const maxLen = Math.min(258, lookahead);
    if (best >= maxLen) return best;
    const nice = Math.min(p.nice, lookahead);
    let chain = best >= p.good ? p.maxChain >> 2 : p.maxChain;
    const limit = s > MAX_DIST ? s - MAX_DIST : 0;
    let bestLen = best;
    do {
      let len = 0;
      while (len < maxLen && d[cur + len] === d[s + len]) len++;
      if (len > bestLen) {
        this.#matchStart = cur;
        bestLen = len;
        if (len >= nice) break;
      }
      cur = this.#prev[cur];
    } while (cur > limit && --chain !== 0);
    return bestLen;
  }

  next(): boolean {
    if (this.#pending === "end") return false;
    if (this.#pending !== "") return true;
    const n = this.data.length;
    for (;;) {
      const s = this.#s;
      if (s >= n) {
        if (this.#matchAvailable) return this.#propose("tail", s - 1, 0, 0);
        this.#pending = "end";
        return false;
      }
      let hashHead = -1;
      if (s + this.params.hashBytes <= n) {
        this.#insertThrough(s);
        hashHead = this.#prev[s];
      }
      const prevLength = this.#matchLength;
      const prevMatch = this.#matchStart;
      let matchLength = 2;
      if (hashHead > 0 && prevLength < this.params.maxLazy && s - hashHead <= MAX_DIST) {
        matchLength = this.#longest(hashHead, s, prevLength);
        if (matchLength === 3 && s - this.#matchStart > TOO_FAR) matchLength = 2;
      }
      this.#matchLength = matchLength;
      if (prevLength >= 3 && matchLength <= prevLength) {
        return this.#propose("match", s - 1, prevLength, s - 1 - prevMatch);
      }
      if (this.#matchAvailable) return this.#propose("literal", s - 1, 0, 0);
      this.#matchAvailable = true;
      this.#s = s + 1;
    }
  }

  #propose(kind: string, at: number, length: number, distance: number): true {
    this.#pending = kind;
    Object.assign(this.proposal, { at, length, distance });
    return true;
  }

  accept(): void {
    const kind = this.#pending;
    this.#pending = "";
    if (kind === "match") this.#restartAt(this.proposal.at + this.proposal.length);
    else if (kind === "literal") this.#s++;
    else this.#restartAt(this.#s + 1);
  }

  force(length: number): void {
    const at = this.#pending === "end" ? this.data.length : this.proposal.at;
    this.#pending = "";
    this.#restartAt(at + (length === 0 ? 1 : length));
  }

  #restartAt(s: number): void {
    this.#s = s;
    this.#matchAvailable = false;
    this.#matchLength = 2;
  }
}

/** Source-like text: deep indentation and a small vocabulary, so chains of thousands. */
function indented(seed: number, size: number): Uint8Array {
  let state = seed >>> 0;
  const next = () => (state = (Math.imul(state, 1664525) + 1013904223) >>> 0);
  const words = ["return", "const", "value", "this.#s", "=", ";", "if (", ")", "{", "}", "x"];
  const out = new Uint8Array(size);
  let at = 0;
  while (at < size) {
    const indent = 4 * (next() % 10) + (next() % 7 === 0 ? 1 : 0);
    for (let i = 0; i < indent && at < size; i++) out[at++] = 32;
    const count = 1 + (next() % 6);
    for (let w = 0; w < count && at < size; w++) {
      for (const c of new TextEncoder().encode(words[next() % words.length] + " ")) {
        if (at < size) out[at++] = c;
      }
    }
    if (at < size) out[at++] = 10;
  }
  return out;
}

/** Long runs with one odd byte in a few: matches of every length around the chains' lengths. */
function runs(seed: number, size: number): Uint8Array {
  let state = seed >>> 0;
  const next = () => (state = (Math.imul(state, 1664525) + 1013904223) >>> 0);
  const out = new Uint8Array(size).fill(32);
  for (let i = 0; i < size; i += 1 + (next() % 24)) out[i] = 97 + (next() % 3);
  return out;
}

/**
 * Tar-like content: headers and files padded with zeros to 512 bytes, some long zero runs (past
 * the chain budget, across the window's limit), and runs that end in the same bytes: the run
 * crossing of the middle and long walks (deflate-chains.ts) at every budget and limit.
 */
function tarLike(seed: number, size: number): Uint8Array {
  let state = seed >>> 0;
  const next = () => (state = (Math.imul(state, 1664525) + 1013904223) >>> 0);
  const out = new Uint8Array(size);
  const text = indented(seed + 1, 40_000);
  let at = 0;
  while (at < size) {
    const name = new TextEncoder().encode(`package/lib/file-${next() % 50}.js`);
    out.set(name.subarray(0, size - at), at);
    at += 512; // the header: its name, then zeros
    const pick = next() % 8;
    const length = pick === 0 ? 5_000 + (next() % 40_000) : next() % 3_000;
    if (pick !== 1) {
      const from = next() % (text.length - 3_000);
      out.set(text.subarray(from, from + Math.min(length, 3_000, size - at)), at);
    } // else a run of zeros as long as a file
    at += length + (511 - ((length + 511) % 512)); // the padding stays zero
  }
  return out;
}

function compare(data: Uint8Array, set: number, every: number): void {
  const model = new DeflateModel(data, MODEL_PARAMS[set]);
  const reference = new ReferenceParse(data, MODEL_PARAMS[set]);
  for (let k = 1;; k++) {
    const has = model.next();
    assert.equal(has, reference.next(), `set ${set}, token ${k}: the end`);
    if (!has) break;
    const p = model.proposal;
    if (
      p.at !== reference.proposal.at || p.length !== reference.proposal.length ||
      p.distance !== reference.proposal.distance
    ) {
      assert.deepEqual({ ...p }, { ...reference.proposal }, `set ${set}, token ${k}`);
    }
    if (every > 0 && k % every === 0) {
      const length = p.length > 0 ? 0 : (p.at + 7 <= data.length ? 7 : 0);
      model.force(length);
      reference.force(length);
    } else {
      model.accept();
      reference.accept();
    }
  }
}

const INPUTS: [string, Uint8Array][] = [
  ["indented", indented(11, 160_000)],
  ["runs", runs(12, 60_000)],
  ["sample", sample(13, 100_000)],
  ["tar-like", tarLike(17, 400_000)],
];

for (const [name, data] of INPUTS) {
  Deno.test(`the model proposes what the plain parse does (${name}, every lazy set)`, () => {
    for (let set = 0; set < MODEL_PARAMS.length; set++) {
      if (MODEL_PARAMS[set].kind === "fast") continue;
      compare(data, set, 0);
      compare(data, set, 13);
    }
  });
}

/**
 * Content that ends in a lazy step: at the last space a match of `length` - 2 bytes (" ABC…z"
 * earlier), one position later a longer one running into the end ("qABC…" earlier).
 */
function lateMatch(length: number): Uint8Array {
  const noise = (seed: number) => Array.from(random(seed, 500), (b) => String.fromCharCode(b));
  const letters = "ABCDEFGHIJKLMNOP".slice(0, length);
  const text = noise(1).join("") + "q" + letters + noise(2).join("") + " " +
    letters.slice(0, -2) + "z" + noise(3).join("") + " " + letters;
  return Uint8Array.from(text, (c) => c.charCodeAt(0));
}

function random(seed: number, size: number): Uint8Array {
  let state = seed >>> 0;
  const next = () => (state = (Math.imul(state, 1664525) + 1013904223) >>> 0);
  return Uint8Array.from({ length: size }, () => 128 + (next() >>> 25));
}

Deno.test("the model proposes what the plain parse does up to the last bytes", () => {
  // The last positions have too few bytes for the long (and middle) hashes; walks from them
  // must still see every candidate, with matches running into the end of the content.
  const text = indented(14, 3_000);
  const inputs = [...Array.from({ length: 16 }, (_, cut) => text.subarray(0, text.length - cut))];
  for (let length = 5; length <= 16; length++) inputs.push(lateMatch(length));
  for (const data of inputs) {
    for (let set = 0; set < MODEL_PARAMS.length; set++) {
      if (MODEL_PARAMS[set].kind === "fast") continue;
      compare(data, set, 0);
      compare(data, set, 5);
    }
  }
});

Deno.test("models proposing near the 31-bit end of the heads' bases and after their wrap-around", () => {
  const data = sample(15, 20_000);
  const other = indented(16, 30_000);
  const tiny = new Uint8Array(10);
  // Each model takes a base above every earlier model's entries; near 2^31 the heads are cleared
  // and the bases start again at 1. A long-running process gets there after 2 GiB of content.
  for (const set of [0, 1, 2, 10]) {
    const expected = proposals(data, set);
    proposals(other, set); // entries of other content, which must not count after the wrap
    advanceBase(0x7fffffff - data.length - 2);
    assert.deepEqual(proposals(data, set), expected, `set ${set}: just below 2^31`);
    proposals(other, set);
    advanceBase(0x7fffffff - tiny.length - 2);
    proposals(tiny, set);
    assert.deepEqual(proposals(data, set), expected, `set ${set}: wrapped to 1`);
    assert.deepEqual(proposals(data, set), expected, `set ${set}: after the wrapped one`);
  }
});

function proposals(data: Uint8Array, set: number): number[] {
  const model = new DeflateModel(data, MODEL_PARAMS[set]);
  const out: number[] = [];
  while (model.next()) {
    out.push(model.proposal.at, model.proposal.length, model.proposal.distance);
    model.accept();
  }
  return out;
}
