/**
 * The file → directory conversion is crash-safe: a crash after any step leaves the old state or
 * the new one, both fully readable, and the next start clears what the crash left in the temp
 * directory. A throwing hook stands in for the crash; "restart" ages the temp entries (as if a
 * previous process had made them) and reopens the backend.
 */
import assert from "node:assert/strict";
import { FilesystemBackend } from "./filesystem-backend.ts";
import { metaFor } from "../../testing/backend-conformance.ts";

const STEPS = [1, 2, 3, 4, 5];

async function put(backend: FilesystemBackend, key: string, body: string) {
  const staged = await backend.stageObject("b", key, new Blob([body]).stream());
  try {
    return await staged.commit(metaFor(new TextEncoder().encode(body)));
  } catch (err) {
    await staged.abort();
    throw err;
  }
}

async function text(backend: FilesystemBackend, key: string): Promise<string | null> {
  const got = await backend.getObject("b", key);
  return got ? await new Response(got.body).text() : null;
}

async function restart(root: string): Promise<FilesystemBackend> {
  const past = new Date(Date.now() - 3_600_000);
  for await (const entry of Deno.readDir(`${root}/.svc/tmp`)) {
    await Deno.utime(`${root}/.svc/tmp/${entry.name}`, past, past);
  }
  return await FilesystemBackend.open(root);
}

for (const step of STEPS) {
  Deno.test(`a crash after conversion step ${step} loses nothing`, async () => {
    const root = await Deno.makeTempDir({ prefix: "svc-nesting-" });
    try {
      let crashing = false;
      const first = await FilesystemBackend.open(root, {
        onConversionStep: (at) => {
          if (crashing && at === step) throw new Error(`simulated crash after step ${at}`);
        },
      });
      await first.createBucket("b");
      await put(first, "a", "old a");
      await put(first, "a0", "neighbour");
      crashing = true;
      await assert.rejects(put(first, "a/b", "below"), /simulated crash/);
      // Old state before the swap (step 4), new state from it on: either way "a" reads intact.
      const isDirectory = (await Deno.lstat(`${root}/b/a`)).isDirectory;
      assert.equal(isDirectory, step >= 4, "the swap is the single switch-over");
      const backend = await restart(root);
      assert.deepEqual(await Array.fromAsync(Deno.readDir(`${root}/.svc/tmp`)), []);
      assert.equal(await text(backend, "a"), "old a");
      assert.equal((await backend.headObject("b", "a"))?.meta.size, 5);
      assert.equal(await text(backend, "a/b"), null);
      const listed = await backend.listObjects("b", { prefix: "", maxKeys: 10 });
      assert.deepEqual(listed.objects.map((o) => o.key), ["a", "a0"]);
      // The interrupted write succeeds when retried, and both keys stay.
      await put(backend, "a/b", "below");
      assert.equal(await text(backend, "a"), "old a");
      assert.equal(await text(backend, "a/b"), "below");
      const after = await backend.listObjects("b", { prefix: "", maxKeys: 10 });
      assert.deepEqual(after.objects.map((o) => o.key), ["a", "a/b", "a0"]);
    } finally {
      await Deno.remove(root, { recursive: true });
    }
  });
}
