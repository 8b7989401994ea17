/**
 * The scrub and the efficiency report over the version-group layout (`.dg/<id>/reference.bin`,
 * markers under `.dg/<id>/refs/`, deltas naming their deltaspace in their metadata) and the
 * `storageReason` field, on an in-memory backend. The folder layout is covered end to end by
 * tests/diagnostics_test.ts. The fake codec "rebuilds" a delta as its own bytes, so a delta's
 * sha256 is that of its stored bytes here.
 */
import assert from "node:assert/strict";
import { metaFor } from "../../testing/object-fixtures.ts";
import type { ObjectInfo, ObjectMeta } from "../../storage/mod.ts";
import type { DeltaDecoder, RawBackend } from "./object-checks.ts";
import { scanBucketEfficiency } from "./efficiency-report.ts";
import { Scrubber } from "./scrub.ts";
import { emptyProgress, saveScrubState, type ScrubState } from "./scrub-state.ts";

const enc = new TextEncoder();
const OLD = Date.now() - 3_600_000;

type Stored = { info: ObjectInfo; bytes: Uint8Array };

function store(entries: [string, string, Partial<ObjectMeta> & Record<string, unknown>][]) {
  const objects = new Map<string, Stored>();
  for (const [name, text, extra] of entries) {
    const bytes = enc.encode(text);
    const meta = { ...metaFor(bytes), lastModified: OLD, ...extra } as ObjectMeta;
    objects.set(name, { info: { key: name, storedSize: bytes.length, meta }, bytes });
  }
  const raw: RawBackend = {
    listObjects(_bucket, options) {
      const names = [...objects.keys()].sort().filter((n) =>
        options.startAfter === undefined || n > options.startAfter
      );
      const page = names.slice(0, options.maxKeys);
      return Promise.resolve({
        objects: page.map((n) => objects.get(n)!.info),
        commonPrefixes: [],
        isTruncated: page.length < names.length,
        nextStartAfter: page[page.length - 1],
      });
    },
    headObject: (_bucket, key) => Promise.resolve(objects.get(key)?.info ?? null),
    getObject(_bucket, key) {
      const found = objects.get(key);
      if (!found) return Promise.resolve(null);
      return Promise.resolve({ info: found.info, body: ReadableStream.from([found.bytes]) });
    },
  };
  return raw;
}

const decode: DeltaDecoder = async (_base, delta, out) => {
  await Deno.writeFile(out, delta);
};

const sha = (text: string) => metaFor(enc.encode(text)).sha256;

function groupStore() {
  return store([
    [".dg/g1/reference.bin", "baseline one", { storage: "reference", deltaGroup: "rel/app-*.zip" }],
    // Markers as the group layout writes them: a hashed name, the key in user metadata...
    [".dg/g1/refs/0a1b2c", "", { userMeta: { key: encodeURIComponent("rel/app-1.zip") } }],
    // ...or (older drafts) the URL-encoded key as the name.
    [".dg/g1/refs/rel%2Fgone.zip", "", {}],
    [".dg/g3/reference.bin", "nobody's baseline", { storage: "reference" }],
    ["rel/app-1.zip.delta", "d1", {
      storage: "delta",
      deltaspace: ".dg/g1/",
      referenceSha256: sha("baseline one"),
      size: 2,
    }],
    ["rel/app-2.zip.delta", "d2", { storage: "delta", deltaspace: ".dg/g2/" }],
    ["rel/readme.txt", "hello", { storageReason: "not_eligible" }],
    ["rel/notes.zip", "zzz", { storageReason: "ratio_exceeded" }],
  ]);
}

