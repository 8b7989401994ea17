/**
 * Issue 30: writes streamed straight to the backend are ordered like every other write of their
 * key (docs/DELTA.md "Several instances over one backend"). Three svc instances over one S3 store
 * (tests/helpers/fleet.ts) with `max_object_size` low: writers pinned to instances overwrite two
 * delta-eligible keys, alternating small versions (stored as `x.delta`) and multipart objects
 * larger than `max_object_size` (streamed to the backend as `x`, no spool of the delta store),
 * while readers GET through a client that sends every request to the next instance. No read may
 * return a body older than the last write acknowledged before the read started, or no body, and
 * once quiet every instance serves the newest write.
 *
 * Runs 20 s (SVC_FLEET_STREAMED_SECS overrides). No load balancer: each client picks its
 * instances itself.
 */
import assert from "node:assert/strict";
import {
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  S3Client,
  UploadPartCommand,
} from "@aws-sdk/client-s3";
import { startFleet } from "./helpers/fleet.ts";
import {
  sha256,
  staleReads,
  type TimedRead,
  type TimedWrite,
  unsettledKeys,
} from "./helpers/freshness.ts";
import { randomBytes } from "./helpers/svc.ts";
import { mutate } from "./helpers/tar.ts";

const BUCKET = "streamed";
const SECONDS = Number(Deno.env.get("SVC_FLEET_STREAMED_SECS") ?? "20");
/** `SVC_FLEET_STREAMED_KEYS` (comma-separated) and `_WRITERS` narrow or widen the race. */
const KEYS = (Deno.env.get("SVC_FLEET_STREAMED_KEYS") ?? "dumps/db-0.sql,dumps/db-1.sql")
  .split(",");
const WRITERS = Number(Deno.env.get("SVC_FLEET_STREAMED_WRITERS") ?? "6");
const READERS = 4;
const MIB = 1024 * 1024;
/** S3's smallest part but the last; max_object_size bounds one part too, so it sits just above. */
const PART = 5 * MIB;
const MAX_OBJECT_SIZE = PART + 64 * 1024;
const SMALL = 192 * 1024;
const LARGE_TAIL = 256 * 1024;

const utf8 = new TextEncoder();

type Write = TimedWrite;

type Read = TimedRead;

/** `tag` padded to a line, then `base`: every version's bytes differ from the first byte. */
function tagged(tag: string, base: Uint8Array): Uint8Array<ArrayBuffer> {
  const head = utf8.encode(`${tag}\n`.padStart(48, " "));
  const out = new Uint8Array(head.length + base.length);
  out.set(head);
  out.set(base, head.length);
  return out;
}

