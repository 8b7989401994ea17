import assert from "node:assert/strict";
import {
  CHUNK_BYTES,
  chunkAt,
  type ChunkCheck,
  ChunkHasher,
  chunkLength,
  chunkStart,
  digestFile,
  findDamage,
  PROCESS_CHUNK_CHECK,
  SHA256_CHECK,
} from "./cache-entry.ts";
import { openVerifiedRange } from "./verified-file.ts";

async function drain(stream: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

/** Each check (the MAC where libcrypto has it, and SHA-256) over a 2.5 MiB file. */
for (const [name, check] of [["process", PROCESS_CHUNK_CHECK], ["sha256", SHA256_CHECK]] as const) {
  Deno.test(`verified ranges (${name}): exact bytes; damage is found before it is sent`, async () => {
    const dir = await Deno.makeTempDir();
    const path = `${dir}/entry`;
    const data = new Uint8Array(CHUNK_BYTES * 2 + CHUNK_BYTES / 2).map((_, i) => (i * 13) & 255);
    try {
      await Deno.writeFile(path, data);
      const { chunks, size } = await digestFile(path, undefined, check as ChunkCheck);
      // 128 + 256 + 512 KiB, then 1 MiB, then the last 640 KiB.
      assert.equal(chunks.length, 5);
      assert.equal(await findDamage(path, chunks, undefined, check), undefined);
      const read = async (start: number, end: number, damaged: number[] = []) => {
        const body = await openVerifiedRange({
          file: await Deno.open(path),
          chunks,
          size,
          start,
          end,
          check,
          damaged: (chunk) => {
            damaged.push(chunk);
            return new Error(`chunk ${chunk} is damaged`);
          },
        });
        return body === null ? null : await drain(body);
      };
      assert.deepEqual(await read(0, size - 1), data);
      for (const boundary of [1, 2, 3, 4].map(chunkStart)) {
        const from = boundary - 10;
        assert.deepEqual(await read(from, from + 99), data.subarray(from, from + 100));
      }
      // One flipped byte in the fourth chunk (the first whole MiB).
      const at = chunkStart(3) + 7;
      const file = await Deno.open(path, { write: true });
      await file.seek(at, Deno.SeekMode.Start);
      await file.write(new Uint8Array([data[at] ^ 1]));
      file.close();
      assert.equal(await findDamage(path, chunks, undefined, check), "chunk 3 is damaged");
      const damaged: number[] = [];
      assert.equal(await read(at - 7, at + 10, damaged), null, "before a byte");
      assert.deepEqual(damaged, [3]);
      await assert.rejects(read(0, size - 1), /chunk 3 is damaged/, "the stream is cut");
      assert.deepEqual(await read(0, 99), data.subarray(0, 100), "an intact chunk still reads");
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });
}

Deno.test("chunks: each offset in the chunk that starts at or before it; fills in parts agree", async () => {
  for (let index = 0; index < 8; index++) {
    const start = chunkStart(index);
    assert.equal(chunkStart(index + 1), start + chunkLength(index));
    for (const offset of [start, start + 1, start + chunkLength(index) - 1]) {
      assert.equal(chunkAt(offset), index, `offset ${offset}`);
    }
  }
  assert.equal(chunkLength(0), 128 << 10);
  assert.equal(chunkLength(5), CHUNK_BYTES);
  // A fill fed in odd parts seals the same chunks digestFile reads.
  const dir = await Deno.makeTempDir();
  try {
    const data = new Uint8Array(3 * CHUNK_BYTES + 12345).map((_, i) => (i * 7) & 255);
    await Deno.writeFile(`${dir}/f`, data);
    const hasher = new ChunkHasher();
    for (let at = 0; at < data.length; at += 99_991) hasher.update(data.subarray(at, at + 99_991));
    const filled = hasher.finish();
    assert.equal(filled.chunks.length, chunkAt(data.length - 1) + 1);
    assert.equal(await findDamage(`${dir}/f`, filled.chunks), undefined);
    assert.equal(filled.sha256, (await digestFile(`${dir}/f`)).sha256);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("verified ranges: damage found after bytes were sent goes on from `resume`", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const data = new Uint8Array(3 * CHUNK_BYTES).map((_, i) => (i * 31) & 255);
    await Deno.writeFile(`${dir}/f`, data);
    const { chunks, size } = await digestFile(`${dir}/f`);
    const at = chunkStart(4) + 5; // past the bytes the first chunks send
    const file = await Deno.open(`${dir}/f`, { write: true });
    await file.seek(at, Deno.SeekMode.Start);
    await file.write(new Uint8Array([data[at] ^ 1]));
    file.close();
    const open = (resume?: (offset: number) => Promise<ReadableStream<Uint8Array> | null>) =>
      openVerifiedRange({
        file: Deno.openSync(`${dir}/f`),
        chunks,
        size,
        start: 10,
        end: size - 1,
        damaged: (chunk) => new Error(`chunk ${chunk} is damaged`),
        resume,
      });
    const offsets: number[] = [];
    const resumed = await open((offset) => {
      offsets.push(offset);
      return Promise.resolve(new Blob([data.subarray(offset)]).stream());
    });
    assert.deepEqual(await drain(resumed!), data.subarray(10), "the range whole and exact");
    assert.deepEqual(offsets, [chunkStart(4)], "resumed where the damaged chunk starts");
    const refused = await open(() => Promise.resolve(null));
    await assert.rejects(drain(refused!), /chunk 4 is damaged/, "nothing to go on with: cut");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
