/**
 * Connection-level attacks that need no credentials (issue 12 items 1 and 2), each against the
 * real server on loopback, with a legitimate client served during and after:
 * - idle connections past the descriptor limit (svc under `prlimit --nofile=256`);
 * - request heads sent in part, and connections that send nothing;
 * - request bodies that stall (signed PUTs), holding the request slots;
 * - browser POST forms trickling their fields, which must hold no slot;
 * - readiness saying so when requests wait on slots for long.
 */
import assert from "node:assert/strict";
import {
  CreateBucketCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
} from "@aws-sdk/client-s3";
import {
  closeAll,
  openConnections,
  readUntilClosed,
  signedPutHead,
  slowFormHead,
} from "./helpers/raw-http.ts";
import { startSvc, type SvcProcess } from "./helpers/svc.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };

/** A normal client's round trip: PUT then GET of a small object, timed. */
async function legitimateRoundTrip(svc: SvcProcess, key: string): Promise<number> {
  const s3 = svc.client();
  const started = performance.now();
  try {
    await s3.send(new PutObjectCommand({ Bucket: "legit", Key: key, Body: `body of ${key}` }));
    const got = await s3.send(new GetObjectCommand({ Bucket: "legit", Key: key }));
    assert.equal(await got.Body!.transformToString(), `body of ${key}`);
  } finally {
    s3.destroy();
  }
  return performance.now() - started;
}

async function createBucket(svc: SvcProcess, bucket: string): Promise<void> {
  const s3 = svc.client();
  await s3.send(new CreateBucketCommand({ Bucket: bucket }));
  s3.destroy();
}

function assertStillRunning(svc: SvcProcess): void {
  const fatal = svc.logs.filter((line) => /failed to start|Terminating Deno\.serve/.test(line));
  assert.deepEqual(fatal, []);
}

Deno.test("idle connections past the descriptor limit never stop svc", opts, async () => {
  // 256 descriptors: the cap derives to 128 connections; 400 idle sockets are far past both.
  await using svc = await startSvc({ nofile: 256, env: { SVC_HEADER_TIMEOUT_SECS: "60" } });
  await createBucket(svc, "legit");
  const idle = await openConnections(svc.port, 400);
  try {
    await new Promise((resolve) => setTimeout(resolve, 500));
    // During the flood: served (an idle stranger's connection is closed to make room).
    await legitimateRoundTrip(svc, "during");
    const more = await openConnections(svc.port, 200, "GET /legit HTTP/1.1\r\nhost: x\r\n");
    idle.push(...more);
    await legitimateRoundTrip(svc, "during-2");
  } finally {
    closeAll(idle);
  }
  await legitimateRoundTrip(svc, "after");
  assertStillRunning(svc);
  assert.ok(svc.logs.some((line) => /max_connections=128/.test(line)), "cap from RLIMIT_NOFILE");
});

Deno.test("a request head not finished within header_timeout_secs is cut", opts, async () => {
  await using svc = await startSvc({ env: { SVC_HEADER_TIMEOUT_SECS: "1" } });
  await createBucket(svc, "legit");
  const partial = await openConnections(svc.port, 50, "GET /legit/x HTTP/1.1\r\nhost: x\r\n");
  const silent = await openConnections(svc.port, 50);
  try {
    await legitimateRoundTrip(svc, "during");
    const outcomes = await Promise.all(
      [...partial, ...silent].map((c) => readUntilClosed(c, 5000)),
    );
    for (const outcome of outcomes) {
      assert.ok(outcome.closed, "closed by svc");
      assert.ok(outcome.ms < 4000, `closed after ${outcome.ms} ms`);
    }
  } finally {
    closeAll([...partial, ...silent]);
  }
  await legitimateRoundTrip(svc, "after");
});

