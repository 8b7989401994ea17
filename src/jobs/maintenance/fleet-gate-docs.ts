/**
 * The documents of the fleet-wide maintenance gate, in the coordination bucket
 * (`advanced.config_sync_bucket`):
 *
 * - `_svc/gates/<bucket>.json`: the gate a maintenance job holds (`GateDocument`), created with
 *   `If-None-Match: *` (two jobs never hold one bucket) and rewritten with `If-Match` (the
 *   holder's heartbeat, a cancel request from another instance, the routing flip).
 * - `_svc/gates/<bucket>/<instance>.ack`: an instance's answer to that gate (`GateAck`): it
 *   gates the bucket and its writes counted before have ended; later also the flip it adopted.
 *   Each is written by its own instance only (no condition needed) and names the job it answers,
 *   so an ack left from an earlier job on the bucket does not count.
 * - `_svc/instances/<instance>.json`: an instance's presence (`{instance, at}`), rewritten every
 *   few seconds; the "live" instances a gate waits for are those whose presence is recent. Removed
 *   by its instance at a clean shutdown, and by a sweep once not rewritten for a week
 *   (fleet-gate-presence.ts).
 */
import { BackendError, parseListObjects, type S3Client } from "../../storage/mod.ts";
import type { MaintenanceWriteGate } from "./maintenance-deps.ts";
import { isAbsent, readDocument } from "../rules/coordination.ts";

export const GATES_PREFIX = "_svc/gates/";
export const PRESENCE_PREFIX = "_svc/instances/";

export interface GateDocument {
  bucket: string;
  /** The job's id on its holder (`maintenance:<n>`). */
  job: string;
  type: string;
  /** The instance running the job (its stable fleet id). */
  holder: string;
  created_at: number;
  /** The holder's clock at its last heartbeat (Unix ms). */
  heartbeat_at: number;
  /** The job's row as its holder's `GET /jobs` shows it, as of the heartbeat. */
  row: Record<string, unknown>;
  /** A cancel asked on another instance; the holder cancels at its next heartbeat. */
  cancel?: { by: string; at: number } | null;
  /** A migration's routing flip, to be adopted by every live instance before the gate lifts. */
  flip?: { backend: string } | null;
}

export interface GateAck {
  instance: string;
  holder: string;
  job: string;
  /** When the instance's writes counted before the gate had ended. */
  drained_at: number;
  /** The backend of the flip it adopted, if any. */
  flipped?: string | null;
}

export interface StoredGate {
  doc: GateDocument;
  etag: string;
}

export const gateKey = (bucket: string) => `${GATES_PREFIX}${bucket}.json`;
export const ackKey = (bucket: string, instance: string) =>
  `${GATES_PREFIX}${bucket}/${encodeURIComponent(instance)}.ack`;
const presenceKey = (instance: string) => `${PRESENCE_PREFIX}${encodeURIComponent(instance)}.json`;

const conditionFailed = (err: unknown) =>
  err instanceof BackendError && (err.status === 412 || err.status === 409);
const absent = isAbsent;

function isGate(value: unknown): value is GateDocument {
  const doc = value as Partial<GateDocument> | null;
  return typeof doc?.bucket === "string" && typeof doc.job === "string" &&
    typeof doc.holder === "string" && typeof doc.heartbeat_at === "number";
}

/** What the gate needs of the coordination bucket (GateDocs; an in-memory one in tests). */
export interface GateStore {
  list(prefix: string): Promise<{ key: string; etag: string }[]>;
  read(bucket: string): Promise<StoredGate | null>;
  create(doc: GateDocument): Promise<string | null>;
  replace(doc: GateDocument, etag: string): Promise<string | null>;
  remove(bucket: string): Promise<void>;
  ack(bucket: string, ack: GateAck): Promise<void>;
  acks(bucket: string, holder: string, job: string): Promise<Map<string, GateAck>>;
  present(instance: string, at: number): Promise<void>;
  /** Removes `instance`'s presence (its clean shutdown). */
  absent(instance: string): Promise<void>;
  /** Removes presence documents last written before `before` (Unix ms); their instances. */
  sweepPresence(before: number): Promise<string[]>;
  live(now: number, windowMs: number): Promise<Set<string>>;
}

export interface FleetGateOptions {
  docs: GateStore;
  /** This instance's stable fleet id. */
  instance: string;
  /** The process's own gate (the S3 layer's BucketWriteGate). */
  local: MaintenanceWriteGate;
  /** Routes `bucket` to `backend` on this instance (a flip another instance made). */
  adopt(bucket: string, backend: string): Promise<void>;
  /** The durable route records (fleet-routes.ts): written at a flip, read with each listing. */
  routes?: {
    record(bucket: string, backend: string, job: string): Promise<void>;
    sync(): Promise<void>;
  };
  now?: () => number;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  refreshMs?: number;
  heartbeatMs?: number;
  presenceMs?: number;
  liveMs?: number;
  expireMs?: number;
}

