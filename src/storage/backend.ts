/**
 * The storage interface every backend (filesystem, s3) implements. Backends store bytes and one
 * metadata record per object under the names they are given; they know nothing of HTTP, delta
 * compression or IAM. Absence is `null`; every other failure throws, so a caller never reads an
 * error as "absent".
 */

/** Standard headers that round-trip with an object, stored lowercase. */
export const STORED_HEADERS = [
  "cache-control",
  "content-disposition",
  "content-encoding",
  "content-language",
  "expires",
] as const;
export type StoredHeader = typeof STORED_HEADERS[number];

/**
 * How the bytes of an object are stored: as-is, as a delta against its deltaspace's baseline, or
 * (for a write that created the baseline) `reference`.
 */
export type StorageKind = "passthrough" | "delta" | "reference";

/** The metadata record persisted with every object. Field names are the on-disk format. */
export interface ObjectMeta {
  /** Logical size in bytes: what a client reads back. */
  size: number;
  /** ETag without quotes: md5 hex, or `md5-of-md5s-N` for multipart uploads. */
  etag: string;
  /** Hex md5 of the logical body; "" for multipart objects, whose ETag comes from the parts. */
  md5: string;
  /** Hex sha256 of the logical body. */
  sha256: string;
  contentType: string;
  /** User metadata, keys lowercase without the `x-amz-meta-` prefix. */
  userMeta: Record<string, string>;
  headers: Partial<Record<StoredHeader, string>>;
  /** Last-Modified, epoch milliseconds. */
  lastModified: number;
  /** Number of parts when the object came from a multipart upload. */
  partsCount?: number;
  /**
   * Sizes of those parts, run-length encoded (`8388608*639,1234`; see objects/part-layout.ts), so
   * `?partNumber=N` reads find a part. Absent on other objects and on ones completed before it
   * was recorded.
   */
  partSizes?: string;
  storage: StorageKind;
  /** Object tags (S3 object tagging), in the order the client gave them; absent when none. */
  tags?: Record<string, string>;
  /**
   * Present when the stored bytes are sealed by svc's `aes256-gcm-proxy` (storage/encryption/):
   * the id of the key they are sealed under (`svc-encryption-key-id` on S3 backends). Set and
   * kept by the encryption layer only; every size and digest above stays the plaintext's.
   */
  encryptionKeyId?: string;
  /**
   * Present when the stored bytes are seekable zstd (storage/compression/): `zstd:<frameSize>:
   * <indexOffset>:<size>:<md5>`. Set and kept by the compression layer only; on the record
   * stored below it `size` and `md5` describe the stored bytes, the marker the logical ones.
   */
  compression?: string;
}

export interface ObjectInfo {
  key: string;
  /** Bytes the object occupies on the backend (differs from meta.size for deltas). */
  storedSize: number;
  meta: ObjectMeta;
  /**
   * Transient, never persisted: how this write was stored (`reference` when it created its
   * deltaspace's baseline) and whether a delta read or write found its baseline in the reference
   * cache, and the deltaspace (group key or parent folder) a delta store put it in. Feeds the
   * debug headers and metrics.
   */
  debug?: {
    decision?: StorageKind;
    referenceCache?: "hit" | "miss";
    deltaspace?: string;
    /** With `decision: "reference"`: what the new baseline takes on the backend. */
    baselineBytes?: number;
  };
  /**
   * Transient, never persisted: the backend's opaque token of this stored version (the S3
   * backend's ETag, the filesystem backend's inode and record), for a WriteCondition `ifMatch`.
   * Absent when the backend did not report one. Equal tokens may mean equal bytes written twice.
   */
  version?: string;
  /**
   * Transient, never persisted: set by the encryption layer when the stored bytes are sealed
   * (`aes256-gcm-proxy`), so layers above keep no plaintext copy of them on local disk.
   */
  sealed?: true;
}

export interface BucketEntry {
  name: string;
  created: Date;
}

export interface ByteRange {
  /** First byte, inclusive. */
  start: number;
  /** Last byte, inclusive. */
  end: number;
}

export interface ListOptions {
  prefix: string;
  /** Only keys strictly greater than this (UTF-8 byte order). */
  startAfter?: string;
  delimiter?: string;
  /** Entries (objects plus common prefixes) in one page, at least 1. */
  maxKeys: number;
  /**
   * Objects whose last key segment is one of these may be left out of the page. A hint for a
   * caller that drops them anyway: the delta layer hides its baselines (`reference.bin`), and the
   * filesystem backend then never reads their metadata. A backend that cannot skip them cheaply
   * lists them.
   */
  omitBaseNames?: ReadonlySet<string>;
}

export interface ListPage {
  objects: ObjectInfo[];
  commonPrefixes: string[];
  isTruncated: boolean;
  /** The last key or common prefix returned: the startAfter of the next page. */
  nextStartAfter?: string;
}

/**
 * A condition on a commit, checked atomically with it by the backend (several svc instances over
 * one backend rely on it, docs/DELTA.md "Several instances over one backend"): `ifNoneMatch`
 * commits only when no object exists under the key, `ifMatch` only when the stored object is the
 * version whose `ObjectInfo.version` token is given. A condition that does not hold fails the
 * commit with SvcError PreconditionFailed and leaves the stored object as it was.
 */
export type WriteCondition = { ifNoneMatch: true } | { ifMatch: string };

/**
 * A condition on a delete, checked atomically with it like a WriteCondition: `ifMatch` removes
 * the object only while it is the version whose `ObjectInfo.version` token is given (S3's
 * `If-Match` on DeleteObject). Several svc instances rely on it to garbage-collect a key's other
 * stored name without removing a newer write (docs/DELTA.md "Several instances over one backend").
 */
