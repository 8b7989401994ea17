/**
 * Folding stopped instances' usage tallies: the folded document reports exactly the writes the
 * folded ones did after any `since` (so no reader's answer changes, whatever its last scan), the
 * stale document goes, a document caught between the fold and its removal counts once, two
 * instances folding at once fold it once, and a tally too old to resume starts under a new id.
 */
import assert from "node:assert/strict";
import { S3Client } from "../../storage/s3/s3-client.ts";
import { testOptions } from "../../testing/s3-test-server.ts";
import { startSvcServer } from "../../../tests/helpers/s3-servers.ts";
import { type Checkpoint, type TallyDocument, writesSince } from "./fleet-usage-tally.ts";
import {
  ABANDON_AFTER_MS,
  FOLD_AFTER_MS,
  FOLDED_INSTANCE,
  foldInto,
  foldStale,
  isFolded,
} from "./fleet-usage-fold.ts";
import { FleetUsage, USAGE_PREFIX } from "./fleet-usage.ts";

const DAY = 24 * 60 * 60 * 1000;
const NOW = 1_800_000_000_000;
const keyOf = (instance: string) => `${USAGE_PREFIX}${encodeURIComponent(instance)}.json`;

/** A cumulative series of `n` checkpoints from `start`, steps of random writes and removals. */
function series(start: number, n: number): Checkpoint[] {
  const points: Checkpoint[] = [];
  let [count, logical, stored] = [0, 0, 0];
  let at = start;
  for (let i = 0; i < n; i++) {
    at += 1 + Math.floor(Math.random() * 1000);
    const delta = Math.floor(Math.random() * 7) - 2;
    count += delta;
    logical += delta * 1000;
    stored += delta * 300;
    points.push([at, count, logical, stored]);
  }
  return points;
}

function doc(instance: string, updatedAt: number, buckets: Record<string, Checkpoint[]>) {
  return { instance, started_at: updatedAt - DAY, updated_at: updatedAt, buckets };
}

Deno.test("usage fold: the folded tally reports the same writes as the folded ones, after any since", () => {
  const a = doc("a", NOW, { b: series(1000, 20), c: series(500, 5) });
  const b = doc("b", NOW, { b: series(3000, 20) });
  const folded = foldInto(foldInto(null, a, () => true), b, () => true);
  assert.deepEqual(folded.folded, { a: NOW, b: NOW });
  const times = [...a.buckets.b, ...b.buckets.b, ...a.buckets.c].map((p) => p[0]);
  for (const since of [0, ...times, ...times.map((t) => t - 1), Infinity]) {
    for (const bucket of ["b", "c", "none"]) {
      assert.deepEqual(
        writesSince([folded], bucket, since),
        writesSince([a, b], bucket, since),
        `${bucket} since ${since}`,
      );
    }
  }
  assert.ok(isFolded(folded, a));
  assert.ok(!isFolded(folded, { ...a, updated_at: NOW + 1 }), "a later document is another");
  // Entries of documents gone from the listing are dropped; the one folded now stays.
  const next = foldInto(folded, doc("c", NOW, {}), (instance) => instance === "b");
  assert.deepEqual(next.folded, { b: NOW, c: NOW });
});

async function withStore(fn: (shared: { client: S3Client; bucket: string }) => Promise<void>) {
  const server = await startSvcServer();
  const client = new S3Client(
    testOptions(server.endpoint, {
      accessKeyId: server.accessKeyId,
      secretAccessKey: server.secretAccessKey,
      maxAttempts: 1,
    }),
  );
  try {
    await client.send({ method: "PUT", bucket: "coord", idempotent: true });
    await fn({ client, bucket: "coord" });
  } finally {
    await server.stop();
  }
}

async function putDoc(shared: { client: S3Client; bucket: string }, doc: TallyDocument) {
  await shared.client.send({
    method: "PUT",
    bucket: shared.bucket,
    key: keyOf(doc.instance),
    body: JSON.stringify(doc),
    idempotent: true,
  });
}

async function exists(shared: { client: S3Client; bucket: string }, key: string) {
  try {
    await shared.client.send({ method: "HEAD", bucket: shared.bucket, key, idempotent: true });
    return true;
  } catch {
    return false;
  }
}

/**
 * What a fresh reader (no cache) sums for bucket `b` after each `since`; its clock is two days
 * behind, so it finds nothing stale and folds nothing itself.
 */
async function answers(shared: { client: S3Client; bucket: string }, sinces: number[]) {
  const reader = new FleetUsage(shared, { instance: "reader", now: () => NOW - 2 * DAY });
  try {
    const docs = await reader.others();
    return sinces.map((since) => writesSince(docs, "b", since));
  } finally {
    await reader.close();
  }
}

Deno.test({
  name: "usage fold: a stopped instance's tally is folded, every reader's answer unchanged",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    await withStore(async (shared) => {
      const stale = doc("stopped", NOW - FOLD_AFTER_MS - DAY, { b: series(NOW - 20 * DAY, 30) });
      const stale2 = doc("stopped2", NOW - FOLD_AFTER_MS - 1, { b: series(NOW - 15 * DAY, 10) });
      const live = doc("live", NOW - DAY, { b: series(NOW - 10 * DAY, 10) });
      for (const d of [stale, stale2, live]) await putDoc(shared, d);
      const sinces = [0, ...stale.buckets.b.map((p) => p[0]), NOW - 12 * DAY, NOW];
      const before = await answers(shared, sinces);

      // Two instances fold at once: one wins each step, the other stops or finds it done.
      const keys = [stale, stale2, live].map((d) => keyOf(d.instance));
      const foldedKey = keyOf(FOLDED_INSTANCE);
      await Promise.all([
        foldStale(shared, foldedKey, keys, keyOf, NOW),
        foldStale(shared, foldedKey, keys, keyOf, NOW),
      ]);
      await foldStale(shared, foldedKey, keys, keyOf, NOW); // what a conflict left, next round
      assert.ok(!(await exists(shared, keyOf("stopped"))), "the stale document is gone");
      assert.ok(!(await exists(shared, keyOf("stopped2"))));
      assert.ok(await exists(shared, keyOf("live")), "a live one stays");
      assert.deepEqual(await answers(shared, sinces), before, "same writes after every since");

      // Caught between the fold and its removal (the document is back as it was): counted once.
      await putDoc(shared, stale);
      assert.deepEqual(await answers(shared, sinces), before);

      // An instance answering usage folds what it finds stale, in the background.
      const folder = new FleetUsage(shared, { instance: "folder", now: () => NOW });
      try {
        await folder.others();
        for (let i = 0; i < 50 && await exists(shared, keyOf("stopped")); i++) {
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
        assert.ok(!(await exists(shared, keyOf("stopped"))), "folded by a reader");
      } finally {
        await folder.close();
      }
      assert.deepEqual(await answers(shared, sinces), before);
    });
  },
});

Deno.test({
  name: "usage fold: a tally too old to resume starts under a new id",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    await withStore(async (shared) => {
      await putDoc(shared, doc("old", NOW - ABANDON_AFTER_MS - 1, { b: series(NOW - 9 * DAY, 3) }));
      await putDoc(shared, doc("recent", NOW - DAY, { b: series(NOW - 9 * DAY, 3) }));
      const old = await FleetUsage.open(shared, { instance: "old", now: () => NOW });
      const recent = await FleetUsage.open(shared, { instance: "recent", now: () => NOW });
      try {
        assert.notEqual(old.instance, "old");
        assert.equal(recent.instance, "recent");
      } finally {
        await old.close();
        await recent.close();
      }
    });
  },
});
