/**
 * Black-box tests of ListObjectsV2 and ListObjects (v1): prefixes, delimiters, paging, start-after,
 * URL encoding, owners and errors, checked against a reference model of S3 listing semantics.
 */
import assert from "node:assert/strict";
import { ListObjectsV2Command, type ListObjectsV2CommandOutput } from "@aws-sdk/client-s3";
import { objectsOnLocalDisk, signedFetch as fetch, startSvc } from "./helpers/svc.ts";
import { codeOf } from "./helpers/assertions.ts";

const BUCKET = "listing";
const utf8 = new TextEncoder();

/** S3 key order: UTF-8 bytes. */
function compareKeys(a: string, b: string): number {
  const x = utf8.encode(a), y = utf8.encode(b);
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i] - y[i];
  return x.length - y.length;
}

// Directories, files beside them, and keys whose UTF-8 order differs from UTF-16 order
// (U+E000 and U+FFFD sort before astral characters in UTF-8, after them in UTF-16).
const GROUPS = ["a", "a-c", "a.b", "a0", "z", "é", "\uE000", "😀", "deep/er/still", "sp ace"];
const TOP_FILES = [
  "a-c.txt",
  "a.txt",
  "é.txt",
  "😀.bin",
  "\uFFFD",
  "amp&<lt>",
  "x-y-z",
  "x-y",
  "ctl\u0001\u001f\t\r\nx",
];
const PAGE_KEYS = [
  ...Array.from({ length: 2500 - TOP_FILES.length }, (_, i) => {
    const suffix = ["", "é", "😀", "\uE000", "-dash", ".dot"][i % 6];
    return `page/${GROUPS[i % GROUPS.length]}/${String(i).padStart(4, "0")}${suffix}`;
  }),
  ...TOP_FILES.map((name) => `page/${name}`),
].sort(compareKeys);
const OTHER_KEYS = ["other/1", "other/2/", "other/2/x", "page-sibling", "pagf"];
const ALL_KEYS = [...PAGE_KEYS, ...OTHER_KEYS].sort(compareKeys);

type Entry = { key: string } | { prefix: string };
const show = (entries: Entry[]) => entries.map((e) => ("key" in e ? e.key : `[${e.prefix}]`));

/** What S3 lists for these parameters: keys and common prefixes in key order. */
function model(prefix: string, delimiter: string, startAfter = ""): Entry[] {
  const out: Entry[] = [];
  for (const key of ALL_KEYS) {
    if (!key.startsWith(prefix) || (startAfter && compareKeys(key, startAfter) <= 0)) continue;
    const at = delimiter ? key.indexOf(delimiter, prefix.length) : -1;
    if (at < 0) {
      out.push({ key });
      continue;
    }
    const common = key.slice(0, at + delimiter.length);
    const last = out.at(-1);
    if (!(last && "prefix" in last && last.prefix === common)) out.push({ prefix: common });
  }
  return out;
}

function unescapeXml(text: string): string {
  return text.replace(/&(lt|gt|amp|quot|apos|#x[0-9a-fA-F]+|#\d+);/g, (_, name: string) => {
    const named: Record<string, string> = { lt: "<", gt: ">", amp: "&", quot: '"', apos: "'" };
    if (name in named) return named[name];
    return String.fromCodePoint(
      Number(name.startsWith("#x") ? `0x${name.slice(2)}` : name.slice(1)),
    );
  });
}

const blocks = (xml: string, tag: string) =>
  [...xml.matchAll(new RegExp(`<${tag}>([\\s\\S]*?)</${tag}>`, "g"))].map((m) => m[1]);
const field = (xml: string, tag: string) => {
  const found = blocks(xml, tag)[0];
  return found === undefined ? undefined : unescapeXml(found);
};

interface RawList {
  status: number;
  xml: string;
  entries: Entry[];
  truncated: boolean;
  next?: string;
}

