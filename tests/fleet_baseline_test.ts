/**
 * Several svc instances over one S3 backend (docs/DELTA.md "Several instances over one
 * backend"): three fronts share one backing svc. First versions of `.zip`, `.tgz` and `.tar`
 * artifacts PUT at once through different fronts race to create their group's baseline; later
 * versions, re-baselining (forced by a tiny rebaseline ratio) and deletes race too. Every
 * acknowledged object must read back byte-identical through every front, and the integrity scan
 * must find nothing damaged.
 */
import {
  CreateBucketCommand,
  DeleteObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  type S3Client,
} from "@aws-sdk/client-s3";
import assert from "node:assert/strict";
import { gzipSync } from "node:zlib";
import { zipSync } from "fflate";
import { AdminClient } from "./helpers/admin.ts";
import { type ScanStatus, waitForScan } from "./helpers/diagnostics.ts";
import { bytesOf, clientFor, sha256, startBackingSvc, startFront } from "./helpers/s3-front.ts";
import type { SvcProcess } from "./helpers/svc.ts";
import { tar } from "./helpers/tar.ts";

const BUCKET = "fleet";
const ROUNDS = Number(Deno.env.get("FLEET_ROUNDS") ?? 4);
const utf8 = new TextEncoder();

/** Compressible members; `variant` changes a few lines, so versions are good deltas. */
function tree(seed: number, variant: number): { name: string; data: Uint8Array }[] {
  const words = ["alpha", "beta", "gamma", "delta", "const", "return", "function", "export"];
  let state = seed;
  const next = () => (state = (state * 1103515245 + 12345) % 2147483648);
  return Array.from({ length: 12 }, (_, file) => {
    const lines: string[] = [];
    for (let line = 0; line < 300; line++) {
      const n = next();
      lines.push(`${words[n % 8]} ${words[(n >> 3) % 8]}_${n % 9973} = ${(n >> 5) % 1000};`);
      if (file % 5 === 0 && line % 61 === 0) lines.push(`// variant ${variant} line ${line}`);
    }
    return { name: `src/file-${file}.ts`, data: utf8.encode(lines.join("\n")) };
  });
}

type Kind = "zip" | "tgz" | "tar";
const KINDS: Kind[] = ["zip", "tgz", "tar"];

function artifact(kind: Kind, seed: number, variant: number): Uint8Array {
  const members = tree(seed, variant);
  if (kind === "tar") return tar(members);
  if (kind === "tgz") return new Uint8Array(gzipSync(tar(members), { level: 6 }));
  return zipSync(
    Object.fromEntries(members.map((m) => [m.name, [m.data, { mtime: 1e12 }]])),
    { level: 6 },
  );
}

async function put(s3: S3Client, key: string, body: Uint8Array) {
  await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: body }));
}

/** Every acknowledged object reads back exactly through every front. */
async function assertEverywhere(fronts: S3Client[], written: Map<string, Uint8Array>) {
  const failures: string[] = [];
  for (const [key, body] of written) {
    for (const [i, s3] of fronts.entries()) {
      try {
        const got = await bytesOf(s3, BUCKET, key);
        if (sha256(got) !== sha256(body)) failures.push(`${key} via front ${i}: body differs`);
      } catch (err) {
        failures.push(`${key} via front ${i}: ${(err as Error).name} ${(err as Error).message}`);
      }
    }
  }
  assert.deepEqual(failures, [], `${failures.length} bad reads:\n${failures.join("\n")}`);
}