Deno.test("stalled request bodies are cut and free their slots", opts, async () => {
  await using svc = await startSvc({
    env: { SVC_BODY_STALL_TIMEOUT_SECS: "1", SVC_MAX_CONCURRENT_REQUESTS: "2" },
  });
  await createBucket(svc, "legit");
  const stalled: Deno.TcpConn[] = [];
  for (let i = 0; i < 4; i++) {
    const head = await signedPutHead(`${svc.url}/legit/stalled-${i}`, 1000);
    stalled.push(...await openConnections(svc.port, 1, head + "ten bytes."));
  }
  try {
    // Both slots are held by stalled bodies; the legitimate client gets one once they are cut.
    const waited = await legitimateRoundTrip(svc, "during");
    assert.ok(waited < 5000, `served after ${waited} ms`);
    const outcomes = await Promise.all(stalled.map((c) => readUntilClosed(c, 6000)));
    for (const outcome of outcomes) {
      assert.equal(outcome.status, 504, outcome.text);
      assert.match(outcome.text, /<Code>RequestTimeout<\/Code>/);
      assert.ok(outcome.closed, "connection closed after the answer");
    }
  } finally {
    closeAll(stalled);
  }
  const s3 = svc.client();
  await assert.rejects(
    s3.send(new HeadObjectCommand({ Bucket: "legit", Key: "stalled-0" })),
    (err: Error) => err.name === "NotFound",
  );
  s3.destroy();
  await legitimateRoundTrip(svc, "after");
});

Deno.test("slow POST forms hold no request slot and are cut", opts, async () => {
  await using svc = await startSvc({
    env: {
      SVC_MAX_CONCURRENT_REQUESTS: "2",
      SVC_HEADER_TIMEOUT_SECS: "2",
      SVC_BODY_STALL_TIMEOUT_SECS: "60",
    },
  });
  await createBucket(svc, "legit");
  const forms = await openConnections(svc.port, 20, slowFormHead(svc.port, "legit"));
  try {
    await new Promise((resolve) => setTimeout(resolve, 300));
    // The forms' fields are still arriving: no slot is held, so this is served at once.
    const waited = await legitimateRoundTrip(svc, "during");
    assert.ok(waited < 1500, `served after ${waited} ms`);
    const outcomes = await Promise.all(forms.map((c) => readUntilClosed(c, 6000)));
    for (const outcome of outcomes) {
      assert.equal(outcome.status, 504, outcome.text);
      assert.match(outcome.text, /fields of the POST form did not arrive within 2 seconds/);
      assert.ok(outcome.closed);
    }
  } finally {
    closeAll(forms);
  }
  await legitimateRoundTrip(svc, "after");
});

Deno.test("readiness reports requests waiting on slots for long", opts, async () => {
  await using svc = await startSvc({
    env: {
      SVC_MAX_CONCURRENT_REQUESTS: "1",
      SVC_READY_MAX_SLOT_WAIT_SECS: "1",
      SVC_BODY_STALL_TIMEOUT_SECS: "60",
    },
  });
  await createBucket(svc, "legit");
  const ready = async () => {
    const response = await fetch(`${svc.url}/_/ready`);
    return { status: response.status, body: await response.json() };
  };
  assert.equal((await ready()).status, 200);
  const head = await signedPutHead(`${svc.url}/legit/holder`, 1000);
  const [holder] = await openConnections(svc.port, 1, head + "a few");
  const queued = legitimateRoundTrip(svc, "queued");
  queued.catch(() => {}); // awaited below; a failure above must not surface as unhandled
  try {
    await new Promise((resolve) => setTimeout(resolve, 1600));
    const during = await ready();
    assert.equal(during.status, 503, JSON.stringify(during.body));
    assert.equal(during.body.checks.request_slots.status, "error");
    assert.match(during.body.checks.request_slots.error, /waited \d+ ms for a slot/);
  } finally {
    holder.close(); // the client goes away: its slot is released
  }
  await queued.catch((err) => {
    throw new Error(`${err}\n${svc.logs.join("\n")}`);
  });
  assert.equal((await ready()).status, 200);
});
