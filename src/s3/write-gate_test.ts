import assert from "node:assert/strict";
import { SvcError } from "../lib/errors.ts";
import type { ObjectService } from "../objects/object-service.ts";
import { type BucketUsage, UsageCounter } from "../objects/usage/usage.ts";
import type { EffectiveBucketPolicy } from "./bucket-policy.ts";
import {
  BucketWriteGate,
  declaredLength,
  gateWrite,
  type WriteIntent,
  type WriteKind,
} from "./write-gate.ts";
import { fakeInfo as info } from "../testing/object-fixtures.ts";

/** A gate over one bucket holding `existing` objects, with the given policy. */
function gateFor(policy: Omit<EffectiveBucketPolicy, "bucket" | "publicPrefixes">) {
  const existing = new Map([["big", info("big", 60)], ["small", info("small", 10)]]);
  const usage = new UsageCounter(() => {
    if (policy.quotaBytes === undefined) throw new Error("no quota: usage must not be scanned");
    return Promise.resolve({
      objects: [...existing.values()],
      commonPrefixes: [],
      isTruncated: false,
    });
  });
  const objects = {
    head: (_bucket: string, key: string) => {
      const found = existing.get(key);
      return found ? Promise.resolve(found) : Promise.reject(new SvcError("NoSuchKey", "none"));
    },
  } as unknown as ObjectService;
  const services = {
    objects,
    usage,
    bucketPolicy: (bucket: string) => ({ bucket, publicPrefixes: [], ...policy }),
  };
  return (kind: WriteKind, key?: string, declared?: number) => {
    const intent: WriteIntent = { kind, bucket: "bkt" };
    if (key !== undefined) intent.key = key;
    if (declared !== undefined) intent.declaredBytes = () => Promise.resolve(declared);
    return gateWrite(services, intent);
  };
}

async function refusedWith(work: Promise<void>, code: string, message?: RegExp) {
  await assert.rejects(work, (err: unknown) => {
    assert.ok(err instanceof SvcError);
    assert.equal(err.code, code);
    if (message) assert.match(err.message, message);
    return true;
  });
}

const ALL_KINDS: WriteKind[] = [
  "put",
  "post",
  "copy",
  "create-multipart",
  "upload-part",
  "upload-part-copy",
  "complete-multipart",
  "delete",
  "delete-objects",
  "create-bucket",
  "delete-bucket",
];

Deno.test("a target-only bucket refuses every write shape with AccessDenied", async () => {
  const gate = gateFor({ targetOnlyBy: "mirror" });
  for (const kind of ALL_KINDS) {
    await refusedWith(gate(kind, "k"), "AccessDenied", /replication target.*"mirror"/);
  }
});

Deno.test("quota 0 freezes every write shape except CreateBucket", async () => {
  const gate = gateFor({ quotaBytes: 0 });
  for (const kind of ALL_KINDS.filter((k) => k !== "create-bucket")) {
    await refusedWith(gate(kind, "k", 0), "QuotaExceeded", /"bkt" is frozen/);
  }
  await gate("create-bucket");
});

Deno.test("a write that would pass the quota is refused; replaced bytes are credited", async () => {
  const gate = gateFor({ quotaBytes: 100 }); // 70 bytes used
  await gate("put", "new", 30);
  await refusedWith(
    gate("put", "new", 31),
    "QuotaExceeded",
    /quota of 100 bytes \(70 bytes used\)/,
  );
  // Overwriting "small" (10 bytes) with 40 adds 30.
  await gate("put", "small", 40);
  await refusedWith(gate("copy", "small", 41), "QuotaExceeded");
  // Parts replace nothing yet.
  await refusedWith(gate("upload-part", "small", 40), "QuotaExceeded");
  await gate("post", "x"); // size unknown up front: only the current usage is judged
});

Deno.test("over the quota: writes that add bytes are refused, deletes are allowed", async () => {
  const gate = gateFor({ quotaBytes: 50 }); // 70 bytes used
  await refusedWith(gate("put", "k", 0), "QuotaExceeded", /has reached its quota of 50 bytes/);
  await refusedWith(gate("create-multipart", "k"), "QuotaExceeded");
  await refusedWith(gate("post", "k"), "QuotaExceeded");
  await gate("delete", "big");
  await gate("delete-objects");
  await gate("delete-bucket");
  await gate("create-bucket");
});

Deno.test("no policy: everything passes without a usage scan", async () => {
  const gate = gateFor({});
  for (const kind of ALL_KINDS) await gate(kind, "k", 1e12);
});

