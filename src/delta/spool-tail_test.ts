import assert from "node:assert/strict";
import { SpoolProgress, tailSpool } from "./spool-tail.ts";

async function collect(stream: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  for await (const chunk of stream) parts.push(chunk);
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

Deno.test("tailSpool: reads a growing file up to its end, only bytes reported complete", async () => {
  const path = await Deno.makeTempFile();
  try {
    const progress = new SpoolProgress();
    const reading = collect(tailSpool(path, progress));
    const file = await Deno.open(path, { write: true });
    const expected = new Uint8Array(3 * 1024 * 1024 + 17).map((_, i) => i % 251);
    for (let at = 0; at < expected.length; at += 100_000) {
      const part = expected.subarray(at, Math.min(expected.length, at + 100_000));
      await file.write(part);
      progress.advance(part.length);
      await new Promise((resolve) => setTimeout(resolve, 0));
    }
    // Bytes written but not reported are not read.
    await file.write(new Uint8Array([1, 2, 3]));
    file.close();
    progress.end();
    assert.deepEqual(await reading, expected);
  } finally {
    await Deno.remove(path);
  }
});

Deno.test("tailSpool: a failed upload fails the reader; an empty spool ends at once", async () => {
  const path = await Deno.makeTempFile();
  try {
    const progress = new SpoolProgress();
    const reading = collect(tailSpool(path, progress));
    progress.fail(new Error("client went away"));
    await assert.rejects(reading, /client went away/);
    const empty = new SpoolProgress();
    empty.end();
    assert.equal((await collect(tailSpool(path, empty))).length, 0);
  } finally {
    await Deno.remove(path);
  }
});