export type DeleteCondition = { ifMatch: string };

/** A body written to the backend but not yet visible. Exactly one of commit/abort is called. */
export interface StagedObject {
  /** Bytes written. */
  readonly size: number;
  /**
   * Makes the object visible atomically with this metadata, replacing any previous object, or,
   * with a condition, only when it holds (PreconditionFailed otherwise). The returned info
   * carries the new version token when the backend reports one. A commit refused on its
   * condition (PreconditionFailed) leaves the staged bytes as they were: the caller may commit
   * again (another condition, other metadata) or abort, so a writer ordering its commit after
   * the object it looked up first does not need the body twice (docs/DELTA.md).
   */
  commit(meta: ObjectMeta, condition?: WriteCondition): Promise<ObjectInfo>;
  /** Discards the staged bytes. Safe to call after a failed commit. */
  abort(): Promise<void>;
}

/** A local file (a multipart part) that becomes one extent of an object; see stageExtents. */
export interface LocalExtent {
  path: string;
  size: number;
}

/** Seals and opens local working copies of a bucket's bytes; see Backend.scratchSealer. */
export interface ScratchSealer {
  /** The key id new copies are sealed under; undefined when they are written as they are. */
  readonly keyId: string | undefined;
  /** `plain` as it is to be stored (header and sealed frames; `plain` itself when keyId is unset). */
  seal(plain: ReadableStream<Uint8Array>): Promise<ReadableStream<Uint8Array>>;
  /**
   * The plaintext of a copy sealed under `keyId`, whose stored bytes (`storedSize` long) hold
   * `size` bytes of plaintext. InternalError, before any byte, when the key is unknown or the
   * sizes disagree; a damaged frame fails the stream, never yields its bytes.
   */
  open(
    stored: ReadableStream<Uint8Array>,
    sealed: { keyId: string; storedSize: number; size: number },
  ): Promise<ReadableStream<Uint8Array>>;
}

export interface ObjectBody {
  info: ObjectInfo;
  body: ReadableStream<Uint8Array>;
  /**
   * The same bytes as `body`, already read (a small object on the filesystem backend): an HTTP
   * answer sends them with its headers in one write instead of streaming them.
   */
  bytes?: Uint8Array<ArrayBuffer>;
}

export interface Backend {
  readonly kind: "filesystem" | "s3";

  listBuckets(): Promise<BucketEntry[]>;
  /** null when the bucket does not exist. */
  headBucket(bucket: string): Promise<BucketEntry | null>;
  /** Throws BucketAlreadyOwnedByYou when it exists. */
  createBucket(bucket: string): Promise<void>;
  /** Throws NoSuchBucket, or BucketNotEmpty while any object remains. */
  deleteBucket(bucket: string): Promise<void>;

  /** null when the key does not exist; throws NoSuchBucket for a missing bucket. */
  headObject(bucket: string, key: string): Promise<ObjectInfo | null>;
  /**
   * The stored bytes, optionally one byte range of them (already validated by the caller).
   * `check`, when given, is called with the version about to be opened before any expensive work
   * (a delta is rebuilt only after it passes); whatever it throws aborts the open. A backend that
   * has nothing expensive to avoid may ignore it: callers judge the returned info themselves.
   */
  getObject(
    bucket: string,
    key: string,
    range?: ByteRange,
    check?: (info: ObjectInfo) => void,
  ): Promise<ObjectBody | null>;
  /**
   * Writes the body to a hidden temporary place. Throws NoSuchBucket before reading the body,
   * and the key's own errors (InvalidObjectName, KeyTooLongError, ObjectPathConflict).
   */
  stageObject(
    bucket: string,
    key: string,
    body: ReadableStream<Uint8Array>,
    signal?: AbortSignal,
    /** The body's declared length when known (lets a delta encode give up early). */
    expectedSize?: number,
  ): Promise<StagedObject>;
  /**
   * Replaces the metadata record of an existing object in place, keeping its bytes: `update`
   * gets the stored record and returns the new one. null when the key does not exist; throws
   * NoSuchBucket for a missing bucket. Callers serialise it with writes of the same key.
   */
  updateObjectMeta(
    bucket: string,
    key: string,
    update: (meta: ObjectMeta) => ObjectMeta,
  ): Promise<ObjectInfo | null>;
  /**
   * Optional: stages an object whose bytes are these local files in order (a completed multipart
   * upload's parts) without copying them through a stream: the filesystem backend hard-links
   * them as the object's extents, the S3 backend sends each as one part of a backend multipart
   * upload. null when it cannot (the caller then streams the files through stageObject). The
   * files must stay unchanged until commit or abort. Same refusals as stageObject.
   */
  stageExtents?(
    bucket: string,
    key: string,
    extents: LocalExtent[],
    signal?: AbortSignal,
  ): Promise<StagedObject | null>;
  /**
   * Optional: how svc keeps its local working copies of this bucket's bytes (multipart parts in
   * flight) at rest: sealed as the backend seals its objects, so an encrypted backend's bytes are
   * never plaintext on svc's disk either. null or absent: kept as they are.
   */
  scratchSealer?(bucket: string): Promise<ScratchSealer | null>;
  /**
   * Removes one object; false when it did not exist. With a condition, only when it holds:
   * SvcError PreconditionFailed otherwise (a missing object is still false).
   */
  deleteObject(bucket: string, key: string, condition?: DeleteCondition): Promise<boolean>;
  /** One page of keys in UTF-8 byte order. Throws NoSuchBucket. */
  listObjects(bucket: string, options: ListOptions): Promise<ListPage>;
}
