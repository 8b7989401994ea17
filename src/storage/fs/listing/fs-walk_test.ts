import assert from "node:assert/strict";
import type { ListOptions, ObjectMeta } from "../../backend.ts";
import { FilesystemBackend, type FilesystemBackendOptions } from "../filesystem-backend.ts";
import { fakeMeta } from "../../../testing/object-fixtures.ts";
import { commonPrefixOf, compareUtf8 } from "../../../lib/key-order.ts";

const encoder = new TextEncoder();

/** Placeholder metadata sized for `body` (md5 "m" tells it apart from other fixtures). */
function metaFor(body: string): ObjectMeta {
  return fakeMeta(encoder.encode(body).length, { md5: "m" });
}

/** Stores `key` with its own name as the body (empty for directory markers). */
async function put(backend: FilesystemBackend, key: string): Promise<void> {
  const body = key.endsWith("/") ? "" : key;
  const staged = await backend.stageObject("b", key, new Response(body).body!);
  await staged.commit(metaFor(body));
}

async function withBackend(
  test: (backend: FilesystemBackend) => Promise<void>,
  options?: FilesystemBackendOptions,
) {
  const dir = await Deno.makeTempDir();
  try {
    const backend = await FilesystemBackend.open(dir, options);
    await backend.createBucket("b");
    await test(backend);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** Reference order: compare the encoded bytes themselves. */
function compareBytes(a: string, b: string): number {
  const x = encoder.encode(a);
  const y = encoder.encode(b);
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    if (x[i] !== y[i]) return x[i] - y[i];
  }
  return x.length - y.length;
}

const sign = (n: number) => Math.sign(n);

/** A small deterministic PRNG, so a failure reproduces. */
function random(seed: number): () => number {
  return () => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed / 2147483648;
  };
}

const ALPHABET = ["a", "b", "-", "0", "é", "😀", "\uFFFD", "\uE000", ".", "z", "/"];

Deno.test("compareUtf8 agrees with UTF-8 byte order", () => {
  const next = random(7);
  const pick = () => {
    let s = "";
    for (let n = Math.floor(next() * 5); n > 0; n--) s += ALPHABET[Math.floor(next() * 11)];
    return s;
  };
  for (let i = 0; i < 5000; i++) {
    const [a, b] = [pick(), pick()];
    assert.equal(sign(compareUtf8(a, b)), sign(compareBytes(a, b)), `${a} vs ${b}`);
  }
  // JavaScript's own order gets this pair wrong: U+1F600 is 0xF0… in UTF-8, U+FFFD is 0xEF….
  assert.ok("😀" < "\uFFFD" && compareUtf8("😀", "\uFFFD") > 0);
});

Deno.test("commonPrefixOf takes the first delimiter after the prefix", () => {
  assert.equal(commonPrefixOf("a/b/c", "", "/"), "a/");
  assert.equal(commonPrefixOf("a/b/c", "a/", "/"), "a/b/");
  assert.equal(commonPrefixOf("a/b", "a/", "/"), undefined);
  assert.equal(commonPrefixOf("x--y--z", "x-", "--"), "x--y--");
});

type Entry = string; // "o:<key>" for an object, "p:<prefix>" for a common prefix

/** Every entry of a listing, following nextStartAfter page by page. */
async function listAll(backend: FilesystemBackend, options: ListOptions): Promise<Entry[]> {
  const all: Entry[] = [];
  let startAfter = options.startAfter;
  for (let pages = 0; pages < 10_000; pages++) {
    const page = await backend.listObjects("b", { ...options, startAfter });
    const entries = [
      ...page.objects.map((o) => ({ key: o.key, entry: `o:${o.key}` })),
      ...page.commonPrefixes.map((p) => ({ key: p, entry: `p:${p}` })),
    ].sort((x, y) => compareBytes(x.key, y.key));
    all.push(...entries.map((e) => e.entry));
    if (!page.isTruncated) {
      assert.equal(page.nextStartAfter, undefined);
      return all;
    }
    assert.equal(entries.length, options.maxKeys, "a truncated page is full");
    assert.equal(page.nextStartAfter, entries.at(-1)?.key);
    startAfter = page.nextStartAfter;
  }
  throw new Error("listing never ended");
}

/** What S3 returns, computed from the key set alone. */
function reference(keys: string[], options: Omit<ListOptions, "maxKeys">): Entry[] {
  const { prefix, startAfter, delimiter } = options;
  const out: Entry[] = [];
  let lastPrefix: string | undefined;
  for (const key of [...keys].sort(compareBytes)) {
    if (!key.startsWith(prefix)) continue;
    if (startAfter !== undefined && compareBytes(key, startAfter) <= 0) continue;
    const at = delimiter ? key.indexOf(delimiter, prefix.length) : -1;
    if (at < 0) {
      out.push(`o:${key}`);
      continue;
    }
    const common = key.slice(0, at + delimiter!.length);
    if (startAfter !== undefined && compareBytes(common, startAfter) <= 0) continue;
    if (common !== lastPrefix) out.push(`p:${common}`);
    lastPrefix = common;
  }
  return out;
}