Deno.test("scrub: the group layout's findings", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const findings: string[] = [];
    const scrubber = new Scrubber({
      raw: () => groupStore(),
      decode: () => decode,
      bucketNames: () => Promise.resolve(["b"]),
      compressed: () => true,
      stateFile: `${dir}/state.json`,
      scratchDir: dir,
      defaults: () => ({ bytesPerSec: 0, maxFindings: 10 }),
      observer: { object() {}, finding: (kind) => findings.push(kind), running() {} },
      pageSize: 2,
    });
    await scrubber.start({});
    while (scrubber.running) await new Promise((r) => setTimeout(r, 10));
    const state = scrubber.state()!;
    assert.equal(state.state, "finished");
    const got = state.findings.map((f) => `${f.kind} ${f.stored_name}`).sort();
    assert.deepEqual(got, [
      "missing_baseline rel/app-2.zip.delta",
      "orphan_baseline .dg/g3/reference.bin",
      "orphan_marker .dg/g1/refs/rel%2Fgone.zip",
    ]);
    assert.equal(findings.length, 3);
    const progress = state.per_bucket.b;
    assert.equal(progress.objects_checked, 4);
    assert.equal(progress.objects_ok, 3); // app-1 rebuilt, readme and notes read
    assert.equal(progress.markers_checked, 2);
    assert.equal(progress.baselines_checked, 2);
    const saved = JSON.parse(await Deno.readTextFile(`${dir}/state.json`));
    assert.equal(saved.state, "finished");
    assert.equal(saved.cursor, null);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("efficiency report: group deltaspaces, markers, group keys and reasons", async () => {
  const raw = groupStore();
  const report = await scanBucketEfficiency(
    { listStored: (b, o) => raw.listObjects(b, o), compressed: () => true },
    "b",
  );
  assert.equal(report.objects, 4);
  assert.deepEqual(report.kinds, { delta: 2, passthrough: 2 });
  assert.deepEqual(report.passthrough_reasons, { not_eligible: 1, ratio_exceeded: 1 });
  assert.equal(report.marker_count, 2);
  assert.equal(report.baselines, 2);
  const total = [
    "baseline one",
    "nobody's baseline",
    "d1",
    "d2",
    "hello",
    "zzz",
  ].reduce((n, t) => n + t.length, 0);
  assert.equal(report.stored_bytes, total);
  const g1 = report.deltaspaces.find((d) => d.deltaspace === ".dg/g1/")!;
  assert.equal(g1.group_key, "rel/app-*.zip");
  assert.equal(g1.objects, 1);
  assert.equal(g1.baseline_bytes, "baseline one".length);
  assert.equal(g1.stored_bytes, "baseline one".length + 2);
  const rel = report.deltaspaces.find((d) => d.deltaspace === "rel/")!;
  assert.deepEqual(rel.kinds, { passthrough: 2 });
  assert.equal(rel.grade, "E");
  const off = await scanBucketEfficiency(
    { listStored: (b, o) => raw.listObjects(b, o), compressed: () => false },
    "b",
  );
  assert.deepEqual(off.passthrough_reasons, { compression_off: 8 });
});

Deno.test("scrub: backend failures are findings, and findings are capped", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const good = store([
      ["a.txt", "one", {}],
      ["b.txt", "two", {}],
      ["c.txt", "three", { sha256: "0".repeat(64) }],
    ]);
    const failing: RawBackend = {
      ...good,
      getObject: (bucket, key) =>
        key === "b.txt"
          ? Promise.reject(new Error("backend said 500"))
          : good.getObject(bucket, key),
    };
    const scrubber = new Scrubber({
      raw: () => failing,
      decode: () => decode,
      bucketNames: () => Promise.resolve(["b"]),
      compressed: () => true,
      stateFile: `${dir}/state.json`,
      scratchDir: dir,
      defaults: () => ({ bytesPerSec: 0, maxFindings: 1 }),
    });
    await scrubber.start({});
    while (scrubber.running) await new Promise((r) => setTimeout(r, 10));
    const state = scrubber.state()!;
    assert.equal(state.findings.length, 1);
    assert.equal(state.findings[0].kind, "unreadable");
    assert.match(state.findings[0].detail, /backend said 500/);
    assert.equal(state.findings_total, 2);
    assert.equal(state.findings_dropped, 1);
    assert.equal(state.per_bucket.b.objects_ok, 1);
    assert.equal(state.per_bucket.b.objects_failed, 2);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("scrub: a resumed run starts after its cursor and keeps its orphan bookkeeping", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const progress = { ...emptyProgress(), state: "scanning" as const, objects_checked: 0 };
    const saved: ScrubState = {
      version: 1,
      run_id: "r1",
      state: "running",
      started_at: OLD,
      updated_at: OLD,
      bucket_filter: null,
      buckets: ["b"],
      cursor: { bucket: "b", after: ".dg/g3/reference.bin" },
      resumes: 0,
      bytes_per_sec: 0,
      max_findings: 10,
      per_bucket: { b: { ...progress, baselines_checked: 2, markers_checked: 2 } },
      findings: [],
      findings_total: 0,
      findings_dropped: 0,
      open: {
        referenced: [],
        baselines: { ".dg/g1/": ".dg/g1/reference.bin", ".dg/g3/": ".dg/g3/reference.bin" },
        since: OLD + 1,
      },
    };
    await saveScrubState(`${dir}/state.json`, saved);
    const scrubber = new Scrubber({
      raw: () => groupStore(),
      decode: () => decode,
      bucketNames: () => Promise.resolve(["b"]),
      compressed: () => true,
      stateFile: `${dir}/state.json`,
      scratchDir: dir,
      defaults: () => ({ bytesPerSec: 0, maxFindings: 10 }),
    });
    await scrubber.init();
    assert.equal(scrubber.state()!.resumes, 1);
    while (scrubber.running) await new Promise((r) => setTimeout(r, 10));
    const state = scrubber.state()!;
    assert.equal(state.state, "finished");
    // Only what follows the cursor is checked: the markers before it are not looked at again.
    assert.deepEqual(state.findings.map((f) => `${f.kind} ${f.stored_name}`).sort(), [
      "missing_baseline rel/app-2.zip.delta",
      "orphan_baseline .dg/g3/reference.bin",
    ]);
    assert.equal(state.per_bucket.b.objects_checked, 4);
    assert.equal(state.per_bucket.b.markers_checked, 2);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
