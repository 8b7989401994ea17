import assert from "node:assert/strict";
import type { ListOptions, ListPage } from "../../storage/backend.ts";
import { compareBytes, rollUp } from "../../admission/public-prefix.ts";
import { fakeInfo as info } from "../../testing/object-fixtures.ts";
import type { KeyVisibility } from "../access.ts";
import { listFiltered } from "./filtered-list.ts";

/** A backend listing (no delimiter needed) over sorted keys; counts the keys it returns. */
function fakeBackend(keys: string[]) {
  const sorted = [...keys].sort(compareBytes);
  let read = 0;
  const list = (options: ListOptions): Promise<ListPage> => {
    assert.equal(options.delimiter, undefined, "the filtered listing rolls up itself");
    const after = sorted.filter((key) =>
      key.startsWith(options.prefix) &&
      (options.startAfter === undefined || compareBytes(key, options.startAfter) > 0)
    );
    const page = after.slice(0, options.maxKeys);
    read += page.length;
    return Promise.resolve({
      objects: page.map((key) => info(key)),
      commonPrefixes: [],
      isTruncated: after.length > page.length,
      ...(after.length > page.length ? { nextStartAfter: page.at(-1) } : {}),
    });
  };
  return { list, read: () => read };
}

/** What a listing must show: visible keys, rolled up, each common prefix once. */
function expected(keys: string[], visible: (key: string) => boolean, prefix: string, d: string) {
  const out: string[] = [];
  for (const key of [...keys].sort(compareBytes)) {
    if (!key.startsWith(prefix) || !visible(key)) continue;
    const entry = rollUp(key, prefix, d) ?? key;
    if (!out.includes(entry)) out.push(entry);
  }
  return out.sort(compareBytes);
}

/** Every page, following positions as list-ops does (sealed ones resume raw). */
async function walk(
  keys: string[],
  visibility: KeyVisibility,
  prefix: string,
  delimiter: string,
  maxKeys: number,
  hiddenLimit: number,
) {
  const backend = fakeBackend(keys);
  const entries: string[] = [];
  let startAfter = "";
  let resumeRaw = false;
  for (let i = 0; i < 500; i++) {
    const page = await listFiltered(
      backend.list,
      { prefix, delimiter, maxKeys, startAfter, resumeRaw },
      visibility,
      hiddenLimit,
    );
    const shown = [...page.objects.map((o) => o.key), ...page.commonPrefixes].sort(compareBytes);
    assert.ok(shown.length <= maxKeys);
    if (!page.nextSealed && page.isTruncated) {
      assert.equal(shown.length, maxKeys, "an unbounded page is full");
      assert.equal(page.nextStartAfter, shown.at(-1), "the position is the last entry shown");
    }
    entries.push(...shown);
    if (!page.isTruncated) return { entries, read: backend.read(), pages: i + 1 };
    startAfter = page.nextStartAfter!;
    resumeRaw = page.nextSealed === true;
  }
  throw new Error("the listing never ended");
}

const KEYS = [
  "home/alice/1",
  "home/alice/2",
  "home/alice/deep/3",
  "home/bob/1",
  "home/bob/2",
  "home/carol/x/1",
  "team/public.txt",
  "team/secret/plan.txt",
  "team/secret/z",
  "team/site/index",
  "top",
  ...Array.from({ length: 40 }, (_, i) => `home/bob/many/${String(i).padStart(2, "0")}`),
];

Deno.test("filtered listing: exact pages for every page size, delimiter and bound", async () => {
  const cases: { name: string; visible: (key: string) => boolean; hiddenRange?: string }[] = [
    { name: "alice only", visible: (k) => k.startsWith("home/alice/") },
    { name: "all but bob", visible: (k) => !k.startsWith("home/bob/"), hiddenRange: "home/bob/" },
    { name: "all but secret", visible: (k) => !k.startsWith("team/secret/") },
    { name: "odd ones", visible: (k) => k.length % 2 === 1 },
    { name: "nothing", visible: () => false },
  ];
  for (const c of cases) {
    const visibility: KeyVisibility = {
      prefixes: [""],
      visible: (entry, kind) => kind === "prefix" || c.visible(entry),
      hiddenRange: (key) =>
        c.hiddenRange !== undefined && key.startsWith(c.hiddenRange) ? c.hiddenRange : undefined,
    };
    for (const [prefix, delimiter] of [["", ""], ["", "/"], ["home/", "/"], ["team/", "t"]]) {
      const want = expected(KEYS, c.visible, prefix, delimiter);
      for (const maxKeys of [1, 2, 3, 1000]) {
        for (const limit of [1, 3, 10_000]) {
          const label = `${c.name} prefix=${prefix} d=${delimiter} max=${maxKeys} bound=${limit}`;
          const { entries } = await walk(KEYS, visibility, prefix, delimiter, maxKeys, limit);
          assert.deepEqual(entries, want, label);
        }
      }
    }
  }
});

Deno.test("filtered listing: a delimiter never cuts a name out of a hidden key", async () => {
  const visibility: KeyVisibility = {
    prefixes: [""],
    visible: (entry, kind) => kind === "prefix" || !entry.startsWith("team/secret/"),
  };
  const { entries } = await walk(KEYS, visibility, "team/", "t", 1000, 10_000);
  // team/public.txt → "team/public.t", team/site/index → "team/sit"; never "team/secret".
  assert.deepEqual(entries, ["team/public.t", "team/sit"]);
});

Deno.test("filtered listing: a denied range and a shown prefix are jumped, not read", async () => {
  const visibility: KeyVisibility = {
    prefixes: [""],
    visible: (entry, kind) => kind === "prefix" || !entry.startsWith("home/bob/"),
    hiddenRange: (key) => key.startsWith("home/bob/") ? "home/bob/" : undefined,
  };
  // Small pages, so the backend is asked for few keys at a time.
  const flat = await walk(KEYS, visibility, "", "", 2, 10_000);
  assert.ok(!flat.entries.some((k) => k.startsWith("home/bob/")));
  // A bob key read, then the jump: not the 42 keys under home/bob/.
  assert.ok(flat.read < KEYS.length - 30, `read ${flat.read}`);
  const rolled = await walk(KEYS, visibility, "", "/", 1, 10_000);
  assert.deepEqual(rolled.entries, ["home/", "team/", "top"]);
  assert.ok(rolled.read <= 10, `read ${rolled.read}`);
});

Deno.test("filtered listing: a run of hidden keys ends bounded pages, each resuming after it", async () => {
  const visibility: KeyVisibility = {
    prefixes: [""],
    visible: (entry, kind) => kind === "prefix" || !entry.startsWith("home/bob/many/"),
  };
  const { entries, pages } = await walk(KEYS, visibility, "home/bob/", "", 1000, 10);
  assert.deepEqual(entries, ["home/bob/1", "home/bob/2"]);
  // 40 hidden keys at 10 per request: bounded, never endless.
  assert.ok(pages >= 4 && pages <= 6, `${pages} pages`);
});
