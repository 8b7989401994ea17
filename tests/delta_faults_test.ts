/**
 * Black-box tests of the delta store when things go wrong: corrupt deltas and baselines on disk,
 * an xdelta3 that dies, hangs or is missing, busy codec slots, and buckets with compression off
 * (where the reserved names are ordinary keys). The server is restarted on the same data
 * directory where a test needs a healthy codec for its setup and a broken one afterwards.
 */
import assert from "node:assert/strict";
import { ListObjectsV2Command, PutObjectCommand } from "@aws-sdk/client-s3";
import {
  signedFetch as fetch,
  type StartOptions,
  startSvc,
  type SvcProcess,
} from "./helpers/svc.ts";
import { assertError, codeOf } from "./helpers/assertions.ts";
import { ArtifactSeries } from "./helpers/tar.ts";
import {
  corruptFile,
  fakeXdelta3Dir,
  layoutOf,
  parentDeltaspaceArgs,
  sha256Hex,
  waitForLog,
} from "./helpers/delta.ts";

const BUCKET = "faults";
/** A PUT or GET that takes longer than this is a hang, not a clean error. */
const HANG_MS = 30_000;

/** Runs `work` against servers started on one data directory, then removes the directory. */
async function withDataDir(work: (dataDir: string) => Promise<void>): Promise<void> {
  const dataDir = await Deno.makeTempDir({ prefix: "svc-delta-faults-" });
  try {
    await work(dataDir);
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }
}

function client(svc: SvcProcess) {
  const at = (path: string) => `${svc.url}/${BUCKET}/${path}`;
  return {
    put: (key: string, body: Uint8Array<ArrayBuffer>) =>
      fetch(at(key), { method: "PUT", body, signal: AbortSignal.timeout(HANG_MS) }),
    get: (key: string, headers: Record<string, string> = {}) =>
      fetch(at(key), { headers, signal: AbortSignal.timeout(HANG_MS) }),
    async putOk(key: string, body: Uint8Array<ArrayBuffer>) {
      const res = await this.put(key, body);
      const text = await res.text();
      assert.equal(res.status, 200, `PUT ${key}: ${text}`);
    },
    /** Asserts the key reads back as exactly `body`. */
    async readsBack(key: string, body: Uint8Array) {
      const res = await this.get(key);
      const bytes = new Uint8Array(await res.arrayBuffer());
      assert.equal(res.status, 200, `GET ${key}: ${new TextDecoder().decode(bytes)}`);
      assert.equal(sha256Hex(bytes), sha256Hex(body), `GET ${key}: wrong bytes`);
    },
  };
}

async function started(options: StartOptions): Promise<SvcProcess> {
  // These checks look at the parent rule's layout (`<folder>reference.bin`).
  const args = [...(options.args ?? []), ...parentDeltaspaceArgs(BUCKET)];
  const svc = await startSvc({ ...options, args });
  const res = await fetch(`${svc.url}/${BUCKET}`, { method: "PUT" });
  const text = await res.text();
  assert.ok(res.status === 200 || res.status === 409, text); // 409: restarted on the same data
  return svc;
}

/** Files left in the delta store's spool directory (should be none between requests). */
function spoolLeftovers(dataDir: string, dir = `${dataDir}/.svc/spool`): string[] {
  return [...Deno.readDirSync(dir)].flatMap((e) =>
    e.isDirectory ? spoolLeftovers(dataDir, `${dir}/${e.name}`) : [`${dir}/${e.name}`]
  );
}

const withPath = (dir: string) => ({ PATH: `${dir}:${Deno.env.get("PATH") ?? "/usr/bin:/bin"}` });

Deno.test("delta faults: corrupt delta or baseline answers 500, never wrong bytes", async () => {
  await withDataDir(async (dataDir) => {
    const series = new ArtifactSeries();
    const v1 = series.current(), v2 = series.next(), v3 = series.next();
    let svc = await started({ dataDir });
    try {
      let s3 = client(svc);
      for (const space of ["bad-delta", "bad-ref"]) {
        await s3.putOk(`${space}/v1.tar`, v1);
        await s3.putOk(`${space}/v2.tar`, v2);
      }
      // A delta PUT leaves its object warm in the rebuilt cache (verified bytes, served as they
      // are): restarted, the caches are empty and a GET decodes from what is stored.
      await svc.stop();
      svc = await started({ dataDir });
      s3 = client(svc);
      await corruptFile(`${dataDir}/${BUCKET}/bad-delta/v2.tar.delta`);
      await assertError(s3.get("bad-delta/v2.tar"), 500, "InternalError");
      await assertError(s3.get("bad-delta/v2.tar", { range: "bytes=0-99" }), 500, "InternalError");
      await s3.readsBack("bad-delta/v1.tar", v1); // its own delta is intact

      // While the server runs the baseline may still be cached (verified bytes): right bytes or
      // 500 are both acceptable, anything else is not.
      await corruptFile(`${dataDir}/${BUCKET}/bad-ref/reference.bin`);
      const warm = await s3.get("bad-ref/v2.tar");
      const warmBytes = new Uint8Array(await warm.arrayBuffer());
      if (warm.status === 200) assert.equal(sha256Hex(warmBytes), sha256Hex(v2));
      else assert.equal(codeOf(new TextDecoder().decode(warmBytes)), "InternalError");

      // Restarted, nothing is cached: the corrupt baseline is read from disk.
      await svc.stop();
      svc = await started({ dataDir });
      s3 = client(svc);
      await assertError(s3.get("bad-ref/v1.tar"), 500, "InternalError");
      await assertError(s3.get("bad-ref/v2.tar"), 500, "InternalError");
      // A new version is not encoded against bytes that fail their sha256: stored passthrough.
      await s3.putOk("bad-ref/v3.tar", v3);
      assert.deepEqual(layoutOf(dataDir, BUCKET, "bad-ref/"), [
        "bad-ref/reference.bin:reference",
        "bad-ref/v1.tar.delta:delta",
        "bad-ref/v2.tar.delta:delta",
        "bad-ref/v3.tar:passthrough",
      ]);
      await s3.readsBack("bad-ref/v3.tar", v3);
      assert.deepEqual(spoolLeftovers(dataDir), []);
    } finally {
      await svc.stop();
    }
  });
});

