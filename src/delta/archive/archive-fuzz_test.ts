/**
 * Inputs the token form must refuse or keep exactly: hand-coded deflate streams with rare or
 * invalid codes, a zip member whose data does not parse, and a seeded fuzz loop of damaged
 * archives that must each answer ok:false or rebuild exactly, without throwing or hanging.
 */
import assert from "node:assert/strict";
import { deflateRawSync, gzipSync, inflateRawSync } from "node:zlib";
import { zipSync } from "fflate";
import { sample } from "../../testing/archive-samples.ts";
import { type ArchiveFormat, contractFile, expandFile, type ExpandResult } from "./token-files.ts";

/** Expands `bytes`; when that succeeds, checks the rebuilt bytes equal them. */
async function check(
  format: ArchiveFormat,
  bytes: Uint8Array,
  dir: string,
): Promise<ExpandResult> {
  Deno.writeFileSync(`${dir}/in`, bytes);
  const result = await expandFile(format, `${dir}/in`, `${dir}/x`);
  if (!result.ok) return result;
  await contractFile(`${dir}/x`, `${dir}/out`);
  const back = Deno.readFileSync(`${dir}/out`);
  assert.equal(back.length, bytes.length);
  assert.ok(back.every((byte, i) => byte === bytes[i]), "rebuilt bytes differ");
  return result;
}

/** Deflate bits by hand: `bits(value, n)` low bit first, `code(value, n)` most significant first. */
function handCoded(write: (bits: (v: number, n: number) => void) => void): Uint8Array {
  const out: number[] = [];
  let acc = 0;
  let count = 0;
  const bits = (value: number, n: number) => {
    for (let i = 0; i < n; i++) {
      acc |= ((value >> i) & 1) << count++;
      if (count === 8) {
        out.push(acc);
        acc = 0;
        count = 0;
      }
    }
  };
  write(bits);
  if (count > 0) out.push(acc);
  return new Uint8Array(out);
}

/** A fixed-code symbol's bits (RFC 1951 3.2.6), sent most significant bit first. */
function fixedSymbol(bits: (v: number, n: number) => void, symbol: number): void {
  const [code, length] = symbol < 144
    ? [0x30 + symbol, 8]
    : symbol < 256
    ? [0x190 + symbol - 144, 9]
    : symbol < 280
    ? [symbol - 256, 7]
    : [0xc0 + symbol - 280, 8];
  for (let i = length - 1; i >= 0; i--) bits((code >> i) & 1, 1);
}

function gzipAround(deflate: Uint8Array): Uint8Array {
  return new Uint8Array([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, ...deflate, 0, 0, 0, 0, 0, 0, 0, 0]);
}

Deno.test("length 258 coded as 284 + 31 and odd padding bits are kept exactly", async () => {
  const dir = Deno.makeTempDirSync();
  try {
    const deflate = handCoded((bits) => {
      bits(1, 1); // BFINAL
      bits(1, 2); // fixed Huffman
      fixedSymbol(bits, 0x61);
      fixedSymbol(bits, 284);
      bits(31, 5); // 227 + 31 = 258
      bits(0, 5); // distance code 0: distance 1
      fixedSymbol(bits, 256);
      bits(0b101, 3); // non-zero padding
    });
    assert.equal(inflateRawSync(deflate).length, 259);
    const result = await check("gzip", gzipAround(deflate), dir);
    assert.ok(result.ok && result.deflateStreams === 1, JSON.stringify(result));
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("a block longer than a segment (matches and literals) round trips exactly", async () => {
  const dir = Deno.makeTempDirSync();
  try {
    const text = sample(12, 1_200_000);
    const deflate = handCoded((bits) => {
      bits(1, 1);
      bits(1, 2);
      fixedSymbol(bits, 0x61);
      // 70 000 matches (more than a segment holds), then 1.2 MB of literals (more run bytes).
      for (let i = 0; i < 70_000; i++) {
        fixedSymbol(bits, 257);
        bits(0, 5);
      }
      for (const byte of text) fixedSymbol(bits, byte);
      fixedSymbol(bits, 256);
    });
    assert.equal(inflateRawSync(deflate).length, 1 + 3 * 70_000 + text.length);
    const result = await check("gzip", gzipAround(deflate), dir);
    assert.ok(result.ok && result.deflateStreams === 1, JSON.stringify(result));
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("invalid codes answer ok:false", async () => {
  const dir = Deno.makeTempDirSync();
  try {
    const distance30 = handCoded((bits) => {
      bits(1, 1);
      bits(1, 2);
      fixedSymbol(bits, 0x61);
      fixedSymbol(bits, 257);
      for (let i = 4; i >= 0; i--) bits((30 >> i) & 1, 1); // distance code 30, a Huffman code
      fixedSymbol(bits, 256);
    });
    const refused = await check("gzip", gzipAround(distance30), dir);
    assert.ok(!refused.ok && /distance code/.test(refused.reason), JSON.stringify(refused));
    const type3 = handCoded((bits) => bits(0b111, 3));
    const reserved = await check("gzip", gzipAround(type3), dir);
    assert.ok(!reserved.ok && /type 3/.test(reserved.reason));
    const length286 = handCoded((bits) => {
      bits(1, 1);
      bits(1, 2);
      fixedSymbol(bits, 286);
    });
    assert.ok(!(await check("gzip", gzipAround(length286), dir)).ok);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("a zip member whose data does not parse is kept RAW, the others expand", async () => {
  const dir = Deno.makeTempDirSync();
  try {
    const zip = zipSync({
      "a.txt": [sample(5, 20_000), { level: 6 }],
      "b.txt": [sample(6, 20_000), { level: 6 }],
    });
    // Damage the start of the first member's deflate data (after its 30-byte header and name).
    zip[30 + 5] = 0xff;
    const result = await check("zip", zip, dir);
    assert.ok(result.ok && result.deflateStreams === 1, JSON.stringify(result));
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("damaged archives (seeded fuzz) answer ok:false or rebuild exactly", async () => {
  const dir = Deno.makeTempDirSync();
  let state = 12345;
  const next = () => (state = (Math.imul(state, 1103515245) + 12345) >>> 0);
  const bases: [ArchiveFormat, Uint8Array][] = [
    ["gzip", gzipSync(sample(7, 30_000), { level: 6 })],
    ["gzip", gzipSync(sample(8, 3_000), { level: 1 })],
    ["zip", zipSync({ "x.txt": [sample(9, 20_000), { level: 9 }], "y": sample(10, 500) })],
    ["gzip", deflateRawSync(sample(11, 5_000))], // not a gzip at all
  ];
  const outcomes = { ok: 0, refused: 0 };
  try {
    for (let round = 0; round < 240; round++) {
      const [format, base] = bases[round % bases.length];
      let bytes = new Uint8Array(base);
      const kind = next() % 3;
      if (kind === 0) bytes = bytes.subarray(0, next() % bytes.length);
      else {
        const flips = 1 + (next() % 4);
        for (let i = 0; i < flips; i++) bytes[next() % bytes.length] ^= 1 << (next() % 8);
      }
      if (kind === 2) bytes = new Uint8Array([...bytes, ...bytes.subarray(0, next() % 200)]);
      const result = await check(format, bytes, dir);
      if (result.ok) outcomes.ok++;
      else {
        assert.ok(result.reason.length > 0);
        outcomes.refused++;
      }
    }
    // Both outcomes occur: the loop does exercise refusals and exact rebuilds of damaged input.
    assert.ok(outcomes.ok > 20 && outcomes.refused > 20, JSON.stringify(outcomes));
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});
