import assert from "node:assert/strict";
import { FilesystemBackend } from "../../storage/fs/filesystem-backend.ts";
import type { DeltaContext } from "../delta-context.ts";
import { metaFor, randomBytes } from "../../testing/object-fixtures.ts";
import { groupFolder } from "./deltaspace-policy.ts";
import {
  countStrike,
  currentGeneration,
  DEFAULT_REBASELINE_RATIO,
  deltaGrown,
  deltaspaceLockKey,
  generationFolder,
  generationOf,
  groupRootOf,
  hintedFolder,
  nextGenerationFolder,
  noteGeneration,
  REBASELINE_RATIO_ENV,
  REBASELINE_STREAK,
  rebaselineRatio,
} from "./generations.ts";

const root = groupFolder("releases/*/app.tar");

Deno.test("generations: folder names, roots and the group's one lock", () => {
  assert.equal(generationFolder(root, 0), root);
  assert.equal(generationFolder(root, 12), `${root}g12/`);
  assert.equal(groupRootOf(`${root}g12/`), root);
  assert.equal(groupRootOf(root), root);
  assert.equal(groupRootOf("releases/1.0/"), "releases/1.0/");
  assert.equal(generationOf(`${root}g12/`), 12);
  assert.equal(generationOf(root), 0);
  assert.equal(generationOf(`${root}g0/`), 0);
  assert.equal(generationOf(`${root}refs/`), 0);
  const ctx = { bucketIdentity: (b: string) => `fs/${b}` };
  assert.equal(deltaspaceLockKey(ctx, "b", `${root}g3/`), deltaspaceLockKey(ctx, "b", root));
  assert.equal(deltaspaceLockKey(ctx, "b", root), `fs/b/${root}`);
  assert.equal(deltaspaceLockKey(ctx, "b", "a/g3/"), "fs/b/a/g3/", "parent folders keep theirs");
});

Deno.test("generations: the ratio, its env override and what counts as grown", () => {
  const before = Deno.env.get(REBASELINE_RATIO_ENV);
  try {
    Deno.env.delete(REBASELINE_RATIO_ENV);
    assert.equal(rebaselineRatio(), DEFAULT_REBASELINE_RATIO);
    Deno.env.set(REBASELINE_RATIO_ENV, "0.35");
    assert.equal(rebaselineRatio(), 0.35);
    Deno.env.set(REBASELINE_RATIO_ENV, "0");
    assert.equal(rebaselineRatio(), 0);
    for (const bad of ["2", "-0.1", "x", " "]) {
      Deno.env.set(REBASELINE_RATIO_ENV, bad);
      assert.equal(rebaselineRatio(), DEFAULT_REBASELINE_RATIO, bad);
    }
  } finally {
    if (before === undefined) Deno.env.delete(REBASELINE_RATIO_ENV);
    else Deno.env.set(REBASELINE_RATIO_ENV, before);
  }
  assert.equal(deltaGrown({ aborted: false, deltaBytes: 200 }, 1000, 0.2), false);
  assert.equal(deltaGrown({ aborted: false, deltaBytes: 201 }, 1000, 0.2), true);
  assert.equal(deltaGrown({ aborted: true }, 1000, 0.2), true);
  assert.equal(deltaGrown({ aborted: true }, 1000, 0), false, "0 turns it off");
});

Deno.test("generations: a streak of grown deltas, reset by any small one", () => {
  const ctx = {} as DeltaContext;
  const g = `${root}g1/`;
  assert.equal(REBASELINE_STREAK, 2);
  assert.equal(countStrike(ctx, "b", root, true), false);
  assert.equal(countStrike(ctx, "b", root, false), false, "a small delta resets");
  assert.equal(countStrike(ctx, "b", root, true), false);
  assert.equal(countStrike(ctx, "b", "other", true), false, "counted per group");
  // Any generation of the group counts toward the group's streak.
  assert.equal(countStrike(ctx, "b", g, true), true);
  assert.equal(countStrike(ctx, "b", g, true), false, "starts over after a rebaseline");
  assert.equal(countStrike({} as DeltaContext, "b", g, true), false, "per store");
});

