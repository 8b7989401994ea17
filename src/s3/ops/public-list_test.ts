import assert from "node:assert/strict";
import type { ListOptions, ListPage } from "../../storage/backend.ts";
import { compareBytes, coveredByAny, rollUp } from "../../admission/public-prefix.ts";
import { listPublic, type PublicListParams } from "./public-list.ts";
import { fakeInfo as info } from "../../testing/object-fixtures.ts";

/** A backend listing over sorted keys with the Backend contract; counts the keys it reads. */
function fakeBackend(keys: string[]) {
  const sorted = [...keys].sort(compareBytes);
  const seen = new Set<string>();
  const list = (options: ListOptions): Promise<ListPage> => {
    const page: ListPage = { objects: [], commonPrefixes: [], isTruncated: false };
    let last: string | undefined;
    for (const key of sorted) {
      if (!key.startsWith(options.prefix)) continue;
      seen.add(key);
      const cp = options.delimiter ? rollUp(key, options.prefix, options.delimiter) : undefined;
      const entry = cp ?? key;
      if (options.startAfter !== undefined && compareBytes(entry, options.startAfter) <= 0) {
        continue;
      }
      if (entry === last) continue;
      if (page.objects.length + page.commonPrefixes.length === options.maxKeys) {
        page.isTruncated = true;
        page.nextStartAfter = last;
        break;
      }
      if (cp !== undefined) page.commonPrefixes.push(cp);
      else page.objects.push(info(key));
      last = entry;
    }
    return Promise.resolve(page);
  };
  return { list, seen };
}

const KEYS = [
  "README",
  "pub/releases/v1.tar",
  "pub/secret",
  "releases-internal/plan.txt",
  "releases-internal/x",
  "releases/",
  "releases/v1/a.tar",
  "releases/v1/b.tar",
  "releases/v2/a.tar",
  "releases/latest.txt",
  "zzz",
];

function params(overrides: Partial<PublicListParams> = {}): PublicListParams {
  return { prefix: "", delimiter: "", maxKeys: 1000, startAfter: "", ...overrides };
}

/** Every entry of a listing, page by page, as a client would follow it. */
async function listAll(
  list: (o: ListOptions) => Promise<ListPage>,
  p: PublicListParams,
  prefixes: string[],
): Promise<{ entries: string[]; pages: number }> {
  const entries: string[] = [];
  let startAfter = p.startAfter;
  for (let pages = 1;; pages++) {
    const page = await listPublic(list, { ...p, startAfter }, prefixes);
    const shown = [...page.objects.map((o) => o.key), ...page.commonPrefixes].sort(compareBytes);
    assert.ok(shown.length <= p.maxKeys);
    if (page.isTruncated) assert.equal(shown.length, p.maxKeys, "a truncated page is full");
    entries.push(...shown);
    if (!page.isTruncated) return { entries, pages };
    assert.equal(page.nextStartAfter, shown[shown.length - 1], "the token names a shown entry");
    startAfter = page.nextStartAfter!;
  }
}

Deno.test("listing without delimiter shows only covered keys and never reads others", async () => {
  const { list, seen } = fakeBackend(KEYS);
  const { entries } = await listAll(list, params(), ["releases/"]);
  assert.deepEqual(entries, KEYS.filter((k) => k.startsWith("releases/")).sort(compareBytes));
  assert.ok([...seen].every((key) => coveredByAny(key, ["releases/"])));
});

Deno.test("listing with a delimiter: common prefixes inside or above public prefixes", async () => {
  const { list } = fakeBackend(KEYS);
  const root = await listAll(list, params({ delimiter: "/" }), ["releases/", "pub/releases/"]);
  // pub/ is an ancestor of a public prefix holding an object; releases-internal/ is not shown.
  assert.deepEqual(root.entries, ["pub/", "releases/"]);
  const inside = await listAll(list, params({ prefix: "releases/", delimiter: "/" }), [
    "releases/",
  ]);
  assert.deepEqual(inside.entries, [
    "releases/",
    "releases/latest.txt",
    "releases/v1/",
    "releases/v2/",
  ]);
  const pub = await listAll(list, params({ prefix: "pub/", delimiter: "/" }), ["pub/releases/"]);
  assert.deepEqual(pub.entries, ["pub/releases/"]);
});

Deno.test("an ancestor common prefix is hidden when its public prefix holds nothing", async () => {
  const { list } = fakeBackend(KEYS);
  const { entries } = await listAll(list, params({ delimiter: "/" }), ["pub/empty/"]);
  assert.deepEqual(entries, []);
});

