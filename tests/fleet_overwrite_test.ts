/**
 * Issue 30: read-your-acknowledged-writes across a fleet (three svc instances over one S3 store,
 * tests/helpers/fleet.ts). 20 writers overwrite 10 keys, each writer through its own instance,
 * while readers GET (and HEAD) them through a client that sends every request to the next instance. Keys
 * are plain text, delta-eligible dumps (.sql), .tgz and .zip archives, each version a realistic
 * small change of the last. No read may return a body older than the last write acknowledged
 * before the read started: a version whose PUT was acknowledged before another's PUT began is
 * older than it (overlapping PUTs may land in either order). Every body read must be a version
 * some writer sent, byte for byte.
 *
 * No load balancer: each client picks its instances itself, so this runs without haproxy too.
 * Runs 60 s (SVC_FLEET_OVERWRITE_SECS overrides, for a quick local run).
 */
import assert from "node:assert/strict";
import {
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  type S3Client,
} from "@aws-sdk/client-s3";
import { zipSync } from "fflate";
import { createHash } from "node:crypto";
import { startFleet } from "./helpers/fleet.ts";
import {
  sha256,
  staleReads,
  type TimedRead,
  type TimedWrite,
  unsettledKeys,
} from "./helpers/freshness.ts";
import { randomBytes } from "./helpers/svc.ts";
import { mutate, tar } from "./helpers/tar.ts";

const BUCKET = "overwrite";
const SECONDS = Number(Deno.env.get("SVC_FLEET_OVERWRITE_SECS") ?? "60");
const WRITERS = 20;
const READERS = 10;
const KEYS = [
  "plain-0.txt",
  "plain-1.txt",
  "plain-2.txt",
  "plain-3.bin",
  "dump-0.sql",
  "dump-1.sql",
  "release-0.tgz",
  "release-1.tgz",
  "bundle-0.zip",
  "bundle-1.zip",
];

const utf8 = new TextEncoder();