Deno.test("generations: the current one is the highest folder present, hinted after", async () => {
  const dir = await Deno.makeTempDir({ prefix: "svc-generations-" });
  try {
    const inner = await FilesystemBackend.open(`${dir}/data`);
    await inner.createBucket("b");
    let lists = 0;
    const counting = Object.create(inner) as FilesystemBackend;
    counting.listObjects = (...args: Parameters<FilesystemBackend["listObjects"]>) => {
      lists++;
      return inner.listObjects(...args);
    };
    const ctx = { inner: counting } as unknown as DeltaContext;
    const write = async (name: string) => {
      const bytes = randomBytes(64);
      const staged = await inner.stageObject("b", name, new Blob([bytes]).stream());
      await staged.commit(metaFor(bytes));
      return bytes;
    };
    // A new group: no baseline, generation 0.
    assert.deepEqual(await currentGeneration(ctx, "b", root), { folder: root, reference: null });
    assert.equal(await nextGenerationFolder(ctx, "b", root), `${root}g1/`);
    await write(`${root}reference.bin`);
    await write(`${root}refs/${"a".repeat(64)}`);
    await write(`${root}g2/reference.bin`);
    await write(`${root}g10/refs/${"b".repeat(64)}`); // stale markers only
    lists = 0;
    // The hint (0) still has its baseline: trusted, no LIST (a process's own writes move it).
    let current = await currentGeneration(ctx, "b", root);
    assert.equal(current.folder, root);
    assert.equal(lists, 0);
    // A fresh store (a restart) lists once.
    const fresh = { inner: counting } as unknown as DeltaContext;
    current = await currentGeneration(fresh, "b", root);
    assert.equal(current.folder, `${root}g10/`);
    assert.equal(current.reference, null, "a folder of stale markers: baseline created there");
    assert.equal(await nextGenerationFolder(fresh, "b", root), `${root}g11/`);
    assert.equal(hintedFolder(fresh, "b", root), `${root}g10/`);
    noteGeneration(fresh, "b", `${root}g2/`);
    lists = 0;
    current = await currentGeneration(fresh, "b", root);
    assert.equal(current.folder, `${root}g2/`);
    assert.ok(current.reference);
    assert.equal(lists, 0, "a valid hint costs a HEAD, no LIST");
    await inner.deleteObject("b", `${root}g2/reference.bin`);
    current = await currentGeneration(fresh, "b", root);
    assert.equal(current.folder, `${root}g10/`, "a gone hint is listed again");
    assert.equal(lists, 1);
    assert.equal(hintedFolder(fresh, "b", "a/b/"), "a/b/", "parent folders as they are");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("cost-aware re-baselining: a one-time jump does not pay, a drift does", () => {
  const size = 1000;
  const run = (shares: number[], stored = 1) => {
    const ctx = {} as DeltaContext;
    const root = ".dg/00112233445566778899aabbccddeeff/";
    return shares.map((share) =>
      countStrike(ctx, "b", root, deltaGrown({ aborted: false, deltaBytes: share * size }, size), {
        deltaBytes: share * size,
        size,
        baselineCost: size * stored,
      })
    );
  };
  // typescript's six releases (zstd token-form deltas against the first, measured): two minor
  // jumps; the excess reaches 1.03 then 1.42 of a baseline, under the payback: no move.
  assert.deepEqual(run([0.007, 0.332, 0.332, 0.391, 0.39]), [false, false, false, false, false]);
  // ... and pays once its deltas have cost 1.5 baselines beyond a fresh one's.
  assert.deepEqual(run([0.01, 0.44, 0.44, 0.44, 0.44]), [false, false, false, false, true]);
  // 12% drift per version: excess .12, .36, .72, 1.2, 1.8 of a baseline: the sixth moves.
  assert.deepEqual(
    run([0.12, 0.24, 0.36, 0.48, 0.6, 0.72]),
    [false, false, false, false, false, true],
  );
  // A baseline that storage compression shrinks to a fifth is cheap to replace: sooner.
  assert.deepEqual(run([0.12, 0.24, 0.36], 0.2), [false, false, true]);
  // Never on one strike alone, however large.
  assert.deepEqual(run([0.01, 0.9, 0.1, 0.9]), [false, false, false, false]);
});
