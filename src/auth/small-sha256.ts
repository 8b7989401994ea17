/**
 * SHA-256 and HMAC-SHA256 in plain JavaScript, for the many tiny inputs of a streaming
 * chunk-signature chain. Every node:crypto call is a trip into the runtime costing ~2 µs
 * (createHash) to ~8-12 µs (createHmac with a fresh key) whatever the input size, and an
 * aws-chunked body may carry one chunk per byte: each chunk needs one sha256 of its data and one
 * HMAC of a ~200-byte string to sign. Here the HMAC key's inner and outer pad blocks are
 * compressed once per request (HmacKey), so a chunk's HMAC is the few blocks of its message plus
 * one outer block, with no allocation beyond the hex string. Large inputs belong to node:crypto,
 * which is far faster per byte (chunk-signatures.ts picks by size).
 *
 * FIPS 180-4 and RFC 2104; checked against node:crypto in small-sha256_test.ts.
 */

const K = new Uint32Array([
  0x428a2f98,
  0x71374491,
  0xb5c0fbcf,
  0xe9b5dba5,
  0x3956c25b,
  0x59f111f1,
  0x923f82a4,
  0xab1c5ed5,
  0xd807aa98,
  0x12835b01,
  0x243185be,
  0x550c7dc3,
  0x72be5d74,
  0x80deb1fe,
  0x9bdc06a7,
  0xc19bf174,
  0xe49b69c1,
  0xefbe4786,
  0x0fc19dc6,
  0x240ca1cc,
  0x2de92c6f,
  0x4a7484aa,
  0x5cb0a9dc,
  0x76f988da,
  0x983e5152,
  0xa831c66d,
  0xb00327c8,
  0xbf597fc7,
  0xc6e00bf3,
  0xd5a79147,
  0x06ca6351,
  0x14292967,
  0x27b70a85,
  0x2e1b2138,
  0x4d2c6dfc,
  0x53380d13,
  0x650a7354,
  0x766a0abb,
  0x81c2c92e,
  0x92722c85,
  0xa2bfe8a1,
  0xa81a664b,
  0xc24b8b70,
  0xc76c51a3,
  0xd192e819,
  0xd6990624,
  0xf40e3585,
  0x106aa070,
  0x19a4c116,
  0x1e376c08,
  0x2748774c,
  0x34b0bcb5,
  0x391c0cb3,
  0x4ed8aa4a,
  0x5b9cca4f,
  0x682e6ff3,
  0x748f82ee,
  0x78a5636f,
  0x84c87814,
  0x8cc70208,
  0x90befffa,
  0xa4506ceb,
  0xbef9a3f7,
  0xc67178f2,
]);
const INITIAL = new Uint32Array([
  0x6a09e667,
  0xbb67ae85,
  0x3c6ef372,
  0xa54ff53a,
  0x510e527f,
  0x9b05688c,
  0x1f83d9ab,
  0x5be0cd19,
]);
const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));
const BLOCK = 64;

/** Scratch space, reused: JavaScript runs one call at a time. */
const w = new Uint32Array(64);
let scratch = new Uint8Array(1024);

/** Folds the 64-byte blocks of `bytes[0, length)` (a multiple of 64) into `state`. */
function compress(state: Uint32Array, bytes: Uint8Array, length: number): void {
  for (let at = 0; at < length; at += BLOCK) {
    for (let i = 0; i < 16; i++) {
      const j = at + i * 4;
      w[i] = (bytes[j] << 24) | (bytes[j + 1] << 16) | (bytes[j + 2] << 8) | bytes[j + 3];
    }
    for (let i = 16; i < 64; i++) {
      const x = w[i - 15], y = w[i - 2];
      const s0 = ((x >>> 7) | (x << 25)) ^ ((x >>> 18) | (x << 14)) ^ (x >>> 3);
      const s1 = ((y >>> 17) | (y << 15)) ^ ((y >>> 19) | (y << 13)) ^ (y >>> 10);
      w[i] = (w[i - 16] + s0 + w[i - 7] + s1) | 0;
    }
    let a = state[0], b = state[1], c = state[2], d = state[3];
    let e = state[4], f = state[5], g = state[6], h = state[7];
    for (let i = 0; i < 64; i++) {
      const s1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
      const t1 = (h + s1 + ((e & f) ^ (~e & g)) + K[i] + w[i]) | 0;
      const s0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
      const t2 = (s0 + ((a & b) ^ (a & c) ^ (b & c))) | 0;
      h = g;
      g = f;
      f = e;
      e = (d + t1) | 0;
      d = c;
      c = b;
      b = a;
      a = (t1 + t2) | 0;
    }
    state[0] = (state[0] + a) | 0;
    state[1] = (state[1] + b) | 0;
    state[2] = (state[2] + c) | 0;
    state[3] = (state[3] + d) | 0;
    state[4] = (state[4] + e) | 0;
    state[5] = (state[5] + f) | 0;
    state[6] = (state[6] + g) | 0;
    state[7] = (state[7] + h) | 0;
  }
}