/** A raw listing request; entries are merged back into key order like a client would. */
async function rawList(base: string, query: Record<string, string>): Promise<RawList> {
  const res = await fetch(`${base}/${BUCKET}?${new URLSearchParams(query)}`);
  const xml = await res.text();
  const decode = query["encoding-type"] === "url" ? decodeURIComponent : (v: string) => v;
  const keys = blocks(xml, "Contents").map((c) => ({ key: decode(field(c, "Key")!) }));
  const prefixes = blocks(xml, "CommonPrefixes").map((c) => ({
    prefix: decode(field(c, "Prefix")!),
  }));
  const entries: Entry[] = [...keys, ...prefixes].sort((a, b) =>
    compareKeys("key" in a ? a.key : a.prefix, "key" in b ? b.key : b.prefix)
  );
  return {
    status: res.status,
    xml,
    entries,
    truncated: field(xml, "IsTruncated") === "true",
    next: field(xml, "NextContinuationToken") ?? field(xml, "NextMarker"),
  };
}

async function putAll(base: string, keys: string[], concurrency = 32): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < keys.length) {
      const key = keys[next++];
      const path = key.split("/").map(encodeURIComponent).join("/");
      const res = await fetch(`${base}/${BUCKET}/${path}`, {
        method: "PUT",
        body: key.endsWith("/") ? "" : key,
      });
      const text = await res.text();
      assert.equal(res.status, 200, `${key}: ${text}`);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}

/**
 * 2500 PUTs each fsync twice; on a RAM-backed data dir (when the kernel supports user xattrs
 * on tmpfs) seeding takes a fraction of the time. Falls back to the default temp dir.
 */
async function startOnRamDisk() {
  let dataDir: string | undefined;
  try {
    dataDir = await Deno.makeTempDir({ dir: "/dev/shm", prefix: "svc-listing-" });
    const svc = await startSvc({ dataDir });
    const stop = async () => {
      await svc.stop();
      await Deno.remove(dataDir!, { recursive: true });
    };
    return { ...svc, stop, [Symbol.asyncDispose]: stop };
  } catch {
    if (dataDir) await Deno.remove(dataDir, { recursive: true }).catch(() => {});
    return await startSvc();
  }
}