Deno.test("keys list in UTF-8 byte order with directories sorting as name + '/'", () =>
  withBackend(async (backend) => {
    const keys = ["a-c", "a/b", "a0", "a/", "é", "😀", "\uFFFD", "\uE000x", "z", "Z", "a/b0/c"];
    for (const key of keys) await put(backend, key);
    const expected = ["Z", "a-c", "a/", "a/b", "a/b0/c", "a0", "z", "é", "\uE000x", "\uFFFD", "😀"];
    const page = await backend.listObjects("b", { prefix: "", maxKeys: 100 });
    assert.deepEqual(page.objects.map((o) => o.key), expected);
    assert.equal(page.isTruncated, false);
    const a0 = page.objects.find((o) => o.key === "a0");
    assert.deepEqual(a0, { key: "a0", storedSize: 2, meta: metaFor("a0") });
    assert.deepEqual(page.objects.find((o) => o.key === "a/")?.meta, metaFor(""));

    const root = await backend.listObjects("b", { prefix: "", delimiter: "/", maxKeys: 100 });
    assert.deepEqual(root.commonPrefixes, ["a/"]);
    assert.deepEqual(root.objects.map((o) => o.key), expected.filter((k) => !k.includes("/")));
    const inA = await backend.listObjects("b", { prefix: "a/", delimiter: "/", maxKeys: 100 });
    assert.deepEqual(inA.objects.map((o) => o.key), ["a/", "a/b"]);
    assert.deepEqual(inA.commonPrefixes, ["a/b0/"]);
  }));

Deno.test("prefix, startAfter and delimiters", () =>
  withBackend(async (backend) => {
    const keys = ["photos/2023/y", "photos/2024/x", "photos/1999/z", "photos2/a", "x-1", "x-2"];
    for (const key of keys) await put(backend, key);
    const list = (options: Partial<ListOptions>) =>
      listAll(backend, { prefix: "", maxKeys: 2, ...options });
    assert.deepEqual(await list({ prefix: "photos/2" }), ["o:photos/2023/y", "o:photos/2024/x"]);
    assert.deepEqual(await list({ prefix: "photos/2", delimiter: "/" }), [
      "p:photos/2023/",
      "p:photos/2024/",
    ]);
    assert.deepEqual(await list({ startAfter: "photos/2023/y", prefix: "photos" }), [
      "o:photos/2024/x",
      "o:photos2/a",
    ]);
    assert.deepEqual(await list({ delimiter: "-" }), [
      "o:photos/1999/z",
      "o:photos/2023/y",
      "o:photos/2024/x",
      "o:photos2/a",
      "p:x-",
    ]);
    assert.deepEqual(await list({ delimiter: "/", maxKeys: 1 }), [
      "p:photos/",
      "p:photos2/",
      "o:x-1",
      "o:x-2",
    ]);
    // A common prefix as startAfter skips everything under it.
    assert.deepEqual(await list({ delimiter: "/", startAfter: "photos/" }), [
      "p:photos2/",
      "o:x-1",
      "o:x-2",
    ]);
    assert.deepEqual(await list({ prefix: "../" }), []);
    assert.deepEqual(await list({ prefix: "photos//" }), []);
    // Files without metadata and stale directories are not objects.
    await Deno.writeTextFile(`${backend.root}/b/photos/stray`, "x");
    await Deno.mkdir(`${backend.root}/b/photos/empty/deeper`, { recursive: true });
    assert.deepEqual((await list({ prefix: "photos/" })).length, 3);
  }));

Deno.test("paged listings match a reference model (random keys and options)", () =>
  withBackend(async (backend) => {
    const next = random(2024);
    const segment = () => {
      let s = "";
      for (let n = 1 + Math.floor(next() * 3); n > 0; n--) s += ALPHABET[Math.floor(next() * 10)];
      return s === "." || s === ".." ? "dot" : s;
    };
    const keys: string[] = [];
    while (keys.length < 150) {
      const depth = 1 + Math.floor(next() * 3);
      let key = Array.from({ length: depth }, segment).join("/");
      if (next() < 0.1) key += "/";
      if (keys.includes(key)) continue;
      try {
        await put(backend, key);
        keys.push(key);
      } catch (err) {
        assert.match(String(err), /ObjectPathConflict|conflicts with/);
      }
    }
    const prefixes = [
      "",
      "a",
      "a/",
      "é",
      "😀/",
      "b-",
      ...keys.slice(0, 8).map((k) => k.slice(0, 3)),
    ];
    const starts = [undefined, "a", "a/", "b/0", "z", "\uFFFD", ...keys.slice(8, 14)];
    for (const prefix of prefixes) {
      for (const startAfter of starts) {
        for (const delimiter of [undefined, "/", "-", "é", "a/"]) {
          const maxKeys = 1 + Math.floor(next() * 7);
          const options = { prefix, startAfter, delimiter, maxKeys };
          const label = JSON.stringify(options);
          assert.deepEqual(await listAll(backend, options), reference(keys, options), label);
        }
      }
    }
  }));