Deno.test("declaredLength prefers the decoded length of aws-chunked bodies", () => {
  assert.equal(declaredLength(new Headers({ "content-length": "12" })), 12);
  assert.equal(
    declaredLength(
      new Headers({ "content-length": "200", "x-amz-decoded-content-length": "100" }),
    ),
    100,
  );
  assert.equal(declaredLength(new Headers({ "content-length": "junk" })), undefined);
  assert.equal(declaredLength(new Headers()), undefined);
});

Deno.test("a bucket held by a maintenance job refuses every write with 503 SlowDown", async () => {
  const maintenanceGate = new BucketWriteGate();
  const services = {
    objects: {} as ObjectService,
    usage: new UsageCounter(() => Promise.reject(new Error("no quota: not scanned"))),
    bucketPolicy: (bucket: string) => ({ bucket, publicPrefixes: [] }),
    maintenanceGate,
  };
  maintenanceGate.engage("held", "maintenance:7");
  for (const kind of [...ALL_KINDS, "tagging" as const]) {
    await refusedWith(
      gateWrite(services, { kind, bucket: "held" }),
      "SlowDown",
      /Bucket "held" is under maintenance \(maintenance:7\)/,
    );
    await gateWrite(services, { kind, bucket: "other" });
  }
  maintenanceGate.lift("held", "maintenance:8"); // another job's lift changes nothing
  await refusedWith(gateWrite(services, { kind: "put", bucket: "held" }), "SlowDown");
  maintenanceGate.lift("held", "maintenance:7");
  await gateWrite(services, { kind: "put", bucket: "held" });
});

Deno.test("drained waits for the writes in flight on that bucket only", async () => {
  const gate = new BucketWriteGate();
  assert.equal(gate.inflight("b"), 0);
  await gate.drained("b"); // nothing in flight: at once
  const first = gate.enter("b");
  const second = gate.enter("b");
  const elsewhere = gate.enter("c");
  let drained = false;
  const waiting = gate.drained("b").then(() => drained = true);
  first();
  first(); // leaving twice counts once
  await Promise.resolve();
  assert.equal(drained, false);
  assert.equal(gate.inflight("b"), 1);
  second();
  await waiting;
  assert.equal(drained, true);
  assert.equal(gate.inflight("c"), 1);
  elsewhere();
  // An abort ends the wait with its reason.
  const stuck = gate.enter("b");
  const abort = new AbortController();
  const aborted = gate.drained("b", abort.signal);
  abort.abort(new Error("cancelled"));
  await assert.rejects(aborted, /cancelled/);
  stuck();
});

/** A bucket holding 30 bytes here, with a quota of 100, judged through `quotaUsage`. */
function fleetGate(quotaUsage?: (bucket: string, local: BucketUsage) => Promise<BucketUsage>) {
  const usage = new UsageCounter(() =>
    Promise.resolve({ objects: [info("here", 30)], commonPrefixes: [], isTruncated: false })
  );
  const objects = {
    head: () => Promise.reject(new SvcError("NoSuchKey", "none")),
  } as unknown as ObjectService;
  const services = {
    objects,
    usage,
    bucketPolicy: (bucket: string) => ({ bucket, publicPrefixes: [], quotaBytes: 100 }),
    ...(quotaUsage ? { quotaUsage } : {}),
  };
  return (declared: number) =>
    gateWrite(services, {
      kind: "put",
      bucket: "bkt",
      key: "new",
      declaredBytes: () => Promise.resolve(declared),
    });
}

Deno.test("write gate: a quota judges the fleet's usage when one is given", async () => {
  // Alone: 30 used, 60 more fit.
  await fleetGate()(60);
  const seen: number[] = [];
  // In a fleet the other instances wrote 50 more: 80 used, 60 more pass the quota.
  const fleet = fleetGate((_bucket, local) => {
    seen.push(local.logical_bytes);
    return Promise.resolve({ ...local, logical_bytes: local.logical_bytes + 50 });
  });
  await assert.rejects(fleet(60), (err: unknown) => {
    assert.ok(err instanceof SvcError);
    assert.equal(err.code, "QuotaExceeded");
    assert.match(err.message, /\(80 bytes used\)/);
    return true;
  });
  assert.deepEqual(seen, [30], "given this instance's counter");
  await fleet(20);
});

Deno.test("a fence names why a bucket is refused, per bucket, until it is taken away", () => {
  const gate = new BucketWriteGate();
  gate.fence("moved", 'Bucket "moved" was migrated to backend "b"');
  assert.match(gate.fenced("moved") ?? "", /migrated to backend "b"/);
  assert.equal(gate.fenced("other"), undefined);
  assert.equal(gate.holder("moved"), undefined, "a fence is not a maintenance job");
  gate.fence("moved", null);
  assert.equal(gate.fenced("moved"), undefined);
});
