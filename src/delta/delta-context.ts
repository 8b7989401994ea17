/**
 * DeltaContext: the state the DeltaBackend shares with its write half (delta-write.ts,
 * live-encode.ts) and its read half (delta-read.ts, stream-verify.ts), with the settings,
 * metadata and observer types they all name and the small helpers keyed on it. It imports none of
 * those halves, so they can all import it.
 */

import { type KeyLock, SvcError } from "../lib/mod.ts";
import type { Backend, ObjectMeta } from "../storage/mod.ts";
import type { DeltaCodec } from "./codec/codec.ts";
import type { CodecPool } from "./codec/codec-pool.ts";
import type { CodecSet } from "./codec/codec-choice.ts";
import type { ReferenceCache } from "./cache/reference-cache.ts";
import type { StreamMemos } from "./archive/archive-codec.ts";
import type { MetadataCache } from "./metadata-cache.ts";
import { deltaspaceOf } from "./layout.ts";

/** Settings read once per operation (a config snapshot; hot reload swaps what this returns). */
export interface DeltaSettings {
  /** Global `max_delta_ratio`. */
  maxDeltaRatio: number;
  /** `max_object_size`: the ceiling for delta processing. */
  maxObjectSize: number;
  /** `codec_timeout_secs * 1000`; also the longest a GET waits for a codec slot. */
  codecTimeoutMs: number;
  /** `codec_slot_wait_secs * 1000`: how long a PUT waits for a slot before going passthrough. */
  codecSlotWaitMs: number;
  bucketCompression(bucket: string): boolean;
  bucketMaxDeltaRatio(bucket: string): number | undefined;
  /** The bucket's `deltaspace` setting (deltaspace-policy.ts); absent or undefined: `auto`. */
  bucketDeltaspace?(bucket: string): string | undefined;
  /** The bucket's `delta_codec` (codec/codec-choice.ts); absent or undefined: `auto`. */
  bucketDeltaCodec?(bucket: string): string | undefined;
  /** The bucket's `archive_deltas` (background/archive-convert.ts); absent: `background`. */
  bucketArchiveDeltas?(bucket: string): string | undefined;
}

/**
 * Metadata of a stored delta: the logical object's metadata plus the sha256 of the baseline it
 * was encoded against. `referenceSha256` is an extra property of the persisted record (the
 * filesystem backend stores the record as JSON verbatim); ObjectMeta does not declare it yet.
 */
export interface DeltaMeta extends ObjectMeta {
  referenceSha256?: string;
  /**
   * The folder of the baseline a delta was encoded against: `.dg/<id>/` for a group, the parent
   * folder for the `parent` policy. Absent on deltas written before groups: the parent folder.
   */
  deltaspace?: string;
  /** The group key (or parent folder) the delta joined; `x-svc-deltaspace` and diagnostics. */
  deltaGroup?: string;
  /** Why svc stored the object as it did, on every object it writes in a compressed bucket. */
  storageReason?: DecisionReason;
  /**
   * How the delta's target (and its baseline) was transformed before the encode:
   * `archive-tokens-1` = archive token form (archive-form.ts); a read contracts it back. Absent:
   * the object's own bytes.
   */
  transform?: string;
  /**
   * The codec that wrote the delta (`xdelta3`, `zstd`); a read decodes with it (codec-choice.ts).
   * Absent on deltas written before the choice: xdelta3.
   */
  codec?: string;
  /**
   * When the writer committed this stored name (ms since the epoch, as a string), on every
   * object svc writes in a compressed bucket: orders `x` against `x.delta` within one second of
   * the backend's Last-Modified (fleet/stored-order.ts).
   */
  writtenAt?: string;
  /** The id of a group delta's own marker (group-refs.ts); absent: the older shared marker. */
  markerId?: string;
  /**
   * On an object stored again later for the same write (a background archive conversion,
   * background/archive-convert.ts): that write's Last-Modified (ms, as a string), which clients
   * see and which orders it (fleet/stored-order.ts); its `writtenAt` is the write's too.
   */
  sourceLastModified?: string;
}

/** The folder of the baseline the stored delta of `key` (with metadata `meta`) decodes against. */
export function baselineFolderOf(key: string, meta: ObjectMeta): string {
  return (meta as DeltaMeta).deltaspace ?? deltaspaceOf(key);
}

/**
 * Why a write was stored the way it was (the `reason` label of `svc_delta_decisions_total`):
 * `new_baseline` (reference), `ratio_met` (delta), and for passthrough `not_eligible` (type, size),
 * `ratio_exceeded`, `codec_busy` (no codec slot freed within `codec_slot_wait_secs`),
 * `codec_unavailable` (no xdelta3), `baseline_unusable` (the baseline, or its cached copy, does
 * not match its sha256), `archive_not_rebuildable` (a compressed archive whose token form does
 * not rebuild it exactly, see archive-form.ts) or `archive_pending` (an archive stored as it came,
 * waiting for its background conversion, background/archive-convert.ts).
 */
