import assert from "node:assert/strict";
import { strToU8, zipSync } from "fflate";
import { BackupFormatError, readZip, zipStream } from "./backup-zip.ts";

const LIMITS = { maxEntryBytes: 1 << 20, maxTotalBytes: 2 << 20, maxEntries: 8 };

async function collect(stream: ReadableStream<Uint8Array>): Promise<Uint8Array[]> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}

function refusal(fn: () => unknown, pattern: RegExp, tooLarge = false): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof BackupFormatError, String(err));
    assert.match(err.message, pattern);
    assert.equal(err.tooLarge, tooLarge);
    return true;
  });
}

/** Offset of the first central directory header ("PK\x01\x02"). */
function centralHeader(zip: Uint8Array): number {
  for (let i = 0; i < zip.length - 4; i++) {
    if (zip[i] === 0x50 && zip[i + 1] === 0x4b && zip[i + 2] === 1 && zip[i + 3] === 2) return i;
  }
  throw new Error("no central directory");
}

Deno.test("zipStream writes entries readZip reads back, byte for byte, in several chunks", async () => {
  const big = crypto.getRandomValues(new Uint8Array(60_000));
  const chunks = await collect(zipStream([
    { name: "manifest.json", bytes: strToU8('{"a":1}') },
    { name: "big.bin", bytes: big },
    { name: "empty", bytes: new Uint8Array() },
  ]));
  assert.ok(chunks.length > 3, `${chunks.length} chunks`);
  const zip = new Uint8Array(await new Blob(chunks as Uint8Array<ArrayBuffer>[]).arrayBuffer());
  const entries = readZip(zip, LIMITS);
  assert.deepEqual([...entries.keys()], ["manifest.json", "big.bin", "empty"]);
  assert.deepEqual(entries.get("big.bin"), big);
  assert.equal(entries.get("empty")!.byteLength, 0);
});

Deno.test("readZip refuses what is not a zip, duplicates, directories and too many files", () => {
  refusal(() => readZip(strToU8("not a zip at all, just text"), LIMITS), /not a readable zip/);
  const dir = zipSync({ "d/": new Uint8Array(), "x": strToU8("x") });
  refusal(() => readZip(dir, LIMITS), /directory "d\/"/);
  const nested = zipSync({ "d/x": strToU8("x") });
  refusal(() => readZip(nested, LIMITS), /file named "d\/x"/);
  const many: Record<string, Uint8Array> = {};
  for (let i = 0; i < 9; i++) many[`f${i}`] = strToU8("x");
  refusal(() => readZip(zipSync(many), LIMITS), /more than 8 files/);
  // Two entries of one name: rename the second in both headers.
  const twice = zipSync({ "iam.json": strToU8("{}"), "iam.jsoX": strToU8("[]") });
  const text = new TextDecoder("latin1").decode(twice);
  const patched = Uint8Array.from(text.replaceAll("iam.jsoX", "iam.json"), (c) => c.charCodeAt(0));
  refusal(() => readZip(patched, LIMITS), /holds "iam.json" twice/);
});

Deno.test("readZip refuses declared sizes over the limits before inflating anything", () => {
  const big = zipSync({ "a": new Uint8Array(LIMITS.maxEntryBytes + 1) });
  refusal(() => readZip(big, LIMITS), /unpacks to 1048577 bytes/, true);
  const total = zipSync({
    "a": new Uint8Array(LIMITS.maxEntryBytes),
    "b": new Uint8Array(LIMITS.maxEntryBytes),
    "c": new Uint8Array(10),
  });
  refusal(() => readZip(total, LIMITS), /unpacks to more than/, true);
});

Deno.test("an entry that lies about its size is cut at the declared size, never inflated past it", () => {
  const zip = zipSync({ "bomb": new Uint8Array(1 << 20) });
  const header = centralHeader(zip);
  // Central directory: uncompressed size at offset 24 (little endian).
  new DataView(zip.buffer).setUint32(header + 24, 100, true);
  const entries = readZip(zip, LIMITS);
  assert.ok(entries.get("bomb")!.byteLength <= 100);
});
