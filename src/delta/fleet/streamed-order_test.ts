/**
 * A write streamed straight to the backend (over `max_object_size`) is ordered like every other
 * write of its key. Three delta stores over one filesystem backend (three svc instances in one
 * process) are stepped through the interleaving that lost the key when such a write committed
 * unconditionally with a stamp taken before its upload:
 *
 * 1. B (streamed) reaches its commit; its upload is held;
 * 2. A commits a delta `x.delta`; its cleanup is held before it looks at `x`;
 * 3. C commits `x` passthrough (ordered, stamped after A), sees A's delta older and is held
 *    before removing it;
 * 4. B's upload lands on `x`; A's cleanup then sees B's `x` and removes the older of the two;
 *    C removes A's delta.
 *
 * With B's early stamp A judged B's `x` older than its delta and removed it, while C removed the
 * delta: both names gone, every write answered. Ordered, B's commit lands after C's `x` only by
 * replacing it (`If-Match`), stamped after it, so A's cleanup removes its own delta instead.
 */
import assert from "node:assert/strict";
import { FilesystemBackend } from "../../storage/fs/filesystem-backend.ts";
import type { Backend, StagedObject } from "../../storage/mod.ts";
import { probeXdelta3, Xdelta3Codec } from "../codec/codec.ts";
import { CodecPool } from "../codec/codec-pool.ts";
import { DeltaBackend } from "../delta-backend.ts";
import { metaFor, randomBytes } from "../../testing/object-fixtures.ts";
import { deltaTestSettings } from "../../testing/delta-fixtures.ts";

const probe = await probeXdelta3();
const KEY = "dumps/db.sql";
const SIZE = 64 * 1024;

/** A promise with its resolve, for stepping the stores. */
function signal() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => resolve = r);
  return { promise, resolve };
}

/** `inner` with hooks before chosen calls (`before(name, args)` may wait). */
function hooked(
  inner: Backend,
  before: (name: string, args: unknown[]) => Promise<void> | void,
): Backend {
  return new Proxy(inner, {
    get(target, name) {
      const value = Reflect.get(target, name);
      if (typeof value !== "function") return value;
      return async (...args: unknown[]) => {
        await before(String(name), args);
        return await value.apply(target, args);
      };
    },
  });
}

function store(inner: Backend, spool: string, maxObjectSize: number): DeltaBackend {
  return new DeltaBackend({
    inner,
    codec: new Xdelta3Codec({ tempDir: spool, acceptsA: probe.acceptsA }),
    pool: new CodecPool(2),
    spoolDir: spool,
    settings: () => deltaTestSettings({ maxObjectSize, bucketDeltaspace: () => "parent" }),
  });
}

async function put(s: DeltaBackend, bytes: Uint8Array<ArrayBuffer>, key = KEY): Promise<void> {
  const staged = await s.stageObject("b", key, new Blob([bytes]).stream(), undefined, bytes.length);
  try {
    // One second for all: the writers' stamps decide which stored name is newer.
    await staged.commit(metaFor(bytes, { lastModified: 1_700_000_000_000 }));
  } catch (err) {
    await staged.abort();
    throw err;
  }
}

Deno.test({
  name: "streamed order: a streamed write landing late never leaves the key without a name",
  ignore: !probe.available,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "svc-streamed-order-" });
    try {
      const fs = await FilesystemBackend.open(`${dir}/data`);
      for (const name of ["a", "b", "c"]) await Deno.mkdir(`${dir}/${name}`);
      const bWaits = signal(); // B reached its upload
      const release = signal(); // B's upload may land
      const landed = signal(); // B's upload landed
      const aLooks = signal(); // A's cleanup wants to look at `x`
      const cRemoves = signal(); // C's cleanup wants to remove `x.delta`
      const aActed = signal(); // A's cleanup removed something

      // B's staged object: its commits wait for `release`, then report when one landed.
      const bStaging: Backend = new Proxy(fs as Backend, {
        get(target, name) {
          if (name !== "stageObject") return Reflect.get(target, name);
          return async (...args: Parameters<Backend["stageObject"]>) => {
            const staged = await target.stageObject(...args);
            const held: StagedObject = {
              size: staged.size,
              commit: async (meta, condition) => {
                bWaits.resolve();
                await release.promise;
                const info = await staged.commit(meta, condition);
                landed.resolve();
                return info;
              },
              abort: () => staged.abort(),
            };
            return held;
          };
        },
      });
      const streamer = store(bStaging, `${dir}/b`, SIZE / 2);
      const a = store(
        hooked(fs, async (name, args) => {
          if (name === "headObject" && args[1] === KEY) {
            aLooks.resolve();
            await landed.promise;
          }
          if (name === "deleteObject" && String(args[1]).startsWith(KEY)) aActed.resolve();
        }),
        `${dir}/a`,
        1 << 30,
      );
      const c = store(
        hooked(fs, async (name, args) => {
          if (name === "deleteObject" && args[1] === `${KEY}.delta`) {
            cRemoves.resolve();
            await aActed.promise;
          }
        }),
        `${dir}/c`,
        1 << 30,
      );
      await a.createBucket("b");
      // The folder's baseline, so A's write is a delta.
      const base = randomBytes(SIZE);
      await put(a, base, "dumps/anchor.sql");

      const large = randomBytes(SIZE);
      const streamed = put(streamer, large);
      await bWaits.promise;
      await new Promise((r) => setTimeout(r, 5)); // stamps in order: B, then A, then C
      const small = base.slice();
      small.set(new TextEncoder().encode("a small change"), 100);
      const delta = put(a, small);
      delta.finally(() => aActed.resolve()).catch(() => {}); // C never waits past A's answer
      await aLooks.promise;
      assert.ok(await fs.headObject("b", `${KEY}.delta`), "A's write is a delta");
      await new Promise((r) => setTimeout(r, 5));
      const plain = randomBytes(SIZE / 4); // no delta beats the ratio: passthrough
      const passthrough = put(c, plain);
      await cRemoves.promise;
      release.resolve();
      await Promise.all([streamed, delta, passthrough]);

      const names = [await fs.headObject("b", KEY), await fs.headObject("b", `${KEY}.delta`)];
      assert.ok(names.some((n) => n !== null), "the key still has a stored name");
      // B's upload landed last, ordered after C's `x`: it is the key's write now, everywhere.
      for (const s of [a, c, streamer]) {
        const found = await s.getObject("b", KEY);
        assert.ok(found, "every instance reads the key");
        assert.deepEqual(new Uint8Array(await new Response(found.body).arrayBuffer()), large);
      }
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
