import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { BodyDigest, type HashPlace, INLINE_LIMIT, terminateHashWorkers } from "./body-digest.ts";

function hex(algorithm: string, data: Uint8Array): string {
  return createHash(algorithm).update(data).digest("hex");
}

/** Each test twice: on OpenSSL's threads, and on the worker isolates used without libcrypto. */
function bodyTest(name: string, fn: (hashOn: HashPlace) => Promise<void>) {
  for (const hashOn of ["threads", "workers"] as const) {
    Deno.test(`body digest (${hashOn}): ${name}`, () => fn(hashOn));
  }
}

async function digestOf(data: Uint8Array, chunk: number, hashOn: HashPlace, maxBytes = Infinity) {
  const digest = new BodyDigest(maxBytes, { hashOn });
  const source = new ReadableStream<Uint8Array>({
    start(controller) {
      // Views into one buffer, as network reads often are.
      for (let i = 0; i < data.length; i += chunk) controller.enqueue(data.subarray(i, i + chunk));
      controller.close();
    },
  });
  let passed = 0;
  for await (const part of source.pipeThrough(digest.transform)) passed += part.byteLength;
  return { digests: await digest.finish(), passed, bytes: digest.bytes };
}

bodyTest("inline and off-thread paths give the same digests as a one-shot hash", async (hashOn) => {
  try {
    for (const size of [0, 1, 1000, INLINE_LIMIT, INLINE_LIMIT + 1, 5 * INLINE_LIMIT + 17]) {
      const data = crypto.getRandomValues(new Uint8Array(Math.min(size, 65536)));
      const body = new Uint8Array(size);
      for (let i = 0; i < size; i += data.length) {
        body.set(data.subarray(0, Math.min(data.length, size - i)), i);
      }
      const { digests, passed, bytes } = await digestOf(body, 65536 + 3, hashOn);
      assert.equal(passed, size);
      assert.equal(bytes, size);
      assert.equal(digests.md5, hex("md5", body), `md5 of ${size} bytes`);
      assert.equal(digests.sha256, hex("sha256", body), `sha256 of ${size} bytes`);
    }
  } finally {
    terminateHashWorkers();
  }
});

bodyTest("passing maxBytes errors the stream with EntityTooLarge", async (hashOn) => {
  try {
    await assert.rejects(
      digestOf(new Uint8Array(3 * INLINE_LIMIT), 65536, hashOn, 2 * INLINE_LIMIT),
      (err) => {
        assert.equal((err as { code?: string }).code, "EntityTooLarge");
        return true;
      },
    );
  } finally {
    terminateHashWorkers();
  }
});

bodyTest("md5 can be skipped on both paths", async (hashOn) => {
  try {
    for (const size of [10, 3 * INLINE_LIMIT]) {
      const body = new Uint8Array(size).fill(7);
      const digest = new BodyDigest(Infinity, { md5: false, hashOn });
      const source = new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(body);
          controller.close();
        },
      });
      for await (const _ of source.pipeThrough(digest.transform)) { /* drain */ }
      const digests = await digest.finish();
      assert.equal(digests.md5, "");
      assert.equal(digests.sha256, hex("sha256", body));
    }
  } finally {
    terminateHashWorkers();
  }
});

bodyTest("bodies larger than the ring, several at once, hash right", async (hashOn) => {
  try {
    // 40 MiB wraps the shared ring (SLOTS × SLOT_BYTES) more than twice, in odd-sized chunks
    // that straddle slot boundaries; three bodies share the workers at the same time.
    const bodies = [40 * INLINE_LIMIT + 5, 17 * INLINE_LIMIT + 1, 3 * INLINE_LIMIT].map((size) => {
      const body = new Uint8Array(size);
      const block = crypto.getRandomValues(new Uint8Array(65536));
      for (let i = 0; i < size; i += block.length) {
        body.set(block.subarray(0, Math.min(block.length, size - i)), i);
        block[i % block.length] ^= 0x5a; // vary the blocks so slots differ
      }
      return body;
    });
    const results = await Promise.all(bodies.map((body) => digestOf(body, 300_007, hashOn)));
    results.forEach(({ digests, passed }, i) => {
      assert.equal(passed, bodies[i].length);
      assert.equal(digests.md5, hex("md5", bodies[i]), `md5 of body ${i}`);
      assert.equal(digests.sha256, hex("sha256", bodies[i]), `sha256 of body ${i}`);
    });
  } finally {
    terminateHashWorkers();
  }
});

bodyTest(
  "a held chunk in a lent read buffer is copied before the buffer is reused",
  async (hashOn) => {
    const { lendChunk, recycleChunk, takeReadBuffer } = await import("../lib/read-buffers.ts");
    try {
      const data = crypto.getRandomValues(new Uint8Array(60_000));
      const digest = new BodyDigest(Infinity, { hashOn });
      const writer = digest.transform.writable.getWriter();
      const reader = digest.transform.readable.getReader();
      const buffer = takeReadBuffer();
      buffer.set(data);
      const chunk = buffer.subarray(0, data.length);
      lendChunk(chunk);
      const written = writer.write(chunk);
      const { value } = await reader.read();
      await written;
      // The file writer wrote it and gave the buffer back; the next read overwrites it.
      recycleChunk(value!);
      takeReadBuffer().fill(0xee);
      const closed = writer.close();
      await reader.read();
      await closed;
      const digests = await digest.finish();
      assert.equal(digests.md5, hex("md5", data));
      assert.equal(digests.sha256, hex("sha256", data));
    } finally {
      terminateHashWorkers();
    }
  },
);

Deno.test("body digest: a body dropped part way frees its hashes once their updates end", async () => {
  const { ThreadedHash } = await import("./threaded-hash.ts");
  const job = ThreadedHash.open(["md5", "sha256"]);
  if (job === null) return; // no libcrypto here: the worker path is the one in use
  const block = crypto.getRandomValues(new Uint8Array(65536));
  const body = new Uint8Array(9 << 20);
  for (let i = 0; i < body.length; i += block.length) body.set(block, i);
  const writing = job.write(body); // waits for slots: updates are running when abort comes
  await new Promise((resolve) => setTimeout(resolve, 1));
  job.abort();
  await writing;
  await job.write(body); // a write after abort is dropped, not an error
  await assert.rejects(job.finish(), /already finished/);
  // The next body gets a working job (the freed hashes are not reused).
  const next = ThreadedHash.open(["md5"])!;
  await next.write(body);
  assert.deepEqual(await next.finish(), { md5: hex("md5", body) });
});
