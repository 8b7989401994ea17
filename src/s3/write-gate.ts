/**
 * The write gate: one check the router runs before every client write shape, so bucket-level
 * refusals live in one place (future gates, such as a migration's 503 SlowDown, slot in here).
 *
 * In order:
 * 1. `replication_target_only` (on the bucket, or on another name for the same real bucket):
 *    every write shape is refused with 403 AccessDenied, CreateBucket and DeleteBucket
 *    included, since replication owns the bucket's existence as well as its objects.
 *    AbortMultipartUpload is not a write: it only discards staged parts.
 * 2. `quota_bytes: 0` freezes the bucket: every write shape, deletes and DeleteBucket included,
 *    is refused with 403 QuotaExceeded. CreateBucket stays allowed (it stores no bytes).
 * 3. A maintenance job (re-encrypt, migrate) holds the bucket (`BucketWriteGate` below): every
 *    write shape answers 503 SlowDown, which SDKs retry with back-off; reads are not gated.
 * 4. A non-zero quota (soft, in logical bytes): a write that adds bytes is refused when the
 *    bucket is already at or over its quota, or when usage plus the declared size minus the
 *    object it replaces would pass it. Deletes are always allowed: they are how a bucket gets
 *    back under. Sizes not known up front (POST forms, UploadPartCopy, chunked bodies without a
 *    declared length) are only checked against the current usage, and concurrent writes are
 *    each judged against the same usage, so a bucket can overshoot; the quota is soft. In a
 *    fleet the usage is the fleet's (`quotaUsage`: every instance's writes as last published),
 *    so writes through the other instances count, up to their publish delay.
 */
import { SvcError } from "../lib/mod.ts";
import type { BucketUsage, ObjectService, UsageCounter } from "../objects/mod.ts";
import type { EffectiveBucketPolicy } from "./bucket-policy.ts";

export type WriteKind =
  | "put"
  | "post"
  | "copy"
  | "create-multipart"
  | "upload-part"
  | "upload-part-copy"
  | "complete-multipart"
  | "delete"
  | "delete-objects"
  | "create-bucket"
  | "delete-bucket"
  /** Put/DeleteObjectTagging: changes metadata only, adds no bytes. */
  | "tagging";

export interface WriteIntent {
  kind: WriteKind;
  bucket: string;
  /** The key written, when the write replaces an object there (its size is then credited). */
  key?: string;
  /** The bytes the write adds, when known up front; only asked when a quota applies. */
  declaredBytes?: () => Promise<number | undefined>;
}

export interface WriteGateServices {
  objects: ObjectService;
  bucketPolicy: (bucket: string) => EffectiveBucketPolicy;
  usage: UsageCounter;
  /** The usage a quota judges, from this instance's (a fleet adds the others' writes). */
  quotaUsage?: (bucket: string, local: BucketUsage) => Promise<BucketUsage>;
  /** Buckets held by maintenance jobs; absent in setups without jobs. */
  maintenanceGate?: BucketWriteGate;
}

const REMOVALS = new Set<WriteKind>(["delete", "delete-objects", "delete-bucket"]);
const REPLACING = new Set<WriteKind>(["put", "post", "copy", "complete-multipart"]);

export async function gateWrite(services: WriteGateServices, intent: WriteIntent): Promise<void> {
  const { bucket, kind } = intent;
  const policy = services.bucketPolicy(bucket);
  if (policy.targetOnlyBy !== undefined) {
    const via = policy.targetOnlyBy === bucket
      ? ""
      : ` (it is the same bucket as "${policy.targetOnlyBy}")`;
    throw new SvcError(
      "AccessDenied",
      `Bucket "${bucket}" is a replication target${via}: replication is its only writer, client writes are refused`,
      { BucketName: bucket },
    );
  }
  const holder = services.maintenanceGate?.holder(bucket);
  if (holder !== undefined) {
    throw new SvcError(
      "SlowDown",
      `Bucket "${bucket}" is under maintenance (${holder}); writes resume when it ends`,
      { BucketName: bucket },
    );
  }
  const quota = policy.quotaBytes;
  if (quota === undefined || kind === "create-bucket") return;
  if (quota === 0) {
    throw new SvcError(
      "QuotaExceeded",
      `Bucket "${bucket}" is frozen (quota_bytes 0): every write is refused`,
      { BucketName: bucket },
    );
  }
  if (REMOVALS.has(kind) || kind === "tagging") return;
  const local = await services.usage.usage(bucket);
  const used = (services.quotaUsage ? await services.quotaUsage(bucket, local) : local)
    .logical_bytes;
  if (used >= quota) throw overQuota(bucket, quota, used);
  const declared = await intent.declaredBytes?.();
  if (declared === undefined) return;
  const replaced = intent.key !== undefined && REPLACING.has(kind)
    ? await sizeOf(services.objects, bucket, intent.key)
    : 0;
  if (used + declared - replaced > quota) throw overQuota(bucket, quota, used, declared);
}

