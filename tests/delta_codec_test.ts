/**
 * The delta codec choice on the real server (docs/DELTA.md "Delta codecs"): a bucket with
 * `delta_codec: zstd` and one with `delta_codec: xdelta3` store deltas that read back byte-exact
 * (whole and ranged, plain tars and an archive's token form), each delta's metadata names the
 * codec that wrote it, a bucket switched to the other codec still reads its old deltas and
 * writes new ones with the new codec, the integrity scan finds nothing, and a damaged zstd delta
 * answers 500, never wrong bytes.
 */
import assert from "node:assert/strict";
import { gzipSync } from "node:zlib";
import { AdminClient } from "./helpers/admin.ts";
import { archivesConverted, corruptFile, sha256Hex, storedFiles } from "./helpers/delta.ts";
import { type ScanStatus, waitForScan } from "./helpers/diagnostics.ts";
import { ArtifactSeries, tar } from "./helpers/tar.ts";
import { objectsOnLocalDisk, signedFetch, startSvc, type SvcProcess } from "./helpers/svc.ts";

const ZS = "codec-zstd";
const XD = "codec-xdelta3";
const utf8 = new TextEncoder();

/** A config file giving each bucket its codec; removed with the run's temp dir. */
function configArgs(codecs: Record<string, string>): string[] {
  const dir = Deno.makeTempDirSync({ prefix: "svc-codec-config-" });
  globalThis.addEventListener("unload", () => {
    try {
      Deno.removeSync(dir, { recursive: true });
    } catch { /* already gone */ }
  });
  const lines = Object.entries(codecs).map(([b, codec]) => `    ${b}: { delta_codec: ${codec} }`);
  Deno.writeTextFileSync(`${dir}/svc.yaml`, `storage:\n  buckets:\n${lines.join("\n")}\n`);
  return ["--config", `${dir}/svc.yaml`];
}

async function start(dataDir: string, codecs: Record<string, string>): Promise<SvcProcess> {
  // No rebuilt cache: a delta PUT would leave its verified bytes there, and a GET must decode.
  const svc = await startSvc({
    dataDir,
    args: configArgs(codecs),
    env: { SVC_REBUILT_CACHE_MB: "0", SVC_CODEC_SLOT_WAIT_SECS: "60" },
  });
  for (const bucket of Object.keys(codecs)) {
    const res = await signedFetch(`${svc.url}/${bucket}`, { method: "PUT" });
    assert.ok(res.status === 200 || res.status === 409, await res.text());
  }
  return svc;
}

async function put(svc: SvcProcess, bucket: string, key: string, body: Uint8Array<ArrayBuffer>) {
  const res = await signedFetch(`${svc.url}/${bucket}/${key}`, { method: "PUT", body });
  assert.equal(res.status, 200, `PUT ${bucket}/${key}: ${await res.text()}`);
}

/** The key reads back exactly, whole and in a range. */
async function readsBack(svc: SvcProcess, bucket: string, key: string, body: Uint8Array) {
  const whole = await signedFetch(`${svc.url}/${bucket}/${key}`);
  const bytes = new Uint8Array(await whole.arrayBuffer());
  assert.equal(whole.status, 200, `GET ${bucket}/${key}: ${new TextDecoder().decode(bytes)}`);
  assert.equal(sha256Hex(bytes), sha256Hex(body), `GET ${bucket}/${key}: wrong bytes`);
  const ranged = await signedFetch(`${svc.url}/${bucket}/${key}`, {
    headers: { range: "bytes=1000-70000" },
  });
  assert.equal(ranged.status, 206);
  const part = new Uint8Array(await ranged.arrayBuffer());
  assert.equal(sha256Hex(part), sha256Hex(body.subarray(1000, 70001)), `${key}: wrong range`);
}

/** `key.delta` → its recorded codec, for every delta of the bucket. */
function codecsOf(dataDir: string, bucket: string): Record<string, unknown> {
  return Object.fromEntries(
    storedFiles(dataDir, bucket)
      .filter((f) => f.storage === "delta")
      .map((f) => [f.name, f.meta?.codec]),
  );
}

/** Text-like members, seeded, a few lines changed per version (a source tarball). */
function tgzOf(version: number): Uint8Array<ArrayBuffer> {
  let seed = 11;
  const next = () => (seed = (seed * 1103515245 + 12345) % 2147483648);
  const members = Array.from({ length: 20 }, (_, file) => {
    const lines: string[] = [];
    for (let line = 0; line < 400; line++) {
      const n = next();
      lines.push(`let v${n % 9973} = ${(n >> 5) % 1000}; // ${file}`);
      if (file % 7 === 0 && line % 97 === 0) lines.push(`// version ${version}`);
    }
    return { name: `src/f${file}.ts`, data: utf8.encode(lines.join("\n")) };
  });
  return new Uint8Array(gzipSync(tar(members), { level: 9 }));
}

