/**
 * The settings of one S3 backend, and how they are read from the configuration.
 *
 * Credentials are explicit only: the backend's own YAML fields, else SVC_BE_AWS_ACCESS_KEY_ID /
 * SVC_BE_AWS_SECRET_ACCESS_KEY. The AWS environment and instance-metadata chain are never
 * consulted, so an operator always knows which identity svc uses. (src/config/env.ts already
 * copies the two variables onto the single `storage.backend`; the fallback here covers named
 * backends and the `storage.s3` shorthand.)
 */
import type { AdvancedConfig } from "../../config/mod.ts";

export interface S3BackendOptions {
  /** `http(s)://host[:port]` of the store, without a path. */
  endpoint: string;
  region: string;
  /** `endpoint/bucket/key` when true, `bucket.endpoint/key` otherwise. */
  forcePathStyle: boolean;
  accessKeyId: string;
  secretAccessKey: string;
  /** Allowance for establishing the connection, added to the first wait for response headers. */
  connectTimeoutMs: number;
  /** Longest silence while waiting for the backend: response headers, or the next body chunk. */
  readTimeoutMs: number;
  /** Cap on one attempt, from sending the request to the end of a buffered answer. */
  attemptTimeoutMs: number;
  /** Extra silence tolerated once a streamed body has started, before it counts as stalled. */
  stallGraceMs: number;
  /** Objects of at least this many bytes are uploaded as multipart uploads. */
  streamCopyThreshold: number;
  /** Bytes per part of a multipart upload (at least 5 MiB, raised to stay within 10,000 parts). */
  partSize: number;
  /** Parts of one upload in flight at once. */
  uploadConcurrency: number;
  /** Local directory for staged bodies. */
  spoolDir: string;
  /** Attempts per request for retryable failures (default 3). */
  maxAttempts?: number;
  /** First backoff before a retry, doubled each time, with full jitter (default 200 ms). */
  retryBaseMs?: number;
  /**
   * Headers added to every request that creates an object (PUT, CreateMultipartUpload, the
   * metadata-rewriting copy): the `sse-s3` / `sse-kms` headers (encryption/sse-headers.ts).
   */
  writeHeaders?: Record<string, string>;
}

/** The fields a backend block of the config (single or named, or the shorthand) carries. */
export interface S3BackendConfig {
  endpoint?: string;
  region?: string;
  force_path_style?: boolean;
  access_key_id?: string;
  secret_access_key?: string;
}

/** The advanced settings an S3 client reads (timeouts, streaming copy, part sizes). */
export type AdvancedS3 = Pick<
  AdvancedConfig,
  | "s3_connect_timeout_secs"
  | "s3_read_timeout_secs"
  | "s3_operation_attempt_timeout_secs"
  | "s3_stall_grace_secs"
  | "stream_copy_threshold"
  | "multipart_part_size"
  | "upload_concurrency"
>;

const MiB = 1024 * 1024;

/**
 * Options for one backend from its config block and the `advanced` section. Throws, naming the
 * missing setting, when the endpoint or a credential is absent.
 */
export function s3OptionsFromConfig(
  backend: S3BackendConfig,
  advanced: AdvancedS3,
  spoolDir: string,
  env: (name: string) => string | undefined = (name) => Deno.env.get(name),
): S3BackendOptions {
  const endpoint = backend.endpoint;
  if (!endpoint) throw new Error("S3 backend has no endpoint configured");
  const accessKeyId = backend.access_key_id ?? env("SVC_BE_AWS_ACCESS_KEY_ID");
  const secretAccessKey = backend.secret_access_key ?? env("SVC_BE_AWS_SECRET_ACCESS_KEY");
  if (!accessKeyId || !secretAccessKey) {
    throw new Error(
      `S3 backend "${endpoint}" has no credentials: set access_key_id and secret_access_key ` +
        "or SVC_BE_AWS_ACCESS_KEY_ID and SVC_BE_AWS_SECRET_ACCESS_KEY",
    );
  }
  return {
    endpoint: endpoint.replace(/\/+$/, ""),
    region: backend.region ?? "us-east-1",
    forcePathStyle: backend.force_path_style ?? true,
    accessKeyId,
    secretAccessKey,
    connectTimeoutMs: advanced.s3_connect_timeout_secs * 1000,
    readTimeoutMs: advanced.s3_read_timeout_secs * 1000,
    attemptTimeoutMs: advanced.s3_operation_attempt_timeout_secs * 1000,
    stallGraceMs: advanced.s3_stall_grace_secs * 1000,
    streamCopyThreshold: advanced.stream_copy_threshold,
    partSize: Math.max(5 * MiB, advanced.multipart_part_size),
    uploadConcurrency: Math.min(16, Math.max(1, advanced.upload_concurrency)),
    spoolDir,
  };
}
