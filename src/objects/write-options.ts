/**
 * What a write asks of the object service: the client's metadata, the options of PUT and COPY,
 * the precondition judged under the key lock, and how a verified body becomes an ETag. Shared by
 * the object service, multipart completion and the S3 operations, apart from the service itself.
 */
import type { ObjectInfo, StoredHeader } from "../storage/mod.ts";
import type { WriteContext } from "./usage/write-observer.ts";
import type { ReplayBodyCheck } from "../body/mod.ts";

export interface ObjectLimits {
  /** Largest object or upload body in bytes; 0 refuses every upload. */
  maxObjectSize: number;
  /**
   * Largest CopyObject source in bytes (`max_passthrough_object_size`, within S3's 5 GiB
   * single-copy limit): a copy reads no request body, so `max_object_size` does not bound it.
   * Absent: `maxObjectSize`.
   */
  maxPassthroughObjectSize?: number;
}

/** S3's limit on one CopyObject; larger objects are copied with UploadPartCopy. */
export const MAX_SINGLE_COPY_BYTES = 5 * 1024 ** 3;

/**
 * The largest object one CopyObject may copy: what a multipart upload may create
 * (`max_passthrough_object_size`) up to S3's 5 GiB, never below `max_object_size`; 0 when
 * uploads are refused altogether.
 */
export function maxCopyBytes(limits: ObjectLimits): number {
  if (limits.maxObjectSize === 0) return 0;
  const passthrough = limits.maxPassthroughObjectSize ?? limits.maxObjectSize;
  return Math.max(limits.maxObjectSize, Math.min(passthrough, MAX_SINGLE_COPY_BYTES));
}

/** Metadata a client sets on an object (PUT, CreateMultipartUpload, COPY with REPLACE). */
export interface ClientMetadata {
  contentType?: string;
  userMeta: Record<string, string>;
  headers: Partial<Record<StoredHeader, string>>;
  /** Object tags; absent or empty for none. */
  tags?: Record<string, string>;
}

/** Runs under the key lock with the current object (or null) just before commit; throws to refuse. */
export type WritePrecondition = (existing: ObjectInfo | null) => void;

export interface PutOptions {
  metadata: ClientMetadata;
  /** Declared logical length; a body of another length is IncompleteBody. */
  contentLength?: number;
  /** Hex md5 from Content-MD5. */
  expectedMd5?: string;
  /** Hex sha256 from x-amz-content-sha256. */
  expectedSha256?: string;
  precondition?: WritePrecondition;
  signal?: AbortSignal;
  /** A replayed upload: staged through this check, which never lets it commit. */
  replayCheck?: ReplayBodyCheck;
  /** Who wrote, for the observers (event outbox). */
  context?: WriteContext;
}

export interface CopyOptions {
  /** null keeps the source's metadata (COPY directive). */
  metadata: ClientMetadata | null;
  /** The copy's tags (tagging directive REPLACE); undefined keeps the source's (COPY). */
  tags?: Record<string, string>;
  /** Checks the source (copy-source conditionals); throws to refuse. */
  sourceCheck?: (source: ObjectInfo) => void;
  precondition?: WritePrecondition;
  signal?: AbortSignal;
  /** Who wrote, for the observers (event outbox). */
  context?: WriteContext;
}

/** What a finished body turns into: the digests plus how the ETag is formed. */
export interface CommitPlan {
  etag?: string;
  partsCount?: number;
  /** Part layout of a multipart object (see part-layout.ts). */
  partSizes?: string;
}

export const DEFAULT_CONTENT_TYPE = "application/octet-stream";

/** The `tags` field of a metadata record: absent when there are none. */
export function withTags(
  tags: Record<string, string> | undefined,
): { tags?: Record<string, string> } {
  return tags && Object.keys(tags).length > 0 ? { tags } : {};
}