Deno.test({
  name: "delta codec: zstd and xdelta3 buckets, metadata, a switch, scrub, damaged zstd delta",
  ignore: !objectsOnLocalDisk,
  async fn(t) {
    const dataDir = await Deno.makeTempDir({ prefix: "svc-delta-codec-" });
    const series = new ArtifactSeries(4, 128 * 1024);
    const tars = [series.current(), series.next(), series.next(), series.next()];
    const tgzs = [tgzOf(1), tgzOf(2), tgzOf(3)];
    let svc = await start(dataDir, { [ZS]: "zstd", [XD]: "xdelta3" });
    try {
      await t.step("each bucket's deltas are written by its codec and read back", async () => {
        for (const bucket of [ZS, XD]) {
          for (const v of [0, 1, 2]) await put(svc, bucket, `b/app-1.0.${v}.tar`, tars[v]);
          for (const v of [0, 1]) await put(svc, bucket, `p/pkg-1.${v}.0.tgz`, tgzs[v]);
          await archivesConverted(svc);
        }
        for (const [bucket, codec] of [[ZS, "zstd"], [XD, "xdelta3"]]) {
          const codecs = codecsOf(dataDir, bucket);
          assert.deepEqual(codecs, {
            "b/app-1.0.0.tar.delta": codec,
            "b/app-1.0.1.tar.delta": codec,
            "b/app-1.0.2.tar.delta": codec,
            // The first archive is its group's baseline, kept as it is: an empty delta.
            "p/pkg-1.0.0.tgz.delta": "identity",
            "p/pkg-1.1.0.tgz.delta": codec,
          }, bucket);
          const files = storedFiles(dataDir, bucket);
          const v2 = files.find((f) => f.name === "b/app-1.0.2.tar.delta")!;
          assert.ok(v2.size < tars[2].length / 4, `${bucket}: a real delta (${v2.size} bytes)`);
          const tgz = files.find((f) => f.name === "p/pkg-1.1.0.tgz.delta")!;
          assert.equal(tgz.meta?.transform, "archive-tokens-1", "the archive went in token form");
        }
        // Restarted: no baseline is cached, every read decodes from what is stored.
        await svc.stop();
        svc = await start(dataDir, { [ZS]: "zstd", [XD]: "xdelta3" });
        for (const bucket of [ZS, XD]) {
          for (const v of [0, 1, 2]) await readsBack(svc, bucket, `b/app-1.0.${v}.tar`, tars[v]);
          for (const v of [0, 1]) await readsBack(svc, bucket, `p/pkg-1.${v}.0.tgz`, tgzs[v]);
        }
      });

      await t.step("a bucket switched to the other codec reads its old deltas", async () => {
        await svc.stop();
        svc = await start(dataDir, { [ZS]: "xdelta3", [XD]: "auto" });
        for (const bucket of [ZS, XD]) {
          await put(svc, bucket, "b/app-1.0.3.tar", tars[3]);
          await put(svc, bucket, "p/pkg-1.2.0.tgz", tgzs[2]);
          for (const v of [0, 1, 2, 3]) await readsBack(svc, bucket, `b/app-1.0.${v}.tar`, tars[v]);
          for (const v of [0, 1, 2]) await readsBack(svc, bucket, `p/pkg-1.${v}.0.tgz`, tgzs[v]);
        }
        // `auto` writes zstd (for tars and token forms alike, as measured).
        assert.equal(codecsOf(dataDir, ZS)["b/app-1.0.3.tar.delta"], "xdelta3");
        assert.equal(codecsOf(dataDir, ZS)["p/pkg-1.2.0.tgz.delta"], "xdelta3");
        assert.equal(codecsOf(dataDir, ZS)["b/app-1.0.1.tar.delta"], "zstd", "old ones kept");
        assert.equal(codecsOf(dataDir, XD)["b/app-1.0.3.tar.delta"], "zstd");
        assert.equal(codecsOf(dataDir, XD)["p/pkg-1.2.0.tgz.delta"], "zstd");
        assert.equal(codecsOf(dataDir, XD)["b/app-1.0.1.tar.delta"], "xdelta3", "old ones kept");
      });

      await t.step("the integrity scan and verify rebuild deltas of both codecs", async () => {
        const admin = new AdminClient(svc.url);
        await admin.login();
        const started = await admin.json<{ started: boolean }>(
          "POST",
          "/diagnostics/scan/start",
          { bytes_per_sec: 0 },
          202,
        );
        assert.equal(started.started, true);
        const status: ScanStatus = await waitForScan(admin, (s) => s.state === "finished");
        assert.deepEqual(status.findings, []);
        assert.ok(status.totals.objects_ok >= 14, JSON.stringify(status.totals));
        for (const bucket of [ZS, XD]) {
          const verified = await admin.json<{ checked: number; failed: number }>(
            "POST",
            "/diagnostics/delta-efficiency/verify",
            { bucket, limit: 100 },
          );
          assert.equal(verified.failed, 0, JSON.stringify(verified));
          assert.equal(verified.checked, 7, JSON.stringify(verified));
        }
      });

      await t.step("a damaged zstd delta answers 500, never wrong bytes", async () => {
        await svc.stop();
        await corruptFile(`${dataDir}/${ZS}/b/app-1.0.2.tar.delta`);
        svc = await start(dataDir, { [ZS]: "zstd", [XD]: "xdelta3" });
        for (const headers of [{}, { range: "bytes=0-99" }] as Record<string, string>[]) {
          const res = await signedFetch(`${svc.url}/${ZS}/b/app-1.0.2.tar`, { headers });
          const text = await res.text();
          assert.equal(res.status, 500, text);
          assert.match(text, /InternalError/);
        }
        await readsBack(svc, ZS, "b/app-1.0.1.tar", tars[1]); // its neighbours are intact
        const admin = new AdminClient(svc.url);
        await admin.login();
        await admin.json("POST", "/diagnostics/scan/start", { bytes_per_sec: 0, bucket: ZS }, 202);
        const status = await waitForScan(admin, (s) => s.state === "finished");
        assert.deepEqual(
          status.findings.map((f) => `${f.kind}:${f.key}`),
          ["corrupt_object:b/app-1.0.2.tar"],
        );
      });
    } finally {
      await svc.stop();
      await Deno.remove(dataDir, { recursive: true });
    }
  },
});