Deno.test({
  name: "fleet: concurrent baselines, versions, re-baselines and deletes over one backend",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn(t) {
    const backing = await startBackingSvc([BUCKET]);
    const procs: SvcProcess[] = [];
    try {
      // A tiny rebaseline ratio: every second encode of a group starts a new generation, so the
      // fronts race to create generations too.
      for (let i = 0; i < 3; i++) {
        procs.push(await startFront(backing, { SVC_REBASELINE_RATIO: "0.0001" }));
      }
      const fronts = procs.map((p) => p.client({ checksums: false }));
      await fronts[0].send(new CreateBucketCommand({ Bucket: BUCKET }));
      const written = new Map<string, Uint8Array>();

      await t.step("first versions race to create each group's baseline", async () => {
        for (let round = 0; round < ROUNDS; round++) {
          const puts: Promise<void>[] = [];
          for (const kind of KINDS) {
            for (let i = 0; i < 3; i++) {
              const key = `r${round}/${kind}/app-1.0.${i}.${kind}`;
              const body = artifact(kind, round * 10 + KINDS.indexOf(kind), i);
              written.set(key, body);
              puts.push(put(fronts[i], key, body));
            }
          }
          await Promise.all(puts);
        }
        await assertEverywhere(fronts, written);
      });

      await t.step("later versions race with re-baselines", async () => {
        for (let round = 0; round < ROUNDS; round++) {
          const puts: Promise<void>[] = [];
          for (const kind of KINDS) {
            for (let i = 0; i < 3; i++) {
              for (const minor of [1, 2]) {
                const key = `r${round}/${kind}/app-1.${minor}.${i}.${kind}`;
                const body = artifact(kind, round * 10 + KINDS.indexOf(kind), 10 * minor + i);
                written.set(key, body);
                puts.push(put(fronts[(i + minor) % 3], key, body));
              }
            }
          }
          await Promise.all(puts);
        }
        await assertEverywhere(fronts, written);
      });

      await t.step("deletes of all but one version race with new versions", async () => {
        const ops: Promise<void>[] = [];
        for (let round = 0; round < ROUNDS; round++) {
          for (const kind of KINDS) {
            const prefix = `r${round}/${kind}/`;
            const keys = [...written.keys()].filter((k) => k.startsWith(prefix));
            const keep = keys[0];
            for (const [n, key] of keys.entries()) {
              if (key === keep) continue;
              written.delete(key);
              ops.push(
                fronts[n % 3].send(new DeleteObjectCommand({ Bucket: BUCKET, Key: key }))
                  .then(() => {}),
              );
            }
            // A new version through another front while the others go.
            const key = `${prefix}app-2.0.0.${kind}`;
            const body = artifact(kind, round * 10 + KINDS.indexOf(kind), 99);
            written.set(key, body);
            ops.push(put(fronts[(round + 1) % 3], key, body));
          }
        }
        await Promise.all(ops);
        await assertEverywhere(fronts, written);
      });

      await t.step("groups emptied and refilled at once through different fronts", async () => {
        for (let round = 0; round < ROUNDS; round++) {
          const ops: Promise<void>[] = [];
          for (const kind of KINDS) {
            const prefix = `r${round}/${kind}/`;
            for (
              const [n, key] of [...written.keys()].filter((k) => k.startsWith(prefix)).entries()
            ) {
              written.delete(key);
              ops.push(
                fronts[n % 3].send(new DeleteObjectCommand({ Bucket: BUCKET, Key: key }))
                  .then(() => {}),
              );
            }
            for (let i = 0; i < 2; i++) {
              const key = `${prefix}app-3.0.${i}.${kind}`;
              const body = artifact(kind, round * 10 + KINDS.indexOf(kind), 300 + i);
              written.set(key, body);
              ops.push(put(fronts[(round + i + 1) % 3], key, body));
            }
          }
          await Promise.all(ops);
        }
        await assertEverywhere(fronts, written);
      });

      await t.step("the integrity scan finds nothing damaged", async () => {
        const admin = new AdminClient(procs[0].url);
        await admin.login();
        await admin.json("POST", "/diagnostics/scan/start", { bytes_per_sec: 0 }, 202);
        const status: ScanStatus = await waitForScan(admin, (s) => s.state === "finished", 120_000);
        // Over an S3 backend a listing carries no user metadata: the scan HEADs each marker for
        // the key it names (before, every marker was reported orphaned under its hash).
        assert.deepEqual(status.findings, [], JSON.stringify(status.findings));
      });

      await t.step("every marker names a live delta of its folder, no claim is left", async () => {
        const raw = clientFor(backing);
        const names: string[] = [];
        let token: string | undefined;
        do {
          const page = await raw.send(
            new ListObjectsV2Command({ Bucket: BUCKET, Prefix: ".dg/", ContinuationToken: token }),
          );
          names.push(...(page.Contents ?? []).map((o) => o.Key!));
          token = page.NextContinuationToken;
        } while (token);
        assert.deepEqual(names.filter((n) => n.startsWith(".dg/retiring/")), []);
        const problems: string[] = [];
        const markers = names.filter((n) => n.includes("/refs/"));
        assert.ok(markers.length >= ROUNDS * KINDS.length, `markers: ${markers.length}`);
        for (const name of markers) {
          const marker = await raw.send(new HeadObjectCommand({ Bucket: BUCKET, Key: name }));
          const key = decodeURIComponent(marker.Metadata?.key ?? "");
          const delta = await raw.send(
            new HeadObjectCommand({ Bucket: BUCKET, Key: `${key}.delta` }),
          )
            .catch(() => null);
          const folder = name.slice(0, name.indexOf("refs/"));
          const deltaspace = delta?.Metadata?.["svc-x-deltaspace"];
          if (deltaspace !== folder) problems.push(`${name} (${key}): delta in ${deltaspace}`);
        }
        assert.deepEqual(problems, []);
      });
      // What the fronts went through (informative: the races are timing-dependent).
      const count = (text: string) =>
        procs.reduce((n, p) => n + p.logs.filter((l) => l.includes(text)).length, 0);
      console.log(
        `baseline races lost: ${count("created the baseline first")}, deltas gone ` +
          `passthrough after their baseline went: ${count("retired or replaced by another")}, ` +
          `new generations: ${count("new baseline generation")}`,
      );
    } finally {
      for (const proc of procs) await proc.stop();
      await backing.stop();
    }
  },
});
