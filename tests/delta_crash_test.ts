/**
 * kill -9 while version groups change their baselines (issue 28): archive and tar versions are
 * written, overwritten and deleted concurrently (new groups, new baselines, re-baselining, the
 * removal of a group's last version and its baseline) while the server is SIGKILLed at varying
 * moments, several times over one data directory. Afterwards every acknowledged write reads back
 * byte for byte, every key whose delete was acknowledged is gone, and the integrity scan finds no
 * damaged object and no delta without its baseline (leaked baselines and markers are allowed:
 * they cost space, never data).
 */
import assert from "node:assert/strict";
import { gzipSync } from "node:zlib";
import {
  DeleteObjectCommand,
  GetObjectCommand,
  PutObjectCommand,
  type S3Client,
} from "@aws-sdk/client-s3";
import { bytesOf, objectsOnLocalDisk, signedFetch as fetch, startSvc } from "./helpers/svc.ts";
import { sha256Hex } from "./helpers/delta.ts";
import { tar } from "./helpers/tar.ts";
import { AdminClient } from "./helpers/admin.ts";
import { type ScanStatus, waitForScan } from "./helpers/diagnostics.ts";

const BUCKET = "crashy";
const utf8 = new TextEncoder();

/** Version `v` of artifact `a`: text members, each version drifting a little further. */
function artifact(a: number, v: number): Uint8Array {
  const members = Array.from({ length: 12 }, (_, m) => {
    const lines = Array.from(
      { length: 300 },
      (_, l) => `artifact ${a} member ${m} line ${l} ${(l * 7919 + m) % 1013}`,
    );
    // Each version rewrites a growing share of the members: deltas grow, baselines change.
    if (m < v) lines.push(`rewritten in version ${v} of member ${m} ${"x".repeat(2000 + v * 37)}`);
    return { name: `m${m}.txt`, data: utf8.encode(lines.join("\n")) };
  });
  return tar(members);
}

const bodyOf = (a: number, v: number, ext: string) =>
  ext === "tgz"
    ? new Uint8Array(gzipSync(artifact(a, v), { level: 6 }))
    : new Uint8Array(artifact(a, v));

type Expectation = { kind: "body"; sha256: string } | { kind: "gone" };

Deno.test({
  name: "delta crash: kill -9 during baseline changes loses no acknowledged write",
  ignore: !objectsOnLocalDisk,
  async fn() {
    const dataDir = await Deno.makeTempDir({ prefix: "svc-delta-crash-" });
    const env = { SVC_REBASELINE_RATIO: "0.05", SVC_CODEC_SLOT_WAIT_SECS: "250" };
    /** What the last acknowledged operation of each key promises. */
    const expected = new Map<string, Expectation>();
    /** Keys an unacknowledged operation touched: either outcome is fine, never a damaged one. */
    const uncertain = new Set<string>();
    const next = [0, 0];
    for (let round = 0; round < 4; round++) {
      const svc = await startSvc({ dataDir, env });
      const s3 = svc.client();
      if (round === 0) {
        assert.equal((await fetch(`${svc.url}/${BUCKET}`, { method: "PUT" })).status, 200);
      }
      let killed = false;
      /** One artifact's versions in order: put the next, then delete the one three before. */
      const worker = async (a: 0 | 1, ext: "tgz" | "tar") => {
        while (!killed) {
          const v = next[a]++;
          const key = `rel/${v}/app${a}.${ext}`;
          const body = bodyOf(a, v % 12, ext);
          uncertain.add(key);
          try {
            await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: body }));
          } catch {
            return; // cut off by the kill: this key stays uncertain
          }
          expected.set(key, { kind: "body", sha256: sha256Hex(body) });
          uncertain.delete(key);
          const old = `rel/${v - 3}/app${a}.${ext}`;
          if (v < 3 || uncertain.has(old)) continue;
          uncertain.add(old);
          try {
            await s3.send(new DeleteObjectCommand({ Bucket: BUCKET, Key: old }));
          } catch {
            return;
          }
          expected.set(old, { kind: "gone" });
          uncertain.delete(old);
        }
      };
      const workers = Promise.all([worker(0, "tgz"), worker(1, "tar")]);
      // Long enough for several versions, new baselines and removals, different each round.
      await new Promise((resolve) => setTimeout(resolve, 700 + 450 * round));
      killed = true;
      svc.kill("SIGKILL");
      await workers;
      await svc.stop().catch(() => {});
    }
    const acknowledged = [...expected.values()];
    assert.ok(acknowledged.filter((e) => e.kind === "body").length >= 8, "versions written");
    assert.ok(acknowledged.filter((e) => e.kind === "gone").length >= 4, "versions deleted");

    await using svc = await startSvc({ dataDir, env });
    const s3 = svc.client();
    for (const [key, want] of expected) {
      if (uncertain.has(key)) continue;
      await assertState(s3, key, want);
    }
    for (const key of uncertain) await assertReadableOrGone(s3, key);

    const admin = new AdminClient(svc.url);
    await admin.login();
    await admin.json("POST", "/diagnostics/scan/start", { bytes_per_sec: 0 }, 202);
    const status: ScanStatus = await waitForScan(admin, (s) => s.state === "finished");
    const harmful = status.findings.filter((f) =>
      !["orphan_baseline", "orphan_marker", "stale_delta", "stale_passthrough"].includes(f.kind)
    );
    assert.deepEqual(harmful, [], JSON.stringify(status.findings));
    await Deno.remove(dataDir, { recursive: true });
  },
});

async function assertState(s3: S3Client, key: string, want: Expectation): Promise<void> {
  if (want.kind === "gone") {
    await assert.rejects(
      s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: key })),
      (err: Error) => err.name === "NoSuchKey",
      `${key} was deleted`,
    );
    return;
  }
  const got = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
  assert.equal(sha256Hex(await bytesOf(got.Body)), want.sha256, `${key}: body differs`);
}

/** A key whose last operation was cut off: absent, or whole (its sha256 checked by svc). */
async function assertReadableOrGone(s3: S3Client, key: string): Promise<void> {
  try {
    const got = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
    await bytesOf(got.Body);
  } catch (err) {
    assert.equal((err as Error).name, "NoSuchKey", `${key}: ${String(err)}`);
  }
}
