/**
 * Replication, black-box: a real svc with two backends — its own filesystem and a second svc as
 * an S3 backend — driven over S3 (AWS SDK) and the admin API like an operator. A rule replicates
 * 1,000 objects (delta-compressed and multipart among them) into a `replication_target_only`
 * bucket through run-now, survives a kill -9 mid-run by resuming from its cursor, and `verify`
 * finds an object changed behind svc's back. The event path: later PUTs and deletes arrive within
 * seconds; pause stops it; run-now on a paused rule still runs once. Each conflict policy decides.
 */
import {
  CompleteMultipartUploadCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  UploadPartCommand,
} from "@aws-sdk/client-s3";
import assert from "node:assert/strict";
import { AdminClient } from "./helpers/admin.ts";
import { clientFor, startBackingSvc, twoBackendsYaml } from "./helpers/s3-front.ts";
import type { S3Server } from "./helpers/s3-servers.ts";
import { randomBytes, signedFetch, startSvc, type SvcProcess } from "./helpers/svc.ts";

type Json = Record<string, unknown>;

interface Front {
  svc: SvcProcess;
  s3: S3Client;
  admin: AdminClient;
}

/** The front svc: `src` on its filesystem, every other bucket named here on the backing svc. */
async function startFront(
  dir: string,
  backing: S3Server,
  rules: string,
  env: Record<string, string> = {},
): Promise<Front> {
  const yaml = `${twoBackendsYaml(dir, backing)}
  buckets:
    mirror:
      backend: remote
      replication_target_only: true
    dst-nw:
      backend: remote
    dst-cd:
      backend: remote
    dst-sk:
      backend: remote
  replication:
    tick_interval: 5s
    rules:
${rules}
advanced:
  debug_headers: true
`;
  await Deno.mkdir(`${dir}/local`, { recursive: true });
  await Deno.writeTextFile(`${dir}/front.yaml`, yaml);
  const svc = await startSvc({
    dataDir: dir,
    args: ["--config", `${dir}/front.yaml`],
    env: { SVC_BACKEND_LIST_FRESH_SECS: "0", ...env },
  });
  const admin = new AdminClient(svc.url);
  await admin.login();
  return { svc, s3: svc.client({ checksums: false }), admin };
}

async function text(s3: S3Client, Bucket: string, Key: string): Promise<string | null> {
  try {
    const out = await s3.send(new GetObjectCommand({ Bucket, Key }));
    return await out.Body!.transformToString();
  } catch (err) {
    if ((err as { name?: string }).name === "NoSuchKey") return null;
    throw err;
  }
}

async function keysOf(s3: S3Client, Bucket: string, Prefix = ""): Promise<string[]> {
  const keys: string[] = [];
  let token: string | undefined;
  do {
    const page = await s3.send(
      new ListObjectsV2Command({ Bucket, Prefix, ContinuationToken: token }),
    );
    keys.push(...(page.Contents ?? []).map((o) => o.Key!));
    token = page.NextContinuationToken;
  } while (token);
  return keys;
}

async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, ms = 20_000) {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    const value = await probe();
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`Timed out waiting for ${what}`);
}

async function pool<T>(items: T[], limit: number, fn: (item: T) => Promise<unknown>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < items.length) await fn(items[next++]);
    }),
  );
}

const runNow = (admin: AdminClient, rule: string) =>
  admin.json("POST", `/jobs/replication:${rule}/run-now`);

/** 1,000 keys under bulk/: 990 small objects in ten directories, nine zips, one multipart. */
function bulkKeys(): string[] {
  const keys: string[] = [];
  for (let d = 0; d < 10; d++) {
    for (let k = 0; k < 99; k++) {
      keys.push(`bulk/d${d}/k${String(k).padStart(3, "0")}.txt`);
    }
  }
  return keys;
}

