import assert from "node:assert/strict";
import { expireObject } from "./lifecycle-actions.ts";
import { DAY, ruleOf, withLifecycle } from "../../testing/lifecycle-fixtures.ts";
import { planOf } from "./lifecycle-plan.ts";
import { liveProgress } from "../live-progress.ts";

const expire30d = {
  bucket: "b",
  action: "delete",
  expire_after: "30d",
};

Deno.test("expiry: deletes only keys older than expire_after; preview matches the run", async () => {
  await withLifecycle(async (t) => {
    await t.put("b", "logs/old-1.txt", 40 * DAY, 11);
    await t.put("b", "logs/old-2.txt", 31 * DAY, 12);
    await t.put("b", "logs/new.txt", 29 * DAY);
    await t.put("b", "other/old.txt", 90 * DAY);
    const rule = { ...expire30d, prefix: "logs/", batch_size: 1 };
    const preview = await t.run(rule, { dryRun: true });
    assert.equal(preview.status, "succeeded");
    assert.deepEqual(preview.candidates.map((c) => [c.key, c.action, c.size]), [
      ["logs/old-1.txt", "expire", 11],
      ["logs/old-2.txt", "expire", 12],
    ]);
    assert.equal(preview.objects_scanned, 3);
    assert.equal(preview.objects_skipped, 1);
    // The preview changed nothing and recorded no event.
    assert.equal((await t.keys("b")).length, 4);
    assert.equal(t.events.length, 0);

    const run = await t.run(rule);
    assert.equal(run.status, "succeeded");
    assert.deepEqual(run.candidates, preview.candidates);
    assert.deepEqual(
      [run.objects_scanned, run.objects_affected, run.objects_skipped, run.bytes_affected],
      [3, 2, 1, 23],
    );
    assert.deepEqual(await t.keys("b"), ["logs/new.txt", "other/old.txt"]);
    assert.deepEqual(t.events.map((e) => [e.kind, e.key, e.operation]), [
      ["LifecycleExpired", "logs/old-1.txt", "lifecycle"],
      ["LifecycleExpired", "logs/old-2.txt", "lifecycle"],
    ]);
    const detail = t.events[0].lifecycle!;
    assert.equal(detail.rule, "r");
    assert.equal(detail.action, "expire");
    assert.equal(detail.expiration_age_seconds, 40 * 86_400);
    assert.equal(detail.object_created_at, new Date(t.clock.now() - 40 * DAY).toISOString());
    assert.equal(detail.content_length, 11);
  });
});

Deno.test("always skipped: markers, internal prefixes, artifacts, exclude and include globs", async () => {
  await withLifecycle(async (t) => {
    const old = 100 * DAY;
    for (
      const key of [
        "folder/",
        ".svc/state.json",
        ".dg/x",
        "app/reference.bin",
        "app/v1.zip.delta",
        "keep/a.log",
        "data/a.log",
        "data/a.txt",
        "data/deep/b.log",
      ]
    ) await t.put("b", key, old);
    const report = await t.run({
      ...expire30d,
      include_globs: ["data/**"],
      exclude_globs: ["**.txt"],
    });
    assert.deepEqual(report.candidates.map((c) => c.key), ["data/a.log", "data/deep/b.log"]);
    assert.equal(report.objects_scanned, 9);
    assert.equal(report.objects_skipped, 7);
  });
});

Deno.test("a bucket under a maintenance write gate is skipped with a failure", async () => {
  await withLifecycle(async (t) => {
    await t.put("b", "old", 100 * DAY);
    t.gates.set("b", "maintenance:3");
    const report = await t.run(expire30d);
    assert.equal(report.status, "failed");
    assert.match(report.error!, /maintenance job maintenance:3/);
    assert.equal(report.failures.length, 1);
    assert.deepEqual(await t.keys("b"), ["old"]);
  });
});

Deno.test("an aborted run stops between objects", async () => {
  await withLifecycle(async (t) => {
    await t.put("b", "a", 100 * DAY);
    await t.put("b", "b", 100 * DAY);
    const abort = new AbortController();
    abort.abort(new Error("killed"));
    const report = await t.run(expire30d, { signal: abort.signal });
    assert.equal(report.status, "cancelled");
    assert.deepEqual(await t.keys("b"), ["a", "b"]);
  });
});

Deno.test("expiry never removes a version written after the listing decided", async () => {
  await withLifecycle(async (t) => {
    await t.put("b", "k", 100 * DAY, 5);
    // The delete re-checks under the key lock: a young object at the key now is kept.
    const listed = (await t.objects.listObjects("b", { prefix: "", maxKeys: 10 })).objects[0];
    await t.put("b", "k", 0, 5);
    const acted = await expireObject(t.env, planOf(ruleOf(expire30d)), listed, t.clock.now());
    assert.equal(acted, false);
    assert.deepEqual(await t.keys("b"), ["k"]);
  });
});

