/**
 * The buckets of the S3 backend, and what it remembers of them: a bucket seen to exist is
 * trusted for BUCKET_TRUST_MS, so an object request usually costs one backend request, not two.
 */
import { compareUtf8, SvcError } from "../../lib/mod.ts";
import type { BucketEntry } from "../backend.ts";
import { ADDRESSABLE_BUCKET, type S3Client } from "./s3-client.ts";
import { BackendError, isNoSuchBucket, svcErrorFromBackend } from "./s3-errors.ts";
import type { S3BackendOptions } from "./s3-options.ts";
import { parseListBuckets } from "./s3-xml.ts";

/** How long a bucket seen to exist is trusted before a write checks it again. */
const BUCKET_TRUST_MS = 10_000;
/** Bucket names the backend can address (others are invalid or absent without asking). */
export const BUCKET_NAME = ADDRESSABLE_BUCKET;

export class S3Buckets {
  /** Buckets seen to exist, with the time until which that is trusted. */
  private readonly known = new Map<string, number>();

  constructor(private readonly client: S3Client, private readonly options: S3BackendOptions) {}

  async list(): Promise<BucketEntry[]> {
    const buckets: BucketEntry[] = [];
    let token: string | undefined;
    try {
      do {
        const response = await this.client.send({
          method: "GET",
          query: token ? { "continuation-token": token } : undefined,
          idempotent: true,
        });
        const page = parseListBuckets(response.text);
        buckets.push(...page.buckets);
        token = page.continuationToken;
      } while (token);
    } catch (err) {
      throw svcErrorFromBackend(err);
    }
    return buckets.sort((a, b) => compareUtf8(a.name, b.name));
  }

  /** HEAD, then the bucket's creation date from ListBuckets (epoch 0 when it is not listed). */
  async head(bucket: string): Promise<BucketEntry | null> {
    if (!(await this.exists(bucket))) return null;
    const listed = (await this.list()).find((b) => b.name === bucket);
    return { name: bucket, created: listed?.created ?? new Date(0) };
  }

  async create(bucket: string): Promise<void> {
    if (!BUCKET_NAME.test(bucket)) {
      throw new SvcError("InvalidBucketName", `Bucket name "${bucket}" is not valid`, {
        BucketName: bucket,
      });
    }
    // us-east-1 answers 200 to creating a bucket one already owns, so ask first.
    if (await this.exists(bucket)) throw alreadyOwned(bucket);
    const region = this.options.region;
    const body = region && region !== "us-east-1"
      ? `<CreateBucketConfiguration><LocationConstraint>${region}</LocationConstraint></CreateBucketConfiguration>`
      : undefined;
    try {
      await this.client.send({ method: "PUT", bucket, body, idempotent: false });
    } catch (err) {
      if (err instanceof BackendError && err.code === "BucketAlreadyOwnedByYou") {
        throw alreadyOwned(bucket);
      }
      throw svcErrorFromBackend(err, bucket);
    }
    this.known.set(bucket, Date.now() + BUCKET_TRUST_MS);
  }

  async delete(bucket: string): Promise<void> {
    if (!BUCKET_NAME.test(bucket)) throw noSuchBucket(bucket);
    this.known.delete(bucket);
    try {
      await this.client.send({ method: "DELETE", bucket, idempotent: false });
    } catch (err) {
      throw svcErrorFromBackend(err, bucket);
    }
  }

  /**
   * Whether the bucket exists. A 403 without a body is ambiguous (some stores answer it for a
   * missing bucket, others for a forbidden one): a ListObjectsV2 of zero keys carries an error
   * code that settles it.
   */
  async exists(bucket: string): Promise<boolean> {
    if (!BUCKET_NAME.test(bucket)) return false;
    try {
      await this.client.send({ method: "HEAD", bucket, idempotent: true });
    } catch (err) {
      if (!(err instanceof BackendError)) throw svcErrorFromBackend(err, bucket);
      if (err.status === 404 || isNoSuchBucket(err)) return false;
      if (err.status !== 403) throw svcErrorFromBackend(err, bucket);
      try {
        await this.client.send({
          method: "GET",
          bucket,
          query: { "list-type": "2", "max-keys": "0" },
          idempotent: true,
        });
      } catch (listErr) {
        if (isNoSuchBucket(listErr)) return false;
        throw svcErrorFromBackend(listErr, bucket);
      }
    }
    this.known.set(bucket, Date.now() + BUCKET_TRUST_MS);
    return true;
  }

  /** NoSuchBucket unless the bucket exists (asked only when not seen within BUCKET_TRUST_MS). */
  async require(bucket: string): Promise<void> {
    if ((this.known.get(bucket) ?? 0) > Date.now()) return;
    if (!(await this.exists(bucket))) throw noSuchBucket(bucket);
  }

  /**
   * null for a missing key, after making sure the bucket itself exists: a HEAD has no body to
   * tell NoSuchKey from NoSuchBucket. A bucket seen within BUCKET_TRUST_MS is not asked again,
   * so a miss usually costs one request; a bucket deleted by someone else in that window reads
   * as a missing key rather than NoSuchBucket.
   */
  async absent(bucket: string): Promise<null> {
    await this.require(bucket);
    return null;
  }
}

export function noSuchBucket(bucket: string): SvcError {
  return new SvcError("NoSuchBucket", `Bucket "${bucket}" does not exist`, { BucketName: bucket });
}

function alreadyOwned(bucket: string): SvcError {
  return new SvcError("BucketAlreadyOwnedByYou", `Bucket "${bucket}" already exists`, {
    BucketName: bucket,
  });
}