export type DecisionReason =
  | "new_baseline"
  | "ratio_met"
  | "not_eligible"
  | "ratio_exceeded"
  | "codec_busy"
  | "codec_unavailable"
  | "baseline_unusable"
  | "archive_not_rebuildable"
  | "archive_pending";

/** Where the delta store reports what it did (metrics); every method is optional to call. */
export interface DeltaObserver {
  /** One storage decision for an eligible-or-not write in a compressed bucket. */
  decision(
    kind: "delta" | "passthrough" | "reference",
    originalBytes: number,
    storedBytes: number,
    reason: DecisionReason,
  ): void;
  encoded(seconds: number): void;
  decoded(seconds: number): void;
  referenceCache(hit: boolean): void;
  /** Archive streams a rebuild copied from its baseline archive (archive/stream-memo.ts). */
  streamsCopied?(count: number): void;
}

export interface DeltaContext {
  inner: Backend;
  observer?: DeltaObserver;
  /** xdelta3: the codec of deltas without a `codec` field, and the fallback of every encode. */
  codec: DeltaCodec;
  /** The codec choice (xdelta3, zstd when installed, zstd's memory budget). */
  codecs: CodecSet;
  pool: CodecPool;
  /** Local directory for spooled bodies, encoder output and rebuilt objects. */
  spoolDir: string;
  /** Baseline files (a zero-byte cache still hands out private, verified downloads). */
  referenceCache: ReferenceCache;
  /**
   * Verified rebuilt delta objects by sha256 (`rebuilt_cache_size_mb`; a zero-byte cache still
   * hands out private files, deleted after the read).
   */
  rebuiltCache: ReferenceCache;
  /** The predicted streams of archive baselines' derived forms (archive/stream-memo.ts). */
  streamMemos?: StreamMemos;
  /** Set when no codec can run: eligible writes go passthrough. */
  codecUnavailable?: string;
  /** Serializes baseline creation, encode and cleanup per `bucket/deltaspace`. */
  deltaspaceLocks: KeyLock;
  /**
   * Where a bucket really lives (e.g. `backend/real-name`), so two names routed to one bucket
   * share their deltaspace locks and cache entries. The bucket name itself when absent.
   */
  bucketIdentity?: (bucket: string) => string;
}

export function internalError(message: string, cause?: unknown): SvcError {
  return new SvcError("InternalError", message, {}, cause === undefined ? undefined : { cause });
}

/** The key of a deltaspace (its baseline folder) for its lock and its reference-cache entry. */
export function baselineCacheKey(
  ctx: Pick<DeltaContext, "bucketIdentity">,
  bucket: string,
  deltaspace: string,
): string {
  return `${ctx.bucketIdentity?.(bucket) ?? bucket}/${deltaspace}`;
}

export async function removeQuietly(path: string | undefined): Promise<void> {
  if (path !== undefined) await Deno.remove(path).catch(() => {});
}

/** The rebuilt-cache owner of a stored delta, for invalidation on overwrite and delete. */
export function rebuiltOwner(
  ctx: Pick<DeltaContext, "bucketIdentity">,
  bucket: string,
  storedName: string,
): string {
  return `${ctx.bucketIdentity?.(bucket) ?? bucket}/${storedName}`;
}

/** What a DeltaBackend is made of (delta-backend.ts). */
export interface DeltaBackendOptions {
  inner: Backend;
  /** xdelta3 (codec.ts). */
  codec: DeltaCodec;
  /** `zstd --patch-from` (zstd-codec.ts), when installed; chosen per bucket (`delta_codec`). */
  zstd?: DeltaCodec;
  /** The zstd memory budget in bytes (default: `SVC_ZSTD_MEMORY_MB`, codec-choice.ts). */
  zstdMemoryBytes?: number;
  pool: CodecPool;
  /** Local directory for spooled bodies and rebuilt objects; must exist. */
  spoolDir: string;
  /** Called once per operation: a config snapshot. */
  settings: () => DeltaSettings;
  /**
   * Baseline files; without one, every codec run downloads a private copy of its baseline into
   * the spool directory (a zero-byte cache).
   */
  referenceCache?: ReferenceCache;
  /**
   * Verified rebuilt objects (`rebuilt_cache_size_mb`): a repeat GET of a delta object streams
   * this file. Without one, every delta GET rebuilds into a private file in the spool directory.
   */
  rebuiltCache?: ReferenceCache;
  observer?: DeltaObserver;
  /**
   * Remembers which stored object holds a key (`metadata_cache_mb`): a GET opens it directly
   * instead of asking for both stored names first. Only a hint: the opened object's own
   * metadata is what is served, a vanished one falls back to the lookup, and HEAD never uses it.
   */
  metadataCache?: MetadataCache;
  /**
   * Why no codec can run (xdelta3 missing): eligible objects are then stored passthrough; deltas
   * already stored cannot be read (500) until the codec is back.
   */
  codecUnavailable?: string;
  /** See DeltaContext.bucketIdentity (the bucket router provides it). */
  bucketIdentity?: (bucket: string) => string;
  /** Inner listing page size while collecting a logical page; small values are for tests. */
  innerPageKeys?: number;
}
