import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import {
  algorithmForHeader,
  CHECKSUM_ALGORITHMS,
  ChecksumAccumulator,
  checksumHeaderName,
  crc32,
  crc32c,
  toBase64,
} from "./checksums.ts";

const enc = new TextEncoder();
const CHECK = enc.encode("123456789");

/** Byte-at-a-time CRC straight from the definition, to check the sliced tables against. */
function referenceCrc(polynomial: number, data: Uint8Array): number {
  let crc = 0xFFFFFFFF;
  for (const byte of data) {
    crc ^= byte;
    for (let bit = 0; bit < 8; bit++) crc = crc & 1 ? (crc >>> 1) ^ polynomial : crc >>> 1;
  }
  return (crc ^ 0xFFFFFFFF) >>> 0;
}

function randomBytes(n: number, seed: number): Uint8Array {
  const out = new Uint8Array(n);
  let x = seed || 1;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}

Deno.test("crc32 and crc32c match the standard check values", () => {
  assert.equal(crc32(CHECK), 0xCBF43926);
  assert.equal(crc32c(CHECK), 0xE3069283);
  assert.equal(crc32(new Uint8Array(0)), 0);
  assert.equal(crc32c(new Uint8Array(0)), 0);
});

Deno.test("sliced CRCs equal the bitwise definition for every length 0..100 and odd offsets", () => {
  const data = randomBytes(200, 7);
  for (let len = 0; len <= 100; len++) {
    for (const offset of [0, 1, 3, 7]) {
      const view = data.subarray(offset, offset + len);
      assert.equal(crc32(view), referenceCrc(0xEDB88320, view), `crc32 len ${len}`);
      assert.equal(crc32c(view), referenceCrc(0x82F63B78, view), `crc32c len ${len}`);
    }
  }
});

Deno.test("CRCs continue across pieces: crc(b, crc(a)) === crc(a + b)", () => {
  const data = randomBytes(1000, 3);
  for (const cut of [0, 1, 5, 8, 9, 500, 999, 1000]) {
    const a = data.subarray(0, cut);
    const b = data.subarray(cut);
    assert.equal(crc32(b, crc32(a)), crc32(data));
    assert.equal(crc32c(b, crc32c(a)), crc32c(data));
  }
});

Deno.test("ChecksumAccumulator gives S3's base64 of the big-endian digest", () => {
  const values = new Map<string, string>();
  for (const algorithm of CHECKSUM_ALGORITHMS) {
    const acc = new ChecksumAccumulator(algorithm);
    acc.update(CHECK.subarray(0, 4));
    acc.update(new Uint8Array(0));
    acc.update(CHECK.subarray(4));
    values.set(algorithm, acc.digestBase64());
    assert.equal(acc.digestBase64(), values.get(algorithm), "digest is stable");
  }
  assert.equal(values.get("crc32"), "y/Q5Jg=="); // 0xCBF43926
  assert.equal(values.get("crc32c"), "4waSgw=="); // 0xE3069283
  assert.equal(values.get("sha1"), createHash("sha1").update(CHECK).digest("base64"));
  assert.equal(values.get("sha256"), createHash("sha256").update(CHECK).digest("base64"));
});

Deno.test("ChecksumAccumulator refuses input after digest and unknown algorithms", () => {
  const acc = new ChecksumAccumulator("sha256");
  acc.digest();
  assert.throws(() => acc.update(CHECK), /already finished/);
  assert.throws(() => new ChecksumAccumulator("md5" as never), TypeError);
});

Deno.test("header names map to algorithms both ways", () => {
  for (const algorithm of CHECKSUM_ALGORITHMS) {
    assert.equal(algorithmForHeader(checksumHeaderName(algorithm)), algorithm);
  }
  assert.equal(algorithmForHeader("X-Amz-Checksum-CRC32C"), "crc32c");
  assert.equal(algorithmForHeader("x-amz-checksum-crc64nvme"), "crc64nvme");
  assert.equal(algorithmForHeader("x-amz-checksum-crc128"), undefined);
  assert.equal(algorithmForHeader("x-amz-checksum-"), undefined);
  assert.equal(algorithmForHeader("content-md5"), undefined);
  assert.equal(ChecksumAccumulator.forHeader("x-amz-checksum-sha1")?.algorithm, "sha1");
  assert.equal(ChecksumAccumulator.forHeader("x-amz-meta-x"), undefined);
});

Deno.test("toBase64 handles every byte value", () => {
  const all = Uint8Array.from({ length: 256 }, (_, i) => i);
  assert.equal(toBase64(all), btoa(String.fromCharCode(...all)));
});
