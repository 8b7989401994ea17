/**
 * Zip members a version shares with its baseline are copied from the baseline archive when the
 * version is rebuilt (src/delta/archive/stream-memo.ts), the others rebuilt by the deflate model:
 * after a restart every version reads back exactly (whole and ranged), and the members copied
 * are counted in `svc_archive_streams_copied_total`.
 */
import assert from "node:assert/strict";
import { GetObjectCommand, PutObjectCommand } from "@aws-sdk/client-s3";
import { sample } from "../src/testing/archive-samples.ts";
import { archivesConverted, sha256Hex, storedFiles } from "./helpers/delta.ts";
import { objectsOnLocalDisk, signedFetch, startSvc, type SvcProcess } from "./helpers/svc.ts";
import { zlibZip } from "./helpers/zip.ts";

const BUCKET = "members";
const MEMBERS = 30;

/** Version `v`: member 3 changes in version 1, member 17 in version 2. */
function zipOf(v: number): Uint8Array<ArrayBuffer> {
  const members: Record<string, Uint8Array> = {};
  for (let i = 0; i < MEMBERS; i++) {
    const changedIn = i === 3 ? 1 : i === 17 ? 2 : Infinity;
    members[`lib/m${i}.js`] = sample(100 + i + (v >= changedIn ? 1000 : 0), 20_000);
  }
  return zlibZip(members);
}

async function get(svc: SvcProcess, key: string, range?: string): Promise<Uint8Array> {
  const res = await svc.client().send(
    new GetObjectCommand({ Bucket: BUCKET, Key: key, Range: range }),
  );
  return await res.Body!.transformToByteArray();
}

async function copied(svc: SvcProcess): Promise<number> {
  const text = await (await fetch(`${svc.url}/_/metrics`)).text();
  return Number(text.match(/^svc_archive_streams_copied_total (\S+)$/m)?.[1] ?? NaN);
}

Deno.test({
  name: "zip members shared with the baseline are copied, not rebuilt; every version reads exactly",
  ignore: !objectsOnLocalDisk,
  async fn() {
    const dataDir = await Deno.makeTempDir({ prefix: "svc-members-" });
    // No rebuilt-object cache: every read rebuilds.
    const env = { SVC_REBUILT_CACHE_MB: "0" };
    let svc = await startSvc({ dataDir, env });
    try {
      const res = await signedFetch(`${svc.url}/${BUCKET}`, { method: "PUT" });
      assert.equal(res.status, 200, await res.text());
      const bodies = [0, 1, 2].map(zipOf);
      const key = (v: number) => `releases/app-1.${v}.jar`;
      for (const [v, body] of bodies.entries()) {
        await svc.client().send(new PutObjectCommand({ Bucket: BUCKET, Key: key(v), Body: body }));
        await archivesConverted(svc);
      }
      const deltas = storedFiles(dataDir, BUCKET).filter((f) =>
        f.name.endsWith(".delta") && f.meta?.transform === "archive-tokens-1" && f.size > 0
      );
      assert.equal(deltas.length, 2, "versions 1 and 2 are token-form deltas");

      // Read by the server that wrote them: the baseline's streams are known since its PUT.
      assert.equal(sha256Hex(await get(svc, key(1))), sha256Hex(bodies[1]));
      assert.equal(await copied(svc), MEMBERS - 1, "all but the member version 1 changed");

      // Restarted: the first rebuild derives the baseline's form and learns its streams.
      await svc.stop();
      svc = await startSvc({ dataDir, env });
      for (const v of [2, 1, 0]) {
        assert.equal(sha256Hex(await get(svc, key(v))), sha256Hex(bodies[v]), `version ${v}`);
      }
      // Version 2 changed two members since the baseline, version 1 one; version 0 is the
      // baseline's own bytes (nothing rebuilt).
      assert.equal(await copied(svc), (MEMBERS - 2) + (MEMBERS - 1));
      const part = await get(svc, key(2), "bytes=1000-250000");
      assert.equal(sha256Hex(part), sha256Hex(bodies[2].subarray(1000, 250_001)));
    } finally {
      await svc.stop();
      await Deno.remove(dataDir, { recursive: true });
    }
  },
});