function room(bytes: number): Uint8Array {
  if (scratch.length < bytes) scratch = new Uint8Array(bytes * 2);
  return scratch;
}

/**
 * Pads `buffer[0, length)` (its content; `before` bytes were already compressed into `state`)
 * and compresses the rest. `buffer` must have 72 spare bytes after `length`.
 */
function finish(state: Uint32Array, buffer: Uint8Array, length: number, before: number): void {
  const total = (before + length) * 8;
  buffer[length] = 0x80;
  let end = length + 1;
  while (end % BLOCK !== 56) buffer[end++] = 0;
  // Bit length, big-endian, as 64 bits (inputs here are far below 2^32 bytes).
  const high = Math.floor(total / 2 ** 32);
  buffer[end++] = high >>> 24;
  buffer[end++] = high >>> 16;
  buffer[end++] = high >>> 8;
  buffer[end++] = high;
  buffer[end++] = total >>> 24;
  buffer[end++] = total >>> 16;
  buffer[end++] = total >>> 8;
  buffer[end++] = total;
  compress(state, buffer, end);
}

function toHex(state: Uint32Array): string {
  let out = "";
  for (let i = 0; i < 8; i++) {
    const v = state[i];
    out += HEX[v >>> 24] + HEX[(v >>> 16) & 255] + HEX[(v >>> 8) & 255] + HEX[v & 255];
  }
  return out;
}

function toBytes(state: Uint32Array, out: Uint8Array, at: number): void {
  for (let i = 0; i < 8; i++) {
    const v = state[i];
    out[at + i * 4] = v >>> 24;
    out[at + i * 4 + 1] = v >>> 16;
    out[at + i * 4 + 2] = v >>> 8;
    out[at + i * 4 + 3] = v;
  }
}

/** Hex SHA-256 of the concatenated views (meant for small inputs). */
export function sha256HexOf(views: readonly Uint8Array[]): string {
  let length = 0;
  for (const view of views) length += view.length;
  const buffer = room(length + 72);
  let at = 0;
  for (const view of views) {
    buffer.set(view, at);
    at += view.length;
  }
  const state = new Uint32Array(INITIAL);
  const whole = length - (length % BLOCK);
  compress(state, buffer, whole);
  buffer.copyWithin(0, whole, length);
  finish(state, buffer, length - whole, whole);
  return toHex(state);
}

/** An HMAC-SHA256 key with its inner and outer pad blocks already compressed. */
export class HmacKey {
  readonly #inner = new Uint32Array(INITIAL);
  readonly #outer = new Uint32Array(INITIAL);

  constructor(key: Uint8Array) {
    if (key.length > BLOCK) throw new RangeError("HMAC keys longer than 64 bytes are not needed");
    const pad = new Uint8Array(BLOCK);
    for (let i = 0; i < BLOCK; i++) pad[i] = (key[i] ?? 0) ^ 0x36;
    compress(this.#inner, pad, BLOCK);
    for (let i = 0; i < BLOCK; i++) pad[i] = (key[i] ?? 0) ^ 0x5c;
    compress(this.#outer, pad, BLOCK);
  }

  /** Hex HMAC-SHA256 of a string of Latin-1 / ASCII characters (a SigV4 string to sign). */
  hexOfAscii(message: string): string {
    const length = message.length;
    const buffer = room(length + 72);
    for (let i = 0; i < length; i++) {
      const code = message.charCodeAt(i);
      if (code > 0xff) throw new RangeError("hexOfAscii takes single-byte characters only");
      buffer[i] = code;
    }
    const inner = new Uint32Array(this.#inner);
    const whole = length - (length % BLOCK);
    compress(inner, buffer, whole);
    buffer.copyWithin(0, whole, length);
    finish(inner, buffer, length - whole, BLOCK + whole);
    const outer = new Uint32Array(this.#outer);
    toBytes(inner, buffer, 0);
    finish(outer, buffer, 32, BLOCK);
    return toHex(outer);
  }
}

/**
 * Constant-time comparison of a computed lowercase hex signature with a client's (any case):
 * the time depends only on the lengths, never on where they differ, and nothing is allocated.
 */
export function hexEqual(expected: string, given: string): boolean {
  if (expected.length !== given.length) return false;
  let diff = 0;
  for (let i = 0; i < expected.length; i++) {
    // ASCII letters fold to lowercase with 0x20; digits already have that bit set.
    diff |= expected.charCodeAt(i) ^ (given.charCodeAt(i) | 0x20);
  }
  return diff === 0;
}