Deno.test("delta faults: xdelta3 killed mid-encode fails the PUT cleanly", async () => {
  await withDataDir(async (dataDir) => {
    const series = new ArtifactSeries();
    const v1 = series.current(), v2 = series.next();
    let svc = await started({ dataDir });
    await client(svc).putOk("k/app.tar", v1);
    await svc.stop();
    const before = layoutOf(dataDir, BUCKET);
    assert.deepEqual(before, ["k/app.tar.delta:delta", "k/reference.bin:reference"]);

    const fake = await fakeXdelta3Dir({ encode: "killed" });
    svc = await started({ dataDir, env: withPath(fake) });
    try {
      const s3 = client(svc);
      // Encoded while the body arrives, against the existing baseline.
      await assertError(s3.put("k/app.tar", v2), 500, "InternalError");
      await assertError(s3.put("k/new.tar", v2), 500, "InternalError");
      // The first object of a deltaspace: the baseline it created is rolled back.
      await assertError(s3.put("fresh/app.tar", v1), 500, "InternalError");
      assert.deepEqual(layoutOf(dataDir, BUCKET), before, "nothing half-stored");
      await s3.readsBack("k/app.tar", v1); // decoding uses the real xdelta3
      await assertError(s3.get("k/new.tar"), 404, "NoSuchKey");
      await assertError(s3.get("fresh/app.tar"), 404, "NoSuchKey");
      // The server keeps serving.
      await s3.putOk("k/notes.txt", new TextEncoder().encode("still here"));
      await s3.readsBack("k/notes.txt", new TextEncoder().encode("still here"));
      assert.deepEqual(spoolLeftovers(dataDir), []);
    } finally {
      await svc.stop();
      await Deno.remove(fake, { recursive: true });
    }
  });
});

Deno.test("delta faults: an encoder that hangs is killed after codec_timeout_secs", async () => {
  await withDataDir(async (dataDir) => {
    const series = new ArtifactSeries();
    const v1 = series.current(), v2 = series.next();
    let svc = await started({ dataDir });
    await client(svc).putOk("h/app.tar", v1);
    await svc.stop();
    const before = layoutOf(dataDir, BUCKET);

    // The fake encoder sleeps without reading its input, far longer than the codec timeout.
    const fake = await fakeXdelta3Dir({ encode: "slow", seconds: 120 });
    // The request deadline is short too, so a PUT the codec timeout misses ends as a 504 here.
    const env = { ...withPath(fake), SVC_CODEC_TIMEOUT_SECS: "2", SVC_REQUEST_TIMEOUT_SECS: "12" };
    svc = await started({ dataDir, env });
    try {
      const s3 = client(svc);
      for (const key of ["fresh/app.tar", "h/app.tar"]) {
        const began = performance.now();
        await assertError(s3.put(key, v2), 500, "InternalError");
        const seconds = (performance.now() - began) / 1000;
        assert.ok(seconds < 10, `PUT ${key} took ${seconds.toFixed(1)} s`);
      }
      assert.deepEqual(layoutOf(dataDir, BUCKET), before);
      await s3.readsBack("h/app.tar", v1);
    } finally {
      // A PUT stuck on the encoder would keep a graceful shutdown waiting for ever.
      svc.kill("SIGKILL");
      await svc.stop();
      await Deno.remove(fake, { recursive: true });
    }
  });
});