Deno.test("pagination: full pages, exact truncation, tokens that resume correctly", async () => {
  const keys = [...KEYS];
  for (let i = 0; i < 30; i++) keys.push(`releases-internal/n${i}`, `releases/n${i}`);
  const { list } = fakeBackend(keys);
  const expected = keys.filter((k) => k.startsWith("releases/")).sort(compareBytes);
  for (const maxKeys of [1, 2, 7, 34, 35, 1000]) {
    const { entries } = await listAll(list, params({ maxKeys }), ["releases/"]);
    assert.deepEqual(entries, expected, `maxKeys ${maxKeys}`);
  }
  const withDelimiter = await listAll(list, params({ delimiter: "/", maxKeys: 1 }), [
    "releases/",
    "pub/releases/",
  ]);
  assert.deepEqual(withDelimiter.entries, ["pub/", "releases/"]);
  assert.equal(withDelimiter.pages, 2);
});

Deno.test("start-after inside, before and past the public ranges", async () => {
  const { list } = fakeBackend(KEYS);
  const after = (startAfter: string) => listAll(list, params({ startAfter }), ["releases/"]);
  assert.deepEqual((await after("releases/v1/b.tar")).entries, ["releases/v2/a.tar"]);
  assert.equal((await after("a")).entries.length, 5);
  assert.deepEqual((await after("s")).entries, []);
});

Deno.test("a request prefix inside a public prefix, and one outside every public prefix", async () => {
  const { list } = fakeBackend(KEYS);
  const inside = await listAll(list, params({ prefix: "releases/v1/" }), ["releases/"]);
  assert.deepEqual(inside.entries, ["releases/v1/a.tar", "releases/v1/b.tar"]);
  const outside = await listAll(list, params({ prefix: "releases-" }), ["releases/"]);
  assert.deepEqual(outside.entries, []);
  // A plain (non-slash) public prefix covers what starts with it, siblings included.
  const plain = await listAll(list, params({ delimiter: "/" }), ["releases"]);
  assert.deepEqual(plain.entries, ["releases-internal/", "releases/"]);
});

/** Every page of a listing with a visibility predicate, following nextStartAfter. */
async function allPages(
  keys: string[],
  params: Omit<PublicListParams, "startAfter">,
  prefixes: string[],
  visible: (entry: string, kind: "object" | "prefix") => boolean,
) {
  const { list } = fakeBackend(keys);
  const pages: string[][] = [];
  const resumes: string[] = [];
  let startAfter = "";
  for (let i = 0; i < 50; i++) {
    const page = await listPublic(list, { ...params, startAfter }, prefixes, visible);
    pages.push([...page.objects.map((o) => o.key), ...page.commonPrefixes]);
    if (!page.isTruncated) return { pages, resumes };
    startAfter = page.nextStartAfter!;
    resumes.push(startAfter);
  }
  throw new Error("the listing never ended");
}

Deno.test("visible predicate: hidden keys are skipped, pages stay full, resumes are shown keys", async () => {
  const keys = ["g/1", "g/2", "g/3", "g/4", "g/5", "g/6", "g/7", "other/x"];
  const hidden = new Set(["g/2", "g/3", "g/6"]);
  const { pages, resumes } = await allPages(
    keys,
    { prefix: "", delimiter: "", maxKeys: 2 },
    ["g/"],
    (entry) => !hidden.has(entry),
  );
  assert.deepEqual(pages, [["g/1", "g/4"], ["g/5", "g/7"]]);
  assert.deepEqual(resumes, ["g/4"]);
});

Deno.test("visible predicate: an ancestor prefix shows only when a visible key lies below", async () => {
  const keys = ["home/alice/secret", "home/bob/file"];
  const onlyHidden = await allPages(
    keys,
    { prefix: "", delimiter: "/", maxKeys: 10 },
    ["home/alice/"],
    (entry, kind) => kind === "prefix" || entry !== "home/alice/secret",
  );
  assert.deepEqual(onlyHidden.pages, [[]]);
  const shown = await allPages(
    keys,
    { prefix: "", delimiter: "/", maxKeys: 10 },
    ["home/alice/"],
    () => true,
  );
  assert.deepEqual(shown.pages, [["home/"]]);
});

Deno.test("visible predicate: a refused common prefix is not shown, its siblings are", async () => {
  const keys = ["g/a/1", "g/b/1", "g/c"];
  const { pages } = await allPages(
    keys,
    { prefix: "g/", delimiter: "/", maxKeys: 10 },
    ["g/"],
    (entry, kind) => !(kind === "prefix" && entry === "g/b/"),
  );
  assert.deepEqual(pages, [["g/c", "g/a/"]]);
});