async function gzip(data: Uint8Array<ArrayBuffer>): Promise<Uint8Array<ArrayBuffer>> {
  const stream = new Blob([data]).stream().pipeThrough(new CompressionStream("gzip"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

/** Each key's content evolves like its kind does between releases; the version is inside. */
class KeyContent {
  #base: Uint8Array<ArrayBuffer>;
  constructor(readonly key: string) {
    this.#base = randomBytes(key.startsWith("plain") ? 8 * 1024 : 96 * 1024);
  }

  async body(version: string): Promise<Uint8Array<ArrayBuffer>> {
    this.#base = mutate(this.#base, 0.01);
    const stamp = utf8.encode(`${this.key} version ${version}\n`);
    if (this.key.endsWith(".tgz")) {
      return await gzip(tar([{ name: "app/lib.bin", data: this.#base }, {
        name: "app/VERSION",
        data: stamp,
      }]));
    }
    if (this.key.endsWith(".zip")) {
      return zipSync({ "lib.bin": this.#base, "VERSION": stamp }, { mtime: 1_700_000_000_000 });
    }
    const out = new Uint8Array(stamp.length + this.#base.length);
    out.set(stamp);
    out.set(this.#base, stamp.length);
    return out;
  }
}

type Write = TimedWrite;

type Read = TimedRead;

Deno.test({
  name: "fleet: no read returns a body older than the last write acknowledged before it",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    await using fleet = await startFleet({ buckets: [BUCKET], loadBalancer: false });
    const contents = new Map(KEYS.map((key) => [key, new KeyContent(key)]));
    const writes = new Map<string, Write>(); // by version
    const bySha = new Map<string, string>(); // body sha256 -> version
    const byMd5 = new Map<string, string>(); // body md5 (a PUT's ETag) -> version
    const writeErrors: string[] = [];
    const readErrors: string[] = [];
    const reads: Read[] = [];
    const now = () => performance.now();

    const put = async (s3: S3Client, key: string, version: string) => {
      const body = await contents.get(key)!.body(version);
      bySha.set(sha256(body), version);
      byMd5.set(createHash("md5").update(body).digest("hex"), version);
      const write: Write = { key, version, start: now() };
      writes.set(version, write);
      await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: body }));
      write.ack = now();
    };

    // Every key exists before the race: a 404 later is always a violation.
    const seeder = fleet.instanceClient(0);
    for (const key of KEYS) await put(seeder, key, `${key}:seed`);
    seeder.destroy();

    const deadline = Date.now() + SECONDS * 1000;
    const writer = async (w: number) => {
      const s3 = fleet.instanceClient(w % fleet.instances.length);
      try {
        for (let seq = 0; Date.now() < deadline; seq++) {
          const key = KEYS[(w + seq) % KEYS.length];
          const version = `${key}:w${w}.${seq}`;
          try {
            await put(s3, key, version);
          } catch (err) {
            const error = err as Error;
            writeErrors.push(
              `${version} via svc${w % fleet.instances.length}: ${error.name}: ` +
                error.message.slice(0, 160),
            );
          }
        }
      } finally {
        s3.destroy();
      }
    };
    const reader = async (r: number) => {
      const s3 = fleet.rotatingClient();
      try {
        for (let seq = 0; Date.now() < deadline; seq++) {
          const key = KEYS[(r * 7 + seq) % KEYS.length];
          // Every third read is a HEAD (what sync tools ask first), judged by its ETag.
          const method = seq % 3 === 2 ? "HEAD" : "GET";
          const read: Read = { key, method, start: now(), detail: "" };
          try {
            if (method === "HEAD") {
              const out = await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: key }));
              read.version = byMd5.get(out.ETag?.replaceAll('"', "") ?? "");
              if (read.version === undefined) read.detail = `unknown ETag ${out.ETag}`;
            } else {
              const out = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
              const body = await out.Body!.transformToByteArray();
              read.version = bySha.get(sha256(body));
              if (read.version === undefined) read.detail = `unknown body (${body.length} bytes)`;
            }
          } catch (err) {
            const error = err as Error;
            read.detail = `${method} ${error.name}: ${error.message.slice(0, 160)}`;
            readErrors.push(`${key}: ${read.detail}`);
          }
          reads.push(read);
        }
      } finally {
        s3.destroy();
      }
    };
    await Promise.all([
      ...Array.from({ length: WRITERS }, (_, w) => writer(w)),
      ...Array.from({ length: READERS }, (_, r) => reader(r)),
    ]);

    const violations = staleReads(writes, reads);
    // Once quiet, every instance answers the same body for a key, and no stale one.
    const settled = await unsettledKeys(fleet, BUCKET, KEYS, writes, bySha);
    const byKey = new Map<string, number>();
    for (const v of violations) byKey.set(v.split(":")[0], (byKey.get(v.split(":")[0]) ?? 0) + 1);
    const acked = [...writes.values()].filter((w) => w.ack !== undefined).length;
    console.log(`violations by key: ${JSON.stringify(Object.fromEntries(byKey))}`);
    console.log(
      `${acked} writes acknowledged, ${reads.length} reads, ${writeErrors.length} write ` +
        `errors, ${readErrors.length} read errors, ${violations.length} violations`,
    );
    assert.ok(acked > KEYS.length * 3, `too few writes to judge: ${acked}`);
    assert.ok(reads.length > KEYS.length * 3, `too few reads to judge: ${reads.length}`);
    assert.deepEqual(
      {
        writeErrors: writeErrors.slice(0, 10),
        violations: violations.slice(0, 10),
        settled,
      },
      { writeErrors: [], violations: [], settled: [] },
      `${writeErrors.length} writes failed, ${violations.length} stale or bad reads, ` +
        `${settled.length} keys unsettled once quiet (first ten of each)`,
    );
  },
});