async function sizeOf(objects: ObjectService, bucket: string, key: string): Promise<number> {
  try {
    return (await objects.head(bucket, key)).meta.size;
  } catch {
    return 0; // absent (or unreadable): nothing is replaced, the write itself will tell
  }
}

function overQuota(bucket: string, quota: number, used: number, adding?: number): SvcError {
  const message = adding === undefined
    ? `Bucket "${bucket}" has reached its quota of ${quota} bytes (${used} bytes used)`
    : `Writing ${adding} bytes to bucket "${bucket}" would exceed its quota of ${quota} bytes (${used} bytes used)`;
  return new SvcError("QuotaExceeded", message, { BucketName: bucket });
}

/** The body length a request declares (decoded length for aws-chunked bodies), if any. */
export function declaredLength(headers: Headers): number | undefined {
  const raw = headers.get("x-amz-decoded-content-length") ?? headers.get("content-length");
  if (raw === null || !/^\d+$/.test(raw.trim())) return undefined;
  const value = Number(raw);
  return Number.isSafeInteger(value) ? value : undefined;
}

/**
 * The buckets maintenance jobs hold, and the client writes in flight per bucket. A job engages
 * the gate when it is created (new writes get 503 SlowDown from `gateWrite`), then waits in
 * `drained` until the writes that passed before it have ended, so it never copies a bucket while
 * one is half-written. The S3 handler counts every mutating request per bucket (`enter`) around
 * its whole execution; `gateWrite` runs inside that window, so a write is either counted before
 * the gate engaged (and drained) or refused.
 */
export class BucketWriteGate {
  readonly #held = new Map<string, string>();
  readonly #fences = new Map<string, string>();
  readonly #inflight = new Map<string, number>();
  readonly #waiters = new Map<string, Set<() => void>>();

  /** The job holding `bucket`, or undefined when writes may pass. */
  holder(bucket: string): string | undefined {
    return this.#held.get(bucket);
  }

  /** Buckets held now, with their jobs. */
  held(): ReadonlyMap<string, string> {
    return this.#held;
  }

  /**
   * Why every request on `bucket` is refused (503), or undefined: a fleet instance that cannot
   * adopt a migration's route record (jobs/maintenance/fleet-routes.ts) must not serve the bucket
   * from the backend it was moved away from.
   */
  fenced(bucket: string): string | undefined {
    return this.#fences.get(bucket);
  }

  /** How many buckets are fenced now (the `svc_fenced_buckets` gauge). */
  fencedCount(): number {
    return this.#fences.size;
  }

  fence(bucket: string, reason: string | null): void {
    if (reason === null) this.#fences.delete(bucket);
    else this.#fences.set(bucket, reason);
  }

  engage(bucket: string, jobId: string): void {
    this.#held.set(bucket, jobId);
  }

  /** Lifts the gate of `bucket` if `jobId` (when given) is the one holding it. */
  lift(bucket: string, jobId?: string): void {
    if (jobId === undefined || this.#held.get(bucket) === jobId) this.#held.delete(bucket);
  }

  /** Counts one mutating request on `bucket` until the returned function is called. */
  enter(bucket: string): () => void {
    this.#inflight.set(bucket, (this.#inflight.get(bucket) ?? 0) + 1);
    let left = false;
    return () => {
      if (left) return;
      left = true;
      const remaining = (this.#inflight.get(bucket) ?? 1) - 1;
      if (remaining > 0) {
        this.#inflight.set(bucket, remaining);
        return;
      }
      this.#inflight.delete(bucket);
      const waiters = this.#waiters.get(bucket);
      this.#waiters.delete(bucket);
      for (const wake of waiters ?? []) wake();
    };
  }

  inflight(bucket: string): number {
    return this.#inflight.get(bucket) ?? 0;
  }

  /** Resolves once no write to `bucket` is in flight; rejects with the signal's reason. */
  drained(bucket: string, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.inflight(bucket) === 0) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const waiters = this.#waiters.get(bucket) ?? new Set<() => void>();
      this.#waiters.set(bucket, waiters);
      const onAbort = () => {
        waiters.delete(wake);
        reject(signal!.reason);
      };
      const wake = () => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      };
      waiters.add(wake);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }
}
