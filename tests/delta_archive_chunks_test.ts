/**
 * Archives whose deflate stream holds more than two chunks of content (docs/DELTA.md "Chunks and
 * threads"): stored as token-form deltas whose predicted records are chunked, rebuilt on several
 * threads, and read back exactly through the SDK (whole, ranged, after a restart); a zip with a
 * large member and many small ones as well.
 */
import assert from "node:assert/strict";
import { gzipSync } from "node:zlib";
import { zipSync } from "fflate";
import { GetObjectCommand, PutObjectCommand } from "@aws-sdk/client-s3";
import { sample } from "../src/testing/archive-samples.ts";
import { archivesConverted, sha256Hex, storedFiles } from "./helpers/delta.ts";
import { objectsOnLocalDisk, signedFetch, startSvc, type SvcProcess } from "./helpers/svc.ts";

const BUCKET = "chunks";

/** Version `v` of a 6 MiB content: the same bytes with a few edits per version. */
function content(v: number): Uint8Array {
  const bytes = sample(31, 6 << 20);
  for (let at = 100_000 + v * 777; at < bytes.length; at += 900_000) bytes[at] ^= 0x21;
  return bytes;
}

const tgzOf = (v: number) => new Uint8Array(gzipSync(content(v), { level: 9 }));
const zipOf = (v: number) => {
  const members: Record<string, Uint8Array> = { "big.txt": content(v) };
  for (let i = 0; i < 40; i++) members[`small/${i}.txt`] = sample(40 + i + (i === 7 ? v : 0), 9000);
  return zipSync(members, { level: 6, mtime: 1e12 });
};

async function get(svc: SvcProcess, key: string, range?: string): Promise<Uint8Array> {
  const res = await svc.client().send(
    new GetObjectCommand({ Bucket: BUCKET, Key: key, Range: range }),
  );
  return await res.Body!.transformToByteArray();
}

Deno.test({
  name: "archives of chunked streams round trip exactly as token-form deltas, after a restart too",
  ignore: !objectsOnLocalDisk,
  async fn() {
    const dataDir = await Deno.makeTempDir({ prefix: "svc-chunks-" });
    let svc = await startSvc({ dataDir, env: { SVC_CODEC_SLOT_WAIT_SECS: "120" } });
    try {
      const res = await signedFetch(`${svc.url}/${BUCKET}`, { method: "PUT" });
      assert.equal(res.status, 200, await res.text());
      const bodies: Record<string, Uint8Array> = {};
      for (const v of [0, 1, 2]) {
        bodies[`builds/app-1.${v}.tgz`] = tgzOf(v);
        bodies[`builds/app-1.${v}.zip`] = zipOf(v);
      }
      for (const [key, body] of Object.entries(bodies)) {
        await svc.client().send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: body }));
      }
      await archivesConverted(svc);
      const deltas = storedFiles(dataDir, BUCKET).filter((f) =>
        f.name.endsWith(".delta") && f.meta?.transform === "archive-tokens-1" && f.size > 0
      );
      assert.ok(deltas.length >= 4, `token-form deltas: ${deltas.map((f) => f.name).join(" ")}`);
      for (const delta of deltas) {
        const key = delta.name.slice(0, -".delta".length);
        assert.ok(delta.size < bodies[key].length / 20, `${key}: delta of ${delta.size} bytes`);
      }
      for (let round = 0; round < 2; round++) {
        for (const [key, body] of Object.entries(bodies)) {
          assert.equal(sha256Hex(await get(svc, key)), sha256Hex(body), `${key} (round ${round})`);
          const part = await get(svc, key, "bytes=1000-300000");
          assert.equal(sha256Hex(part), sha256Hex(body.subarray(1000, 300001)), `${key} range`);
        }
        await svc.stop();
        svc = await startSvc({ dataDir, env: { SVC_CODEC_SLOT_WAIT_SECS: "120" } });
      }
    } finally {
      await svc.stop();
      await Deno.remove(dataDir, { recursive: true });
    }
  },
});
