import assert from "node:assert/strict";
import { ChecksumAccumulator } from "./checksums.ts";
import { crc64nvme } from "./crc64nvme.ts";

const hex = ([hi, lo]: [number, number]) =>
  hi.toString(16).padStart(8, "0") + lo.toString(16).padStart(8, "0");

Deno.test("CRC-64/NVME: the catalogue's check value, empty input, and continuation", () => {
  const text = new TextEncoder().encode("123456789");
  assert.equal(hex(crc64nvme(text)), "ae8b14860a799888");
  assert.equal(hex(crc64nvme(new Uint8Array())), "0000000000000000");
  assert.deepEqual(crc64nvme(text.subarray(4), crc64nvme(text.subarray(0, 4))), crc64nvme(text));
});

Deno.test("the crc64nvme accumulator answers 8 big-endian bytes, as S3 writes them", () => {
  const acc = ChecksumAccumulator.forHeader("x-amz-checksum-crc64nvme")!;
  acc.update(new TextEncoder().encode("1234"));
  acc.update(new TextEncoder().encode("56789"));
  assert.equal(
    acc.digestBase64(),
    btoa(String.fromCharCode(0xae, 0x8b, 0x14, 0x86, 0x0a, 0x79, 0x98, 0x88)),
  );
});
