/**
 * The services every S3 handler uses. A leaf of the route table: the rows, the operation
 * handlers and the dispatcher all name it, and it names none of them.
 */
import type { AdmissionChain } from "../../admission/mod.ts";
import type { CredentialStore } from "../../iam/mod.ts";
import type {
  BucketUsage,
  MultipartService,
  ObjectService,
  UsageCounter,
} from "../../objects/mod.ts";
import type { S3Access } from "../access.ts";
import type { EffectiveBucketPolicy } from "../bucket-policy.ts";
import type { BucketWriteGate } from "../write-gate.ts";

export interface S3Services {
  objects: ObjectService;
  multipart: MultipartService;
  /** The current credential store (POST policy uploads verify against it). */
  credentials: () => CredentialStore;
  /** The admission chain of the current config snapshot (evaluated before authentication). */
  admission: () => AdmissionChain;
  /** A bucket's policy in the current config snapshot (public prefixes, quota, target-only). */
  bucketPolicy: (bucket: string) => EffectiveBucketPolicy;
  /** Per-bucket usage, for quotas. */
  usage: UsageCounter;
  /** The usage a quota judges, from this instance's (a fleet adds the others' writes). */
  quotaUsage?: (bucket: string, local: BucketUsage) => Promise<BucketUsage>;
  /** Authorization hooks (IAM); absent means ALLOW_ALL: authentication decides everything. */
  access?: S3Access;
  /** Buckets held by maintenance jobs (writes 503) and writes in flight per bucket. */
  maintenanceGate?: BucketWriteGate;
}