Deno.test("delta faults: without xdelta3 the server warns once and stores passthrough", async () => {
  await using svc = await started({ env: { PATH: "/nonexistent" } });
  const s3 = client(svc);
  const series = new ArtifactSeries();
  const v1 = series.current(), v2 = series.next();
  await s3.putOk("m/v1.tar", v1);
  await s3.putOk("m/v2.tar", v2);
  assert.deepEqual(layoutOf(svc.dataDir, BUCKET), ["m/v1.tar:passthrough", "m/v2.tar:passthrough"]);
  await s3.readsBack("m/v1.tar", v1);
  await s3.readsBack("m/v2.tar", v2);
  await waitForLog(svc.logs, /xdelta3/);
  const warnings = svc.logs.filter((line) => /xdelta3/.test(line));
  assert.equal(warnings.length, 1, warnings.join("\n"));
  assert.match(warnings[0], /WARN/i);
  assert.match(warnings[0], /not found/);
});

Deno.test("delta faults: reserved names are ordinary keys only where compression is off", async () => {
  const dir = await Deno.makeTempDir({ prefix: "svc-delta-config-" });
  const config = `${dir}/svc.yaml`;
  await Deno.writeTextFile(
    config,
    "storage:\n  buckets:\n    plain:\n      compression: false\n" +
      `    ${BUCKET}:\n      deltaspace: parent\n`,
  );
  try {
    await using svc = await startSvc({ args: ["--config", config] });
    const s3 = svc.client();
    const body = new ArtifactSeries().current();
    for (const bucket of ["plain", BUCKET]) {
      assert.equal((await fetch(`${svc.url}/${bucket}`, { method: "PUT" })).status, 200);
    }
    const keys = ["app.tar", "dir/reference.bin", "reference.bin", "x.delta"];
    for (const key of keys) {
      await s3.send(new PutObjectCommand({ Bucket: "plain", Key: key, Body: body }));
      const res = await fetch(`${svc.url}/plain/${key}`);
      assert.equal(res.status, 200);
      assert.equal(sha256Hex(new Uint8Array(await res.arrayBuffer())), sha256Hex(body));
    }
    const listed = await s3.send(new ListObjectsV2Command({ Bucket: "plain" }));
    assert.deepEqual(
      listed.Contents?.map((o) => [o.Key, o.Size]),
      keys.map((k) => [k, body.length]),
    );
    assert.deepEqual(layoutOf(svc.dataDir, "plain"), keys.map((k) => `${k}:passthrough`));

    await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: "d/app.tar", Body: body }));
    for (const key of ["reference.bin", "d/reference.bin", "x.delta", "d/app.tar.delta"]) {
      const url = `${svc.url}/${BUCKET}/${key}`;
      await assertError(fetch(url, { method: "PUT", body }), 400, "InvalidArgument");
      const copy = { method: "PUT", headers: { "x-amz-copy-source": `/${BUCKET}/d/app.tar` } };
      await assertError(fetch(url, copy), 400, "InvalidArgument");
    }
    // The baseline and the delta that do exist are not readable under their stored names.
    await assertError(fetch(`${svc.url}/${BUCKET}/d/reference.bin`), 404, "NoSuchKey");
    await assertError(fetch(`${svc.url}/${BUCKET}/d/app.tar.delta`), 404, "NoSuchKey");
    assert.deepEqual(layoutOf(svc.dataDir, BUCKET), [
      "d/app.tar.delta:delta",
      "d/reference.bin:reference",
    ]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("delta faults: a PUT that finds every codec slot busy is stored passthrough", async () => {
  const fake = await fakeXdelta3Dir({ encode: "slow", seconds: 3 });
  try {
    await using svc = await started({
      env: {
        ...withPath(fake),
        SVC_CODEC_CONCURRENCY: "1",
        SVC_CODEC_TIMEOUT_SECS: "20",
        SVC_CODEC_SLOT_WAIT_SECS: "0.2",
      },
    });
    const s3 = client(svc);
    const series = new ArtifactSeries();
    const v1 = series.current(), v2 = series.next(), v3 = series.next();
    await s3.putOk("s/v1.tar", v1); // creates the baseline (one slow encode)
    const slow = s3.put("s/v2.tar", v2);
    // Wait until that PUT holds the only slot, so the next one must find none free.
    const deadline = Date.now() + 10_000;
    for (;;) {
      const metrics = await (await fetch(`${svc.url}/_/metrics`)).text();
      if (/^svc_codec_semaphore_available 0$/m.test(metrics)) break;
      assert.ok(Date.now() < deadline, "the slow PUT never took the codec slot");
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    // Never refused: after waiting codec_slot_wait_secs it is stored as sent.
    await s3.putOk("s/v3.tar", v3);
    const done = await slow;
    assert.equal(done.status, 200, await done.text());
    assert.deepEqual(layoutOf(svc.dataDir, BUCKET), [
      "s/reference.bin:reference",
      "s/v1.tar.delta:delta",
      "s/v2.tar.delta:delta",
      "s/v3.tar:passthrough",
    ]);
    const metrics = await (await fetch(`${svc.url}/_/metrics`)).text();
    assert.match(
      metrics,
      /^svc_delta_decisions_total\{decision="passthrough",reason="codec_busy"\} 1$/m,
    );
    await s3.readsBack("s/v2.tar", v2);
    await s3.readsBack("s/v3.tar", v3);
  } finally {
    await Deno.remove(fake, { recursive: true });
  }
});