Deno.test("transition copies and verifies; move deletes the source; archive keeps it", async () => {
  await withLifecycle(async (t) => {
    await t.put("b", "logs/a.txt", 40 * DAY, 100);
    await t.put("b", "logs/b.txt", 1 * DAY, 100);
    const move = {
      bucket: "b",
      prefix: "logs/",
      expire_after: "30d",
      action: {
        type: "transition",
        destination: { bucket: "cold", prefix: "archived/" },
        delete_source_after_success: true,
      },
    };
    const preview = await t.run(move, { dryRun: true });
    assert.deepEqual(
      preview.candidates.map((c) => [c.key, c.destination_bucket, c.destination_key]),
      [
        ["logs/a.txt", "cold", "archived/a.txt"],
      ],
    );
    const run = await t.run(move);
    assert.equal(run.status, "succeeded", run.error ?? "");
    assert.deepEqual(run.candidates, preview.candidates);
    assert.deepEqual(await t.keys("cold"), ["archived/a.txt"]);
    assert.deepEqual(await t.keys("b"), ["logs/b.txt"]);
    const copy = await t.objects.head("cold", "archived/a.txt");
    assert.equal(copy.meta.size, 100);
    assert.deepEqual(t.events.map((e) => [e.kind, e.lifecycle?.action]), [
      ["LifecycleTransitioned", "transition"],
      ["LifecycleExpired", "transition-source-delete"],
    ]);
    const moved = t.events[0].lifecycle!;
    assert.deepEqual(
      [moved.source_bucket, moved.source_key, moved.destination_bucket, moved.destination_key],
      ["b", "logs/a.txt", "cold", "archived/a.txt"],
    );
    assert.equal(moved.copied_bytes, 100);

    // archive (copy only): the source stays; a second run copies again (idempotent content).
    await t.put("b", "logs/c.txt", 50 * DAY, 7);
    t.events.length = 0;
    const archive = await t.run({
      ...move,
      action: { type: "archive", destination: { bucket: "cold" } },
    });
    assert.equal(archive.status, "succeeded");
    assert.deepEqual(archive.candidates.map((c) => c.destination_key), ["logs/c.txt"]);
    assert.deepEqual(await t.keys("b"), ["logs/b.txt", "logs/c.txt"]);
    assert.deepEqual(t.events.map((e) => e.kind), ["LifecycleTransitioned"]);
  }, ["b", "cold"]);
});

Deno.test("transition: a missing destination bucket fails the run; its own copies are skipped", async () => {
  await withLifecycle(async (t) => {
    await t.put("b", "a", 40 * DAY);
    const missing = await t.run({
      bucket: "b",
      action: { type: "transition", destination: { bucket: "nope" } },
    });
    assert.equal(missing.status, "failed");
    assert.match(missing.error!, /nope/);
    const inPlace = {
      bucket: "b",
      action: { type: "transition", destination: { bucket: "b", prefix: "archive/" } },
    };
    const first = await t.run(inPlace);
    assert.deepEqual(first.candidates.map((c) => c.destination_key), ["archive/a"]);
    const second = await t.run(inPlace);
    // archive/a lies in the destination: never transitioned again (no archive/archive/a).
    assert.deepEqual(second.candidates.map((c) => c.destination_key), ["archive/a"]);
    assert.deepEqual(await t.keys("b"), ["a", "archive/a"]);
  });
});

Deno.test("transition: a destination HEAD that disagrees keeps the source (a failure row)", async () => {
  await withLifecycle(async (t) => {
    await t.put("b", "a", 40 * DAY, 30);
    await t.put("b", "z", 40 * DAY, 31);
    // The destination reads back other bytes for "a" (a backend that lost or changed them).
    const real = t.objects.head.bind(t.objects);
    t.objects.head = async (bucket, key) => {
      const info = await real(bucket, key);
      return bucket === "cold" && key === "a"
        ? { ...info, meta: { ...info.meta, sha256: "0".repeat(64) } }
        : info;
    };
    const report = await t.run({
      bucket: "b",
      action: {
        type: "transition",
        destination: { bucket: "cold" },
        delete_source_after_success: true,
      },
    });
    assert.equal(report.status, "succeeded"); // one of two failed: the run goes on
    assert.equal(report.errors, 1);
    assert.equal(report.failures[0].key, "a");
    assert.match(report.failures[0].message, /failed verification/);
    assert.deepEqual(report.candidates.map((c) => c.key), ["z"]);
    assert.deepEqual(await t.keys("b"), ["a"]);
    assert.deepEqual(t.events.map((e) => [e.kind, e.key]), [
      ["LifecycleTransitioned", "z"],
      ["LifecycleExpired", "z"],
    ]);
  }, ["b", "cold"]);
});

Deno.test("while a run walks, its row reads live counters and a rate; after it, none", async () => {
  await withLifecycle(async (t) => {
    for (let i = 0; i < 4; i++) await t.put("b", `logs/${i}.txt`, 40 * DAY, 100);
    // The gate check before each page is where the walk stands between pages: peek there, and
    // let a second pass on the clock per page.
    const seen: NonNullable<ReturnType<typeof liveProgress>>[] = [];
    const get = t.gates.get.bind(t.gates);
    t.gates.get = (bucket: string) => {
      const live = liveProgress("lifecycle:r");
      if (live) seen.push(structuredClone(live));
      t.clock.advance(1000);
      return get(bucket);
    };
    const report = await t.run({ ...expire30d, batch_size: 1 });
    assert.equal(report.objects_affected, 4);
    assert.ok(seen.length >= 4, `${seen.length} peeks`);
    assert.equal(seen[0].progress.phase, "scan");
    assert.equal(seen[0].progress.objects_done, 0);
    assert.equal(seen[0].progress.objects_total, null, "a walk knows no total");
    const third = seen[3];
    assert.equal(third.progress.objects_done, 3);
    assert.equal(third.progress.bytes_done, 300, "bytes of the objects expired so far");
    // Three objects over the three seconds since the run began.
    assert.equal(third.rates?.objects_per_sec, 1);
    assert.equal(liveProgress("lifecycle:r"), null, "the run removed its entry");

    await t.put("b", "logs/again.txt", 40 * DAY);
    seen.length = 0;
    await t.run({ ...expire30d, batch_size: 1 }, { dryRun: true });
    assert.equal(seen[0].progress.phase, "preview");
  });
});