Deno.test("listing: ListObjectsV2 and ListObjects against one server", async (t) => {
  await using svc = await startOnRamDisk();
  const s3 = svc.client();
  assert.equal((await fetch(`${svc.url}/${BUCKET}`, { method: "PUT" })).status, 200);
  await putAll(svc.url, PAGE_KEYS);
  await putAll(svc.url, OTHER_KEYS);

  await t.step(
    "2500 keys page as 1000/1000/500 with continuation tokens, UTF-8 order",
    async () => {
      const pages: ListObjectsV2CommandOutput[] = [];
      let token: string | undefined;
      do {
        const page = await s3.send(
          new ListObjectsV2Command({ Bucket: BUCKET, Prefix: "page/", ContinuationToken: token }),
        );
        pages.push(page);
        token = page.NextContinuationToken;
        assert.equal(page.IsTruncated, token !== undefined);
      } while (token !== undefined && pages.length < 10);
      assert.deepEqual(pages.map((p) => p.KeyCount), [1000, 1000, 500]);
      assert.deepEqual(pages.map((p) => p.Contents?.length), [1000, 1000, 500]);
      const keys = pages.flatMap((p) => p.Contents!.map((c) => c.Key!));
      assert.equal(new Set(keys).size, 2500);
      assert.deepEqual(keys, PAGE_KEYS);
      const first = pages[0].Contents![0];
      assert.equal(first.Size, utf8.encode(first.Key!).length);
      assert.match(first.ETag!, /^"[0-9a-f]{32}"$/);
      assert.equal(first.StorageClass, "STANDARD");
      assert.equal(first.Owner, undefined);
    },
  );

  await t.step("prefix and delimiter results match the model, unpaged and paged", async () => {
    const cases: [string, string][] = [
      ["", ""],
      ["", "/"],
      ["page/", "/"],
      ["page/a", "/"],
      ["page/a", ""],
      ["page/deep/", "/"],
      ["page/deep/er/st", "/"],
      ["page/x-", "-"],
      ["page/", "-"],
      ["page/a/", "é"],
      ["page/", "0"],
      ["page/sp ace/", "/"],
      ["page/nothing", "/"],
      ["page/", "a/"],
      ["", "ge/d"],
      ["page/deep/", "er/"],
      ["pag", "/"],
    ];
    for (const [prefix, delimiter] of cases) {
      const expected = model(prefix, delimiter);
      const all = await rawList(svc.url, {
        "list-type": "2",
        prefix,
        delimiter,
        "max-keys": "1000",
      });
      const label = `prefix=${prefix} delimiter=${delimiter}`;
      // A failure says what the server logged for it (seen once in CI: a 500, not reproduced).
      const failed = () => svc.logs.filter((line) => line.includes("request failed")).join("\n");
      assert.equal(all.status, 200, `${label}: ${all.xml}\n${all.status === 200 ? "" : failed()}`);
      assert.deepEqual(show(all.entries), show(expected.slice(0, 1000)), label);
      assert.equal(field(all.xml, "KeyCount"), String(Math.min(1000, expected.length)), label);
      assert.equal(all.truncated, expected.length > 1000, label);
      if (prefix !== "page/nothing") assert.ok(expected.length > 0, label);
      if (expected.length > 300) continue; // paging is covered at size above
      for (const maxKeys of [1, 3]) {
        const collected: Entry[] = [];
        let token: string | undefined;
        for (let n = 0; n < 400; n++) {
          const page = await rawList(svc.url, {
            "list-type": "2",
            prefix,
            delimiter,
            "max-keys": String(maxKeys),
            ...(token ? { "continuation-token": token } : {}),
          });
          assert.ok(page.entries.length <= maxKeys, label);
          if (page.truncated) assert.equal(page.entries.length, maxKeys, label);
          collected.push(...page.entries);
          token = page.next;
          if (!page.truncated) break;
        }
        assert.deepEqual(show(collected), show(expected), `${label} max-keys=${maxKeys}`);
      }
    }
  });

  await t.step("start-after skips keys at or before it and is echoed", async () => {
    for (
      const startAfter of [
        "page/a-c.txt",
        "page/a-c/",
        "page/a/0500",
        "page/a/zzz",
        "page/é",
        "page/\uE000",
        "page/😀/9999",
        "page/\uFFFF",
        "a",
        "zzz",
      ]
    ) {
      const expected = model("page/", "", startAfter).slice(0, 1000);
      const res = await rawList(svc.url, {
        "list-type": "2",
        prefix: "page/",
        "start-after": startAfter,
      });
      assert.deepEqual(show(res.entries), show(expected), `start-after=${startAfter}`);
      assert.equal(field(res.xml, "StartAfter"), startAfter);
    }
    // With a delimiter, a start-after between common prefixes.
    const rolled = await rawList(svc.url, {
      "list-type": "2",
      prefix: "page/",
      delimiter: "/",
      "start-after": "page/a.txt",
    });
    assert.deepEqual(show(rolled.entries), show(model("page/", "/", "page/a.txt")));
    // A continuation token wins over start-after.
    const first = await rawList(svc.url, { "list-type": "2", prefix: "page/", "max-keys": "2" });
    const resumed = await rawList(svc.url, {
      "list-type": "2",
      prefix: "page/",
      "max-keys": "2",
      "start-after": "page/z",
      "continuation-token": first.next!,
    });
    assert.deepEqual(show(resumed.entries), show(model("page/", "").slice(2, 4)));
  });

  await t.step("max-keys: 0, clamping above 1000, invalid values", async () => {
    const zero = await rawList(svc.url, { "list-type": "2", "max-keys": "0" });
    assert.equal(zero.status, 200);
    assert.deepEqual(zero.entries, []);
    assert.equal(field(zero.xml, "KeyCount"), "0");
    assert.equal(field(zero.xml, "MaxKeys"), "0");
    const big = await rawList(svc.url, { "list-type": "2", "max-keys": "5000" });
    assert.equal(big.entries.length, 1000);
    assert.equal(field(big.xml, "KeyCount"), "1000");
    assert.equal(big.truncated, true);
    for (const bad of ["-1", "abc", "1.5"]) {
      const res = await rawList(svc.url, { "list-type": "2", "max-keys": bad });
      assert.equal(res.status, 400, bad);
      assert.equal(codeOf(res.xml), "InvalidArgument", bad);
    }
  });

  await t.step("encoding-type=url round-trips unusual keys; fetch-owner adds Owner", async () => {
    const res = await rawList(svc.url, {
      "list-type": "2",
      prefix: "page/",
      delimiter: "/",
      "encoding-type": "url",
    });
    assert.equal(field(res.xml, "EncodingType"), "url");
    assert.deepEqual(show(res.entries), show(model("page/", "/")));
    assert.ok(res.xml.includes("<Prefix>page/sp%20ace/</Prefix>"), res.xml);
    assert.ok(res.xml.includes("<Key>page/%C3%A9.txt</Key>"), res.xml);
    assert.ok(!/<Key>[^<]*[&<>][^<]*<\/Key>/.test(res.xml));
    const bad = await rawList(svc.url, { "list-type": "2", "encoding-type": "base64" });
    assert.equal(bad.status, 400);
    assert.equal(codeOf(bad.xml), "InvalidArgument");

    const owned = await s3.send(
      new ListObjectsV2Command({ Bucket: BUCKET, Prefix: "other/", FetchOwner: true }),
    );
    assert.deepEqual(owned.Contents?.map((c) => c.Key), ["other/1", "other/2/", "other/2/x"]);
    for (const c of owned.Contents!) assert.ok(c.Owner?.ID, "Owner.ID with fetch-owner");
    const unowned = await s3.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: "other/" }));
    assert.equal(unowned.Contents?.[0].Owner, undefined);
    const rolled = await s3.send(
      new ListObjectsV2Command({ Bucket: BUCKET, Prefix: "other/", Delimiter: "/" }),
    );
    assert.equal(rolled.KeyCount, 2);
    assert.deepEqual(rolled.Contents?.map((c) => c.Key), ["other/1"]);
    assert.deepEqual(rolled.CommonPrefixes?.map((p) => p.Prefix), ["other/2/"]);
  });

  await t.step("ListObjects v1 pages with marker and NextMarker", async () => {
    for (const [prefix, delimiter, maxKeys] of [["page/", "", "700"], ["page/", "/", "4"]]) {
      const collected: Entry[] = [];
      let marker = "";
      for (let n = 0; n < 50; n++) {
        const page = await rawList(svc.url, { prefix, delimiter, marker, "max-keys": maxKeys });
        assert.equal(page.status, 200);
        assert.equal(field(page.xml, "Marker"), marker);
        collected.push(...page.entries);
        if (!page.truncated) break;
        assert.ok(page.next, "NextMarker on a truncated page");
        const last = page.entries.at(-1)!;
        assert.equal(page.next, "key" in last ? last.key : last.prefix);
        marker = page.next!;
      }
      assert.deepEqual(show(collected), show(model(prefix, delimiter)), `v1 ${delimiter}`);
    }
    const owned = await rawList(svc.url, { prefix: "other/1" });
    assert.ok(blocks(owned.xml, "Owner").length === 1, owned.xml);
  });

  await t.step("errors: bad continuation token, missing bucket", async () => {
    for (const token of ["%%%", "!!!notbase64", "_w"]) {
      const res = await rawList(svc.url, { "list-type": "2", "continuation-token": token });
      assert.equal(res.status, 400, `${token}: ${res.xml}`);
      assert.equal(codeOf(res.xml), "InvalidArgument");
    }
    for (const query of ["list-type=2", "", "list-type=2&max-keys=0"]) {
      const res = await fetch(`${svc.url}/no-such-bucket?${query}`);
      assert.equal(res.status, 404, query);
      assert.equal(codeOf(await res.text()), "NoSuchBucket", query);
    }
  });

  await t.step(
    "deleting the prefix page/ removes all 2500 keys below it, nothing else",
    async () => {
      const res = await fetch(`${svc.url}/${BUCKET}/page/`, { method: "DELETE" });
      assert.equal(res.status, 204, await res.text());
      const left = await rawList(svc.url, { "list-type": "2" });
      assert.deepEqual(show(left.entries), OTHER_KEYS);
      if (objectsOnLocalDisk) {
        assert.deepEqual(
          [...Deno.readDirSync(`${svc.dataDir}/${BUCKET}`)].map((e) => e.name).sort(),
          ["other", "page-sibling", "pagf"],
        );
      }
    },
  );

  s3.destroy();
});
