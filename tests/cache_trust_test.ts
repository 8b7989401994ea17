/**
 * Black-box tests of the delta caches' trust (issue 26): no byte of a file kept under
 * `<data>/.svc/rebuilt` or `<data>/.svc/baselines` reaches a client or the codec unverified, and
 * on an encrypted backend those folders hold no plaintext and are private (0700 folders, 0600
 * files). The tests damage the cache files on disk between requests, as a failing disk or another
 * process could.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { signedFetch as fetch, type SvcProcess } from "./helpers/svc.ts";
import { ArtifactSeries, mutate, tar } from "./helpers/tar.ts";
import { corruptFile, putBytes, sha256Hex, startWithBucket } from "./helpers/delta.ts";
import { filesUnder } from "./helpers/files.ts";

const BUCKET = "trusted";
const MARKER = "CACHE-MARKER-51e7a";

const started = (dataDir?: string, env: Record<string, string> = {}) =>
  startWithBucket(BUCKET, env, dataDir);

const put = (svc: SvcProcess, key: string, body: Uint8Array<ArrayBuffer>) =>
  putBytes(svc, BUCKET, key, body);

/** Status and body; a body cut short by the server answers `bytes: undefined`. */
async function get(svc: SvcProcess, key: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${svc.url}/${BUCKET}/${key}`, { headers });
  try {
    return { res, bytes: new Uint8Array(await res.arrayBuffer()) as Uint8Array | undefined };
  } catch {
    return { res, bytes: undefined };
  }
}

async function corruptAll(dir: string): Promise<number> {
  const files = filesUnder(dir);
  for (const path of files) await corruptFile(path, 64);
  return files.length;
}

async function corruptionCount(svc: SvcProcess, cache: string): Promise<number> {
  const text = await (await fetch(`${svc.url}/_/metrics`)).text();
  const line = text.split("\n").find((l) =>
    l.startsWith(`svc_cache_corruption_total{cache="${cache}"}`)
  );
  return line === undefined ? 0 : Number(line.split(" ").at(-1));
}

Deno.test("cache trust: a damaged rebuilt file is rebuilt, never served", async () => {
  await using svc = await started();
  const series = new ArtifactSeries(4, 64 * 1024);
  const v1 = series.current(), v2 = series.next();
  await put(svc, "app/v1.tar", v1);
  await put(svc, "app/v2.tar", v2);
  assert.equal(sha256Hex((await get(svc, "app/v2.tar")).bytes!), sha256Hex(v2));
  for (const dir of ["baselines", "rebuilt"]) {
    const path = `${svc.dataDir}/.svc/${dir}`;
    assert.equal(Deno.statSync(path).mode! & 0o777, 0o700, `${path} mode`);
    for (const file of filesUnder(path)) {
      assert.equal(Deno.statSync(file).mode! & 0o777, 0o600, `${file} mode`);
    }
  }

  assert.ok(await corruptAll(`${svc.dataDir}/.svc/rebuilt`) > 0, "nothing was cached");
  const whole = await get(svc, "app/v2.tar");
  assert.equal(whole.res.status, 200);
  assert.equal(sha256Hex(whole.bytes!), sha256Hex(v2), "damaged cached bytes were served");

  await corruptAll(`${svc.dataDir}/.svc/rebuilt`);
  const mid = Math.floor(v2.length / 2);
  const ranged = await get(svc, "app/v2.tar", { range: `bytes=${mid - 100}-${mid + 100}` });
  assert.equal(ranged.res.status, 206);
  assert.deepEqual(ranged.bytes, v2.subarray(mid - 100, mid + 101));
  assert.ok(await corruptionCount(svc, "rebuilt") >= 2, "corruption was not counted");
});

Deno.test("cache trust: damage found after bytes were sent: rebuilt during the read, which completes", async () => {
  await using svc = await started();
  const series = new ArtifactSeries(4, 1024 * 1024);
  const v1 = series.current(), v2 = series.next();
  await put(svc, "app/v1.tar", v1);
  await put(svc, "app/v2.tar", v2);
  assert.equal(sha256Hex((await get(svc, "app/v2.tar")).bytes!), sha256Hex(v2));
  const before = await corruptionCount(svc, "rebuilt");

  // The middle of a 4 MiB object: chunks before it are sent when the damaged one is read.
  await corruptAll(`${svc.dataDir}/.svc/rebuilt`);
  const whole = await get(svc, "app/v2.tar");
  assert.equal(whole.res.status, 200);
  assert.equal(sha256Hex(whole.bytes!), sha256Hex(v2), "not the object's bytes");
  assert.equal(await corruptionCount(svc, "rebuilt"), before + 1, "the damage was counted");
  const again = await get(svc, "app/v2.tar");
  assert.equal(sha256Hex(again.bytes!), sha256Hex(v2));
});

Deno.test("cache trust: a damaged cached baseline is evicted and fetched again", async () => {
  // No rebuilt cache: a delta PUT would leave its object warm there, and every GET must decode.
  await using svc = await started(undefined, { SVC_REBUILT_CACHE_MB: "0" });
  const series = new ArtifactSeries(4, 64 * 1024);
  const v1 = series.current(), v2 = series.next(), v3 = series.next();
  await put(svc, "app/v1.tar", v1);
  await put(svc, "app/v2.tar", v2);
  await put(svc, "app/v3.tar", v3);
  assert.equal(sha256Hex((await get(svc, "app/v2.tar")).bytes!), sha256Hex(v2));

  assert.ok(await corruptAll(`${svc.dataDir}/.svc/baselines`) > 0, "no baseline was cached");
  const other = await get(svc, "app/v3.tar"); // decodes against the damaged cached baseline
  assert.equal(other.res.status, 200);
  assert.equal(sha256Hex(other.bytes!), sha256Hex(v3));
  assert.ok(await corruptionCount(svc, "baseline") >= 1, "corruption was not counted");
});

Deno.test("cache trust: an encrypted backend's caches hold no plaintext and are private", async () => {
  const root = await Deno.makeTempDir({ prefix: "svc-cache-trust-" });
  await Deno.mkdir(`${root}/objects`);
  await Deno.writeTextFile(
    `${root}/svc.yaml`,
    "storage:\n  backends:\n    - name: vault\n      type: filesystem\n" +
      `      path: ${root}/objects\n      encryption:\n        mode: aes256-gcm-proxy\n` +
      "        key_id: key-c\n",
  );
  const marked = new Uint8Array(256 * 1024);
  crypto.getRandomValues(marked.subarray(0, 65536));
  const marker = new TextEncoder().encode(MARKER);
  for (let at = 0; at + marker.length <= marked.length; at += 4096) marked.set(marker, at);
  const v1 = tar([{ name: "payload.bin", data: marked }]);
  const v2 = mutate(v1, 0.01);
  const svc = await started(root, {
    SVC_CONFIG: `${root}/svc.yaml`,
    SVC_BACKEND_VAULT_ENCRYPTION_KEY: "c3".repeat(32),
  });
  try {
    await put(svc, "rel/app-1.0.tar", v1);
    await put(svc, "rel/app-1.1.tar", v2);
    for (let i = 0; i < 2; i++) {
      const { res, bytes } = await get(svc, "rel/app-1.1.tar");
      assert.equal(res.status, 200);
      assert.equal(sha256Hex(bytes!), sha256Hex(v2));
    }
    for (const path of filesUnder(`${root}/.svc`)) {
      assert.ok(!Buffer.from(Deno.readFileSync(path)).includes(MARKER), `${path} holds plaintext`);
    }
    for (const dir of ["baselines", "rebuilt"]) {
      const path = `${root}/.svc/${dir}`;
      assert.equal(Deno.statSync(path).mode! & 0o777, 0o700, `${path} mode`);
      for (const file of filesUnder(path)) {
        assert.equal(Deno.statSync(file).mode! & 0o777, 0o600, `${file} mode`);
      }
    }
  } finally {
    await svc.stop();
    await Deno.remove(root, { recursive: true });
  }
});
