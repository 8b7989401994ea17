/**
 * The `storage` section: the single backend (canonical `backend` block or the `s3` /
 * `filesystem` shorthands), named backends, per-backend encryption, bucket policies,
 * replication and lifecycle. Cross-field rules live in schema.ts.
 */
import * as v from "valibot";
import {
  bool,
  describe,
  list,
  matching,
  NAME_PATTERN,
  nonEmpty,
  num,
  oneOf,
  record,
  str,
  strict,
  u64,
} from "./schema-common.ts";
import { lifecycleSchema, replicationSchema } from "./schema-jobs.ts";

export const filesystemPath = v.pipe(
  str,
  v.minLength(1, "expected a non-empty path"),
  v.check(
    (path) => !path.split(/[\\/]/).includes(".."),
    (issue) => `must not contain ".." components, got "${issue.input}"`,
  ),
);

const httpUrl = v.pipe(
  str,
  v.check(
    (url) => /^https?:\/\/\S+$/.test(url),
    (issue) => `must start with http:// or https://, got ${describe(issue.input)}`,
  ),
);

const hexKey = matching(/^[0-9a-f]{64}$/, "64 lowercase hex characters (256 bit)");
const keyId = matching(NAME_PATTERN, "1-64 characters of [A-Za-z0-9_.-]");

export const ENCRYPTION_MODES = ["none", "aes256-gcm-proxy", "sse-kms", "sse-s3"] as const;

export const encryptionSchema = strict({
  mode: v.optional(oneOf(ENCRYPTION_MODES), "none"),
  key: v.optional(hexKey),
  key_id: v.optional(keyId),
  kms_key_id: v.optional(nonEmpty),
  bucket_key_enabled: v.optional(bool),
  legacy_key: v.optional(hexKey),
  legacy_key_id: v.optional(keyId),
});

const backendFields = {
  type: oneOf(["filesystem", "s3"]),
  path: v.optional(filesystemPath),
  endpoint: v.optional(httpUrl),
  region: v.optional(str, "us-east-1"),
  force_path_style: v.optional(bool, true),
  access_key_id: v.optional(str),
  secret_access_key: v.optional(str),
};

export const backendSchema = strict(backendFields);

export const namedBackendSchema = strict({
  name: matching(NAME_PATTERN, "1-64 characters of [A-Za-z0-9_.-]"),
  ...backendFields,
  encryption: v.optional(encryptionSchema),
});

/** A public prefix: no `..` component, NUL byte or `//`. */
const publicPrefix = v.pipe(
  str,
  v.check(
    (prefix) =>
      !prefix.includes("\0") && !prefix.includes("//") && !prefix.split("/").includes(".."),
    (issue) => `"${issue.input}": prefixes containing "..", NUL bytes or "//" are rejected`,
  ),
);

/**
 * Which baseline a bucket's deltas share (docs/DELTA.md, delta/groups/deltaspace-policy.ts):
 * `auto` (the default), `parent`, or `template:<pattern>[;<pattern>…]` where every pattern holds
 * `{version}` and no empty pattern.
 */
const deltaspacePolicy = v.pipe(
  str,
  v.check(
    (raw) =>
      raw === "auto" || raw === "parent" ||
      (raw.startsWith("template:") &&
        raw.slice("template:".length).split(";").every((p) => p.trim().includes("{version}"))),
    (issue) =>
      `expected auto, parent or template:<pattern>[;<pattern>…] with {version} in every ` +
      `pattern, got ${describe(issue.input)}`,
  ),
);

export const bucketPolicySchema = strict({
  compression: v.optional(bool),
  max_delta_ratio: v.optional(num(0, 1)),
  deltaspace: v.optional(deltaspacePolicy),
  /**
   * Which codec writes the bucket's deltas (docs/DELTA.md "Delta codecs"): `auto` (the default:
   * zstd for plain content, xdelta3 for archive token forms), `xdelta3` or `zstd`. Stored deltas
   * always decode with the codec that wrote them.
   */
  delta_codec: v.optional(oneOf(["auto", "xdelta3", "zstd"])),
  /**
   * When an archive (gzip or zip family) becomes an archive delta (docs/DELTA.md "Archives
   * converted in the background"): `background` (the default: the PUT stores it as it came, a
   * background conversion stores it as a delta soon after) or `inline` (during the PUT).
   */
  archive_deltas: v.optional(oneOf(["background", "inline"])),
  backend: v.optional(nonEmpty),
  alias: v.optional(nonEmpty),
  /** Always present after validation; `public: true` is folded into `[""]`. */
  public_prefixes: v.optional(list(publicPrefix), []),
  /** Input shorthand only; removed from the validated config (see schema.ts). */
  public: v.optional(bool),
  quota_bytes: v.optional(u64),
  replication_target_only: v.optional(bool, false),
});

export const BUCKET_NAME = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

export const storageSchema = strict({
  s3: v.optional(httpUrl),
  filesystem: v.optional(filesystemPath),
  region: v.optional(str),
  access_key_id: v.optional(str),
  secret_access_key: v.optional(str),
  force_path_style: v.optional(bool),
  backend: v.optional(backendSchema),
  backends: v.optional(list(namedBackendSchema), []),
  default_backend: v.optional(nonEmpty),
  buckets: v.optional(record(bucketPolicySchema), {}),
  backend_encryption: v.optional(encryptionSchema),
  replication: v.optional(replicationSchema, {}),
  lifecycle: v.optional(lifecycleSchema, {}),
});

export type StorageConfig = v.InferOutput<typeof storageSchema>;
export type BackendConfig = v.InferOutput<typeof backendSchema>;
export type NamedBackend = v.InferOutput<typeof namedBackendSchema>;
export type EncryptionConfig = v.InferOutput<typeof encryptionSchema>;
export type BucketPolicy = v.InferOutput<typeof bucketPolicySchema>;