export function defaultSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

export class GateDocs implements GateStore {
  constructor(readonly client: S3Client, readonly bucket: string) {}

  async #get(key: string): Promise<{ value: unknown; etag: string } | null> {
    const read = await readDocument(this.client, this.bucket, key);
    return read && { value: read.value ?? null, etag: read.etag };
  }

  async #put(key: string, value: unknown, condition?: Record<string, string>): Promise<string> {
    const response = await this.client.send({
      method: "PUT",
      bucket: this.bucket,
      key,
      headers: { "content-type": "application/json", ...condition },
      body: JSON.stringify(value),
      // A conditional write repeated after an unknown outcome at worst fails its condition.
      idempotent: true,
    });
    return response.headers.get("etag") ?? "";
  }

  async #delete(key: string): Promise<void> {
    await this.client.send({ method: "DELETE", bucket: this.bucket, key, idempotent: true })
      .catch((err) => {
        if (!absent(err)) throw err;
      });
  }

  /** Every key under `prefix` with its ETag and Last-Modified (Unix ms). */
  async list(prefix: string): Promise<{ key: string; etag: string; lastModified: number }[]> {
    const out: { key: string; etag: string; lastModified: number }[] = [];
    let after: string | undefined;
    for (;;) {
      const response = await this.client.send({
        method: "GET",
        bucket: this.bucket,
        query: { "list-type": "2", prefix, "start-after": after },
        idempotent: true,
      });
      const page = parseListObjects(response.text);
      for (const { key, etag, lastModified } of page.objects) out.push({ key, etag, lastModified });
      after = page.objects.at(-1)?.key;
      if (!page.isTruncated || after === undefined) return out;
    }
  }

  async read(bucket: string): Promise<StoredGate | null> {
    const got = await this.#get(gateKey(bucket));
    return got !== null && isGate(got.value) ? { doc: got.value, etag: got.etag } : null;
  }

  /** Creates the gate; null when one exists already (another job holds the bucket). */
  async create(doc: GateDocument): Promise<string | null> {
    try {
      return await this.#put(gateKey(doc.bucket), doc, { "if-none-match": "*" });
    } catch (err) {
      if (conditionFailed(err)) return null;
      throw err;
    }
  }

  /** Rewrites the gate if it is still what `etag` names; the new ETag, or null. */
  async replace(doc: GateDocument, etag: string): Promise<string | null> {
    try {
      return await this.#put(gateKey(doc.bucket), doc, { "if-match": etag });
    } catch (err) {
      if (conditionFailed(err) || absent(err)) return null;
      throw err;
    }
  }

  /** Removes the gate of `bucket` and every ack of it. */
  async remove(bucket: string): Promise<void> {
    await this.#delete(gateKey(bucket));
    for (const { key } of await this.list(`${GATES_PREFIX}${bucket}/`)) await this.#delete(key);
  }

  async ack(bucket: string, ack: GateAck): Promise<void> {
    await this.#put(ackKey(bucket, ack.instance), ack);
  }

  /** The acks of `bucket` that answer `holder`'s job `job`, by instance. */
  async acks(bucket: string, holder: string, job: string): Promise<Map<string, GateAck>> {
    const found = new Map<string, GateAck>();
    for (const { key } of await this.list(`${GATES_PREFIX}${bucket}/`)) {
      const ack = (await this.#get(key))?.value as Partial<GateAck> | null;
      if (ack?.holder === holder && ack.job === job && typeof ack.instance === "string") {
        found.set(ack.instance, ack as GateAck);
      }
    }
    return found;
  }

  async present(instance: string, at: number): Promise<void> {
    await this.#put(presenceKey(instance), { instance, at });
  }

  async absent(instance: string): Promise<void> {
    await this.#delete(presenceKey(instance));
  }

  async sweepPresence(before: number): Promise<string[]> {
    const removed: string[] = [];
    for (const { key, lastModified } of await this.list(PRESENCE_PREFIX)) {
      // A listing without a date (0) is not judged old: only what the store says is old goes.
      if (lastModified <= 0 || lastModified >= before) continue;
      await this.#delete(key);
      removed.push(decodeURIComponent(key.slice(PRESENCE_PREFIX.length, -".json".length)));
    }
    return removed;
  }

  /** Instances whose presence was written within `windowMs` of `now` (their own clocks). */
  async live(now: number, windowMs: number): Promise<Set<string>> {
    const live = new Set<string>();
    for (const { key } of await this.list(PRESENCE_PREFIX)) {
      const doc = (await this.#get(key))?.value as { instance?: unknown; at?: unknown } | null;
      if (typeof doc?.instance === "string" && typeof doc.at === "number") {
        if (now - doc.at <= windowMs) live.add(doc.instance);
      }
    }
    return live;
  }
}