Deno.test({
  name: "fleet: streamed large overwrites are ordered with delta overwrites of the same key",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    await using fleet = await startFleet({
      buckets: [BUCKET],
      loadBalancer: false,
      advancedYaml: `  max_object_size: ${MAX_OBJECT_SIZE}`,
    });
    const small = new Map(KEYS.map((key) => [key, randomBytes(SMALL)]));
    const large = new Map(KEYS.map((key) => [key, randomBytes(PART + LARGE_TAIL)]));
    const writes = new Map<string, Write>();
    const bySha = new Map<string, string>();
    const writeErrors: string[] = [];
    const reads: Read[] = [];
    const counts = { small: 0, large: 0 };
    const now = () => performance.now();

    const record = (key: string, version: string, body: Uint8Array): Write => {
      bySha.set(sha256(body), version);
      const write: Write = { key, version, start: now() };
      writes.set(version, write);
      return write;
    };
    const putSmall = async (s3: S3Client, key: string, version: string) => {
      small.set(key, mutate(small.get(key)!, 0.01));
      const body = tagged(version, small.get(key)!);
      const write = record(key, version, body);
      await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: body }));
      write.ack = now();
      counts.small++;
    };
    const putLarge = async (s3: S3Client, key: string, version: string) => {
      const body = tagged(version, large.get(key)!);
      const write = record(key, version, body);
      const { UploadId } = await s3.send(
        new CreateMultipartUploadCommand({ Bucket: BUCKET, Key: key }),
      );
      const parts = [];
      for (const [index, bytes] of [body.subarray(0, PART), body.subarray(PART)].entries()) {
        const part = { Bucket: BUCKET, Key: key, UploadId, PartNumber: index + 1, Body: bytes };
        const { ETag } = await s3.send(new UploadPartCommand(part));
        parts.push({ ETag, PartNumber: index + 1 });
      }
      await s3.send(
        new CompleteMultipartUploadCommand({
          Bucket: BUCKET,
          Key: key,
          UploadId,
          MultipartUpload: { Parts: parts },
        }),
      );
      write.ack = now();
      counts.large++;
    };

    // Every key exists before the race (a delta baseline, then a delta): a 404 is a violation.
    const seeder = fleet.instanceClient(0);
    for (const key of KEYS) {
      await putSmall(seeder, key, `${key}:seed0`);
      await putSmall(seeder, key, `${key}:seed1`);
    }
    seeder.destroy();
    // The small versions are deltas in the store: both stored names of a key are in play.
    const store = new S3Client({
      endpoint: fleet.store.endpoint,
      region: "us-east-1",
      forcePathStyle: true,
      credentials: {
        accessKeyId: fleet.store.accessKeyId,
        secretAccessKey: fleet.store.secretAccessKey,
      },
    });
    for (const key of KEYS) {
      await store.send(new HeadObjectCommand({ Bucket: BUCKET, Key: `${key}.delta` }));
    }

    const deadline = Date.now() + SECONDS * 1000;
    const writer = async (w: number) => {
      const instance = w % fleet.instances.length;
      const s3 = fleet.instanceClient(instance);
      try {
        for (let seq = 0; Date.now() < deadline; seq++) {
          const key = KEYS[(w + seq) % KEYS.length];
          const version = `${key}:w${w}.${seq}`;
          try {
            // Alternating forms, offset per writer: both forms of a key are in flight at once.
            if ((w + seq) % 2 === 0) await putLarge(s3, key, version);
            else await putSmall(s3, key, version);
          } catch (err) {
            const error = err as Error;
            writeErrors.push(`${version} via svc${instance}: ${error.name}: ${error.message}`);
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
          const key = KEYS[(r + seq) % KEYS.length];
          const read: Read = { key, start: now(), detail: "" };
          try {
            const out = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
            const body = await out.Body!.transformToByteArray();
            read.version = bySha.get(sha256(body));
            if (read.version === undefined) read.detail = `unknown body (${body.length} bytes)`;
          } catch (err) {
            const error = err as Error;
            read.detail = `GET ${error.name}: ${error.message.slice(0, 160)}`;
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
    // A last large write leaves the key under its passthrough name alone.
    const last = fleet.instanceClient(1);
    await putLarge(last, KEYS[0], `${KEYS[0]}:last`);
    last.destroy();
    await store.send(new HeadObjectCommand({ Bucket: BUCKET, Key: KEYS[0] }));
    await assert.rejects(
      store.send(new HeadObjectCommand({ Bucket: BUCKET, Key: `${KEYS[0]}.delta` })),
      "the older delta is gone",
    );
    store.destroy();
    console.log(
      `${counts.small} small and ${counts.large} large writes acknowledged, ${reads.length} ` +
        `reads, ${writeErrors.length} write errors, ${violations.length} violations`,
    );
    assert.ok(counts.large >= KEYS.length * 2, `too few large writes to judge: ${counts.large}`);
    assert.ok(counts.small >= KEYS.length * 2, `too few small writes to judge: ${counts.small}`);
    assert.ok(reads.length > KEYS.length * 5, `too few reads to judge: ${reads.length}`);
    assert.deepEqual(
      { writeErrors: writeErrors.slice(0, 10), violations: violations.slice(0, 10), settled },
      { writeErrors: [], violations: [], settled: [] },
      `${writeErrors.length} writes failed, ${violations.length} stale or bad reads, ` +
        `${settled.length} keys unsettled once quiet (first ten of each)`,
    );
  },
});
