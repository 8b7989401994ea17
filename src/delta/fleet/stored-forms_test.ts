/**
 * Two delta stores over one backend (two svc instances, in one process: separate locks and
 * caches) overwrite one key at once, one always as a delta, the other always passthrough, so
 * every round changes the key's stored form twice. Each round, once both writes are answered,
 * both stores read the same one of the two bodies, and only one stored name is left (the older
 * one was removed, never the newer: before settleForms both names could go).
 */
import assert from "node:assert/strict";
import { FilesystemBackend } from "../../storage/fs/filesystem-backend.ts";
import { probeXdelta3, Xdelta3Codec } from "../codec/codec.ts";
import { CodecPool } from "../codec/codec-pool.ts";
import { DeltaBackend } from "../delta-backend.ts";
import { metaFor, randomBytes } from "../../testing/object-fixtures.ts";
import { isNewerStored } from "./stored-order.ts";
import { withSourceTime } from "../layout.ts";
import type { Backend, ObjectInfo } from "../../storage/mod.ts";
import { deltaTestSettings } from "../../testing/delta-fixtures.ts";

const probe = await probeXdelta3();
const KEY = "dumps/db.sql";

/**
 * `inner` as another instance sees it over the network: every call answers after a random few
 * ms, so the two stores' steps interleave as a fleet's do.
 */
function overNetwork(inner: Backend): Backend {
  return new Proxy(inner, {
    get(target, name) {
      const value = Reflect.get(target, name);
      if (typeof value !== "function") return value;
      return async (...args: unknown[]) => {
        await new Promise((resolve) => setTimeout(resolve, Math.random() * 6));
        return await value.apply(target, args);
      };
    },
  });
}

function store(inner: FilesystemBackend, spool: string, policy?: string): DeltaBackend {
  return new DeltaBackend({
    inner: overNetwork(inner),
    codec: new Xdelta3Codec({ tempDir: spool, acceptsA: probe.acceptsA }),
    pool: new CodecPool(4),
    spoolDir: spool,
    settings: () => deltaTestSettings({ bucketDeltaspace: () => policy }),
  });
}

async function put(s: DeltaBackend, bytes: Uint8Array<ArrayBuffer>, key = KEY): Promise<void> {
  const staged = await s.stageObject("b", key, new Blob([bytes]).stream());
  await staged.commit(metaFor(bytes, { contentType: "text/plain" }));
}

async function read(s: DeltaBackend): Promise<string> {
  const found = await s.getObject("b", KEY);
  assert.ok(found, "the key exists");
  const bytes = new Uint8Array(await new Response(found.body).arrayBuffer());
  return new TextDecoder().decode(bytes.subarray(0, 16));
}

/**
 * `parent`: another key keeps the folder's baseline in use all along; `auto`: the key is alone in
 * its group, so its baseline is also retired and created again as the rounds go.
 */
for (const policy of ["parent", "auto"]) {
  Deno.test({
    name: `stored forms: concurrent overwrites from two instances never lose the key (${policy})`,
    ignore: !probe.available,
    fn: () => overwriteRounds(policy),
  });
}

async function overwriteRounds(policy: string) {
  const dir = await Deno.makeTempDir({ prefix: "svc-stored-forms-" });
  try {
    const inner = await FilesystemBackend.open(`${dir}/data`);
    await Deno.mkdir(`${dir}/a`);
    await Deno.mkdir(`${dir}/b`);
    const a = store(inner, `${dir}/a`, policy);
    const b = store(inner, `${dir}/b`, policy);
    await a.createBucket("b");
    const base = randomBytes(128 * 1024);
    const version = (tag: string, body: Uint8Array<ArrayBuffer>) => {
      const out = new Uint8Array(body);
      out.set(new TextEncoder().encode(tag.padEnd(16, " ")));
      return out;
    };
    await put(a, version("anchor", base), "dumps/anchor.sql");
    await put(a, version("seed", base));
    for (let round = 0; round < 30; round++) {
      const delta = version(`a${round}`, base); // a small change: stored as a delta
      const plain = version(`b${round}`, randomBytes(base.length)); // stored passthrough
      await Promise.all([put(a, delta), put(b, plain)]);
      const seen = [await read(a), await read(b)].map((s) => s.trim());
      assert.ok([`a${round}`, `b${round}`].includes(seen[0]), `round ${round}: ${seen}`);
      assert.equal(seen[1], seen[0], `round ${round}: both instances read the same write`);
      const names = [
        await inner.headObject("b", KEY),
        await inner.headObject("b", `${KEY}.delta`),
      ]
        .filter((info) => info !== null);
      assert.equal(names.length, 1, `round ${round}: one stored name left`);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

function stored(key: string, lastModified: number, writtenAt?: number): ObjectInfo {
  const meta = { ...metaFor(new Uint8Array()), lastModified };
  if (writtenAt !== undefined) Object.assign(meta, { writtenAt: String(writtenAt) });
  return { key, storedSize: 0, meta };
}

Deno.test("stored forms: the newer name is decided alike from either side", () => {
  const cases: Array<[ObjectInfo, ObjectInfo, "plain" | "delta"]> = [
    // Another second of Last-Modified decides first.
    [stored("k", 2_000, 1), stored("k.delta", 1_000, 9_999), "plain"],
    // Within one second (an S3 backend's resolution), the writers' stamps decide.
    [stored("k", 1_000, 1_500), stored("k.delta", 1_000, 1_501), "delta"],
    [stored("k", 1_000, 1_502), stored("k.delta", 1_999, 1_501), "plain"],
    // Older writes without a stamp: their Last-Modified, then a tie goes to passthrough.
    [stored("k", 1_200), stored("k.delta", 1_300), "delta"],
    [stored("k", 1_000, 1_500), stored("k.delta", 1_000, 1_500), "plain"],
  ];
  for (const [plain, delta, newer] of cases) {
    assert.equal(isNewerStored(delta, plain), newer === "delta", JSON.stringify([plain, delta]));
    assert.equal(isNewerStored(plain, delta), newer === "plain", JSON.stringify([plain, delta]));
  }
});

Deno.test("stored forms: a converted delta keeps its write's place among the key's writes", () => {
  const converted = (lastModified: number, source: number, writtenAt: number) => {
    const info = stored("k.delta", lastModified, writtenAt);
    Object.assign(info.meta, { sourceLastModified: String(source) });
    return info;
  };
  const cases: Array<[ObjectInfo, ObjectInfo, "plain" | "delta"]> = [
    // The passthrough copy it was made from: a tie, the conversion replaces it (committed later,
    // seconds later on an S3 backend, which sets its own Last-Modified).
    [stored("k", 1_000, 1_500), converted(1_000, 1_000, 1_500), "delta"],
    [stored("k", 1_000, 1_500), converted(9_000, 1_000, 1_500), "delta"],
    // A write that came after the original, committed before the conversion landed: it stays
    // newer, whatever the conversion's own Last-Modified.
    [stored("k", 1_000, 1_501), converted(9_000, 1_000, 1_500), "plain"],
    [stored("k", 2_000, 2_000), converted(9_000, 1_000, 1_500), "plain"],
  ];
  for (const [plain, delta, newer] of cases) {
    assert.equal(isNewerStored(delta, plain), newer === "delta", JSON.stringify([plain, delta]));
    assert.equal(isNewerStored(plain, delta), newer === "plain", JSON.stringify([plain, delta]));
  }
  // Clients see the original write's Last-Modified.
  assert.equal(withSourceTime(converted(9_000, 1_000, 1_500)).meta.lastModified, 1_000);
});