Deno.test("replication: 1,000 objects into an S3-backed target-only bucket; kill -9 mid-run resumes; verify", async () => {
  const dir = await Deno.makeTempDir({ prefix: "svc-replication-" });
  const backing = await startBackingSvc(["mirror"]);
  const rules = `      - name: bulk
        enabled: false
        source: { bucket: src, prefix: bulk/ }
        destination: { bucket: mirror }
        batch_size: 20`;
  let front = await startFront(dir, backing, rules, { SVC_REPLICATION_TRANSFERS: "1" });
  try {
    const s3 = front.s3;
    await s3.send(new CreateBucketCommand({ Bucket: "src" }));
    const small = bulkKeys();
    await pool(small, 16, (Key) =>
      s3.send(
        new PutObjectCommand({
          Bucket: "src",
          Key,
          Body: `body of ${Key}`,
          ContentType: "text/x-test",
          Metadata: { origin: Key },
        }),
      ));
    // Delta-compressed: versions of one artifact sharing most of their bytes.
    const base = randomBytes(200_000);
    const zips: Record<string, Uint8Array> = {};
    for (let v = 1; v <= 9; v++) {
      const body = base.slice();
      body.set(randomBytes(100), v * 1000);
      zips[`bulk/zips/app-${v}.zip`] = body;
      await s3.send(
        new PutObjectCommand({ Bucket: "src", Key: `bulk/zips/app-${v}.zip`, Body: body }),
      );
    }
    const stored = await signedFetch(`${front.svc.url}/src/bulk/zips/app-5.zip`, {
      method: "HEAD",
    });
    assert.equal(stored.headers.get("x-amz-storage-type"), "delta");
    // Multipart: two parts; its ETag is the md5 of the part md5s, "-2".
    const upload = await s3.send(
      new CreateMultipartUploadCommand({ Bucket: "src", Key: "bulk/big.bin" }),
    );
    const parts = [randomBytes(5 * 1024 * 1024), randomBytes(1024)];
    const etags = [];
    for (const [i, Body] of parts.entries()) {
      const part = await s3.send(
        new UploadPartCommand({
          Bucket: "src",
          Key: "bulk/big.bin",
          UploadId: upload.UploadId,
          PartNumber: i + 1,
          Body,
        }),
      );
      etags.push({ ETag: part.ETag, PartNumber: i + 1 });
    }
    const done = await s3.send(
      new CompleteMultipartUploadCommand({
        Bucket: "src",
        Key: "bulk/big.bin",
        UploadId: upload.UploadId,
        MultipartUpload: { Parts: etags },
      }),
    );
    assert.match(done.ETag!, /-2"$/);
    const total = small.length + 9 + 1;
    assert.equal(total, 1000);

    // Clients cannot write to the target-only bucket; replication will.
    await assert.rejects(
      () => s3.send(new PutObjectCommand({ Bucket: "mirror", Key: "x", Body: "x" })),
      (err: { $metadata?: { httpStatusCode?: number } }) => err.$metadata?.httpStatusCode === 403,
    );

    // run-now on the disabled rule, killed with SIGKILL once part of it is across.
    const remote = clientFor(backing);
    let answered: unknown = undefined;
    const inFlight = runNow(front.admin, "bulk").then(
      (report) => answered = report,
      () => null, // the kill cuts the request
    );
    // Generous: the whole suite runs in parallel on a loaded machine.
    const before = await waitFor("part of the copy", async () => {
      if (answered !== undefined) {
        throw new Error(`run-now ended first: ${JSON.stringify(answered)}`);
      }
      const n = await remote.send(new ListObjectsV2Command({ Bucket: "mirror" }))
        .then((page) => page.KeyCount ?? 0).catch(() => 0);
      return n >= 100 ? n : undefined;
    }, 180_000);
    front.svc.kill("SIGKILL");
    await inFlight;
    await front.svc.stop();
    const copiedBeforeKill = (await keysOf(remote, "mirror")).length;
    assert.ok(before <= copiedBeforeKill && copiedBeforeKill < total, `${copiedBeforeKill}`);

    front = await startFront(dir, backing, rules, { SVC_REPLICATION_TRANSFERS: "8" });
    // The run the dead process left running became failed at boot.
    const row = await front.admin.json("GET", "/jobs/replication:bulk");
    assert.equal((row.last_run as Json).status, "failed");
    const resumed = await runNow(front.admin, "bulk");
    assert.equal(resumed.status, "succeeded", JSON.stringify(resumed));
    assert.equal(resumed.errors, 0);
    // It resumed from the cursor: it did not look at the keys before it again, and it copied
    // what was left (at most the in-flight batch twice).
    assert.ok(Number(resumed.objects_scanned) < total, `scanned ${resumed.objects_scanned}`);
    assert.ok(
      Number(resumed.objects_affected) <= total - copiedBeforeKill + 20,
      `affected ${resumed.objects_affected} after ${copiedBeforeKill}`,
    );
    const s3b = front.s3;
    assert.equal((await keysOf(s3b, "mirror")).length, total);

    // Logical copies: bytes, content type, user metadata and the multipart ETag travel.
    for (const key of [small[0], small[500], small[989]]) {
      assert.equal(await text(s3b, "mirror", key), `body of ${key}`);
      const head = await s3b.send(new HeadObjectCommand({ Bucket: "mirror", Key: key }));
      assert.equal(head.ContentType, "text/x-test");
      assert.deepEqual(head.Metadata, { origin: key });
    }
    const zip = await s3b.send(
      new GetObjectCommand({ Bucket: "mirror", Key: "bulk/zips/app-7.zip" }),
    );
    assert.deepEqual(await zip.Body!.transformToByteArray(), zips["bulk/zips/app-7.zip"]);
    const big = await s3b.send(new HeadObjectCommand({ Bucket: "mirror", Key: "bulk/big.bin" }));
    assert.equal(big.ETag, done.ETag);
    assert.equal(big.ContentLength, 5 * 1024 * 1024 + 1024);

    // A run with nothing to do copies nothing.
    const idle = await runNow(front.admin, "bulk");
    assert.equal(idle.objects_affected, 0);
    assert.equal(idle.objects_skipped, total);

    // verify: parity, then an object changed behind svc's back (written to the backend).
    const clean = await front.admin.json("POST", "/jobs/replication:bulk/verify");
    assert.equal(clean.in_parity, true, JSON.stringify(clean));
    assert.equal(clean.matching, total);
    await remote.send(
      new PutObjectCommand({ Bucket: "mirror", Key: small[3], Body: `BODY OF ${small[3]}` }),
    );
    const drift = await front.admin.json("POST", "/jobs/replication:bulk/verify");
    assert.equal(drift.in_parity, false);
    assert.deepEqual(drift.differing_keys, [small[3]]);

    const metrics = await (await fetch(`${front.svc.url}/_/metrics`)).text();
    assert.match(metrics, /svc_replication_list_calls_total [1-9]/);
    assert.match(metrics, /svc_replication_dirs_completed_total [1-9]/);
  } finally {
    await front.svc.stop();
    await backing.stop();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});

Deno.test("replication: events carry PUTs and deletes within seconds; pause stops them; run-now still runs once; each conflict policy decides", async () => {
  const dir = await Deno.makeTempDir({ prefix: "svc-replication-" });
  const backing = await startBackingSvc(["mirror", "dst-nw", "dst-cd", "dst-sk"]);
  const policy = (name: string, conflict: string, bucket: string) =>
    `      - name: ${name}
        enabled: false
        source: { bucket: src, prefix: p/ }
        destination: { bucket: ${bucket} }
        conflict: ${conflict}`;
  const rules = [
    `      - name: live
        source: { bucket: src, prefix: live/ }
        destination: { bucket: mirror, prefix: copy/ }
        replicate_deletes: true`,
    policy("nw", "newer-wins", "dst-nw"),
    policy("cd", "content-diff", "dst-cd"),
    policy("sk", "skip-if-dest-exists", "dst-sk"),
  ].join("\n");
  const front = await startFront(dir, backing, rules);
  try {
    const { s3, admin } = front;
    await s3.send(new CreateBucketCommand({ Bucket: "src" }));
    const put = (Key: string, Body: string, Bucket = "src") =>
      s3.send(new PutObjectCommand({ Bucket, Key, Body }));
    const started = Date.now();
    await put("live/a.txt", "one");
    await waitFor(
      "a.txt at the destination",
      async () => await text(s3, "mirror", "copy/a.txt") === "one" ? true : undefined,
    );
    assert.ok(Date.now() - started < 10_000);
    await put("live/a.txt", "two");
    await waitFor(
      "the overwrite",
      async () => await text(s3, "mirror", "copy/a.txt") === "two" ? true : undefined,
    );
    await s3.send(new DeleteObjectCommand({ Bucket: "src", Key: "live/a.txt" }));
    await waitFor(
      "the delete",
      async () => await text(s3, "mirror", "copy/a.txt") === null ? true : undefined,
    );

    // Paused: the consumer passes the rule by.
    const paused = await admin.json("POST", "/jobs/replication:live/pause");
    assert.equal(paused.paused, true);
    await put("live/b.txt", "while paused");
    await new Promise((resolve) => setTimeout(resolve, 2500));
    assert.equal(await text(s3, "mirror", "copy/b.txt"), null);
    // run-now runs the paused rule once, and it stays paused.
    const once = await runNow(admin, "live");
    assert.equal(once.objects_affected, 1);
    assert.equal(await text(s3, "mirror", "copy/b.txt"), "while paused");
    const row = await admin.json("GET", "/jobs/replication:live");
    assert.equal(row.paused, true);

    // Conflict policies. Destinations first for the "destination newer" cases, then the source.
    const remote = clientFor(backing);
    for (const bucket of ["dst-nw", "dst-cd", "dst-sk"]) {
      await remote.send(new CreateBucketCommand({ Bucket: bucket }));
      await remote.send(new PutObjectCommand({ Bucket: bucket, Key: "p/same", Body: "same" }));
      await remote.send(new PutObjectCommand({ Bucket: bucket, Key: "p/dest-newer", Body: "old" }));
    }
    await new Promise((resolve) => setTimeout(resolve, 1100)); // whole seconds on S3
    await put("p/same", "same");
    await put("p/dest-newer", "source body");
    await put("p/src-newer", "fresh");
    await new Promise((resolve) => setTimeout(resolve, 1100));
    for (const bucket of ["dst-nw", "dst-cd", "dst-sk"]) {
      // Written after the source: the destination is newer here.
      await remote.send(
        new PutObjectCommand({ Bucket: bucket, Key: "p/dest-newer", Body: "dest" }),
      );
    }
    const decided = async (rule: string, bucket: string) => {
      const report = await runNow(admin, rule);
      assert.equal(report.status, "succeeded", JSON.stringify(report));
      const copied = (report.candidates as Json[]).map((c) => c.key).sort();
      return {
        copied,
        bodies: [
          await text(remote, bucket, "p/same"),
          await text(remote, bucket, "p/dest-newer"),
          await text(remote, bucket, "p/src-newer"),
        ],
      };
    };
    // newer-wins: "same" is older at the destination (copied), dest-newer is kept.
    assert.deepEqual(await decided("nw", "dst-nw"), {
      copied: ["p/same", "p/src-newer"],
      bodies: ["same", "dest", "fresh"],
    });
    // content-diff: same bytes skip; different bytes copy even onto a newer destination.
    assert.deepEqual(await decided("cd", "dst-cd"), {
      copied: ["p/dest-newer", "p/src-newer"],
      bodies: ["same", "source body", "fresh"],
    });
    // skip-if-dest-exists: only the absent key.
    assert.deepEqual(await decided("sk", "dst-sk"), {
      copied: ["p/src-newer"],
      bodies: ["same", "dest", "fresh"],
    });
  } finally {
    await front.svc.stop();
    await backing.stop();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});
