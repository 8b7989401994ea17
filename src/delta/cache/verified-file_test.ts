import assert from "node:assert/strict";
import {
  CHUNK_BYTES,
  type ChunkCheck,
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
      assert.equal(chunks.length, 3);
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
      const from = CHUNK_BYTES - 10;
      assert.deepEqual(await read(from, from + 99), data.subarray(from, from + 100));
      // One flipped byte in the second chunk.
      const file = await Deno.open(path, { write: true });
      await file.seek(CHUNK_BYTES + 7, Deno.SeekMode.Start);
      await file.write(new Uint8Array([data[CHUNK_BYTES + 7] ^ 1]));
      file.close();
      assert.equal(await findDamage(path, chunks, undefined, check), "chunk 1 is damaged");
      const damaged: number[] = [];
      assert.equal(await read(CHUNK_BYTES, CHUNK_BYTES + 10, damaged), null, "before a byte");
      assert.deepEqual(damaged, [1]);
      await assert.rejects(read(0, size - 1), /chunk 1 is damaged/, "the stream is cut");
      assert.deepEqual(await read(0, 99), data.subarray(0, 100), "an intact chunk still reads");
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });
}
