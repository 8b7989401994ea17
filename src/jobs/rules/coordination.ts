/**
 * The coordination bucket (`advanced.config_sync_bucket`): when it is set, replication leases are
 * lease objects in it (s3-leases.ts) instead of rows of the node-local config database, so svc
 * instances sharing a rule never run it at once, and the IAM part of the config database is
 * shared through it (db/config-sync.ts). It must live on an S3 backend (the bucket's routed
 * backend, else the default one) that honours conditional writes: both are checked at boot, and
 * svc refuses to start otherwise.
 */
import { backendPlanOf, type Config } from "../../config/mod.ts";
import { BackendError, S3Client, s3OptionsFromConfig } from "../../storage/mod.ts";
import { checkConditionalWrites, S3Leases } from "./s3-leases.ts";

export interface CoordinationBucket {
  client: S3Client;
  bucket: string;
}

/** The checked coordination bucket, or null when none is configured. */
export async function coordinationBucket(config: Config): Promise<CoordinationBucket | null> {
  const bucket = config.advanced.config_sync_bucket;
  if (!bucket) return null;
  const plan = backendPlanOf(config);
  const name = config.storage.buckets[bucket]?.backend ?? plan.defaultName;
  const spec = plan.specs.find((candidate) => candidate.name === name);
  if (spec?.type !== "s3") {
    throw new Error(
      `advanced.config_sync_bucket "${bucket}" must live on an S3 backend; backend "${name}" ` +
        `is ${spec?.type ?? "unknown"}`,
    );
  }
  const client = new S3Client(s3OptionsFromConfig(spec, config.advanced, "/nonexistent"));
  try {
    await checkConditionalWrites(client, bucket);
  } catch (err) {
    throw new Error(
      `advanced.config_sync_bucket "${bucket}" cannot hold leases: ${
        err instanceof Error ? err.message : String(err)
      }`,
    );
  }
  return { client, bucket };
}

export function coordinationLeases(
  shared: CoordinationBucket | null,
  instance: string,
): S3Leases | null {
  return shared === null ? null : new S3Leases(shared.client, shared.bucket, instance);
}

/**
 * Whether a coordination-bucket request failed because the document is not there (404; a missing
 * bucket is a failure, not absence).
 */
export function isAbsent(err: unknown): boolean {
  return err instanceof BackendError && err.status === 404 && err.code !== "NoSuchBucket";
}

/**
 * A JSON document of the coordination bucket with its ETag, or null when there is none (404).
 * `value` is undefined when the body is not JSON (a damaged document reads as nothing; its ETag
 * still lets a conditional write replace it). Other failures reject: an error is not absence.
 */
export async function readDocument(
  client: S3Client,
  bucket: string,
  key: string,
): Promise<{ value: unknown; etag: string } | null> {
  let response;
  try {
    response = await client.send({ method: "GET", bucket, key, idempotent: true });
  } catch (err) {
    if (isAbsent(err)) return null;
    throw err;
  }
  let value: unknown;
  try {
    value = JSON.parse(response.text);
  } catch { /* damaged: read as nothing */ }
  return { value, etag: response.headers.get("etag") ?? "" };
}