Deno.test("listing never reads directories outside the prefix or before startAfter", () => {
  const reads: string[] = [];
  return withBackend(async (backend) => {
    for (const key of ["a/1", "b/1", "c/1", "d/x/1", "d/y/1", "d/y/2"]) await put(backend, key);
    /** The directories read since the last call, relative to the bucket. */
    const read = () => reads.splice(0).map((path) => path.slice(`${backend.root}/b`.length) || ".");
    read();
    const byPrefix = await backend.listObjects("b", { prefix: "d/y", maxKeys: 10 });
    assert.deepEqual(byPrefix.objects.map((o) => o.key), ["d/y/1", "d/y/2"]);
    assert.deepEqual(read(), ["/d", "/d/y"]);
    const byStart = await backend.listObjects("b", { prefix: "", startAfter: "c/1", maxKeys: 2 });
    assert.deepEqual(byStart.objects.map((o) => o.key), ["d/x/1", "d/y/1"]);
    assert.deepEqual(read(), [".", "/c", "/d", "/d/x", "/d/y"]);
    const folders = await backend.listObjects("b", { prefix: "", delimiter: "/", maxKeys: 9 });
    assert.deepEqual(folders.commonPrefixes, ["a/", "b/", "c/", "d/"]);
    assert.deepEqual(read(), ["."], "delimiter / must not descend");
  }, { listing: { onDirectoryRead: (path) => void reads.push(path) } });
});

Deno.test("listed metadata is the stored metadata, with its repeated parts shared", () =>
  withBackend(async (backend) => {
    const plain = fakeMeta(1, { etag: "abc", md5: "abc", lastModified: 5 });
    const rich = fakeMeta(1, {
      etag: "e-2",
      md5: "",
      userMeta: { owner: "ann" },
      headers: { "cache-control": "no-cache" },
      tags: { team: "x" },
    });
    for (const [key, meta] of [["p1", plain], ["p2", plain], ["r", rich]] as const) {
      const staged = await backend.stageObject("b", key, new Blob(["x"]).stream());
      await staged.commit(meta);
    }
    const page = await backend.listObjects("b", { prefix: "", maxKeys: 10 });
    const [p1, p2, r] = page.objects;
    assert.deepEqual(p1.meta, plain);
    assert.deepEqual(r.meta, rich);
    assert.equal(p1.storedSize, 1);
    // The empty records are one frozen object: a write to them fails loudly, never leaks.
    assert.equal(p1.meta.userMeta, p2.meta.userMeta);
    assert.ok(Object.isFrozen(p1.meta.userMeta) && Object.isFrozen(p1.meta.headers));
    assert.ok(!Object.isFrozen(r.meta.userMeta));
    assert.deepEqual({ ...p1.meta }, plain, "spreads and copies see every field");
  }));

Deno.test("omitBaseNames leaves those names out at any depth, nested ones too, page by page", () =>
  withBackend(async (backend) => {
    const next = random(77);
    const segments = ["reference.bin", "a", "a-1", "b.c", "é"];
    const keys: string[] = [];
    while (keys.length < 80) {
      const depth = 1 + Math.floor(next() * 3);
      const key = Array.from({ length: depth }, () => segments[Math.floor(next() * 5)]).join("/");
      if (keys.includes(key)) continue;
      await put(backend, key); // `x/reference.bin` and `x/reference.bin/y` nest (fs-nesting.ts)
      keys.push(key);
    }
    const omitBaseNames = new Set(["reference.bin"]);
    const shown = keys.filter((key) => !key.endsWith("/reference.bin") && key !== "reference.bin");
    assert.ok(shown.length < keys.length && shown.some((key) => key.includes("reference.bin/")));
    for (const prefix of ["", "a/", "reference.bin/", "a/reference.bin"]) {
      for (const maxKeys of [1, 3, 1000]) {
        const options = { prefix, maxKeys, omitBaseNames };
        const label = JSON.stringify({ prefix, maxKeys });
        assert.deepEqual(await listAll(backend, options), reference(shown, options), label);
      }
    }
  }));
