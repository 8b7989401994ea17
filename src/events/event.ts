/**
 * The object event: what one successful mutation of one key looks like in the outbox and in the
 * raw delivery format. Built from what the object service committed or removed plus the request's
 * write context (who, from where, which request).
 *
 * Kinds (the complete list this build emits):
 * - `ObjectCreated`: PutObject, POST form upload, CopyObject, CompleteMultipartUpload.
 * - `ObjectDeleted`: DeleteObject (one event per object a prefix delete removed) and each key of
 *   DeleteObjects that existed. A delete of a missing key changes nothing and records nothing.
 * - `LifecycleExpired`: a lifecycle rule deleted the object (expiry, retain-newest, or the source
 *   of a transition that moves: `lifecycle.action` says which). Its removal also records an
 *   `ObjectDeleted` with operation `lifecycle`.
 * - `LifecycleTransitioned`: a lifecycle rule copied the object to its destination (`bucket`/`key`
 *   are the source; the copy also records an `ObjectCreated` with operation `lifecycle`).
 * The lifecycle kinds carry `lifecycle` (built in jobs/lifecycle/lifecycle-events.ts).
 */
import type { ObjectInfo } from "../storage/mod.ts";
import type { WriteContext } from "../objects/mod.ts";

export const EVENT_KINDS = [
  "ObjectCreated",
  "ObjectDeleted",
  "LifecycleExpired",
  "LifecycleTransitioned",
] as const;
export type EventKind = typeof EVENT_KINDS[number];

/** The raw envelope's schema name; bumped when a field changes meaning. */
export const EVENT_SCHEMA = "svc.event.v1";

/**
 * One event as stored (the `payload` column) and delivered (`event` of the raw envelope, plus
 * `seq`). Field names are snake_case like the rest of the admin API.
 */
export interface ObjectEvent {
  /** Random UUID: the id receivers dedupe on (a retry carries the same id). */
  id: string;
  kind: EventKind;
  /** put | post | copy | complete_multipart | delete | delete_objects | replication; null when unknown. */
  operation: string | null;
  bucket: string;
  key: string;
  /** Logical bytes (of the new object; of the removed one for ObjectDeleted). */
  size: number;
  /** The S3 ETag without quotes. */
  etag: string;
  /** Hex SHA-256 of the logical bytes; null where svc does not know it. */
  sha256: string | null;
  /** How the bytes are stored: passthrough | delta | reference. */
  storage: string;
  content_type: string | null;
  /** The principal's name (`$bootstrap`, an IAM user); null for anonymous or open access. */
  principal: string | null;
  source_ip: string | null;
  request_id: string | null;
  /** When svc committed the change, ISO 8601 UTC with milliseconds. */
  time: string;
  /** The lifecycle kinds only: which rule did what. */
  lifecycle?: LifecycleDetail;
}

/** What a lifecycle event adds (SPEC Events 1). */
export interface LifecycleDetail {
  rule: string;
  /** `expire`, `retain-newest`, `transition-source-delete` (Expired); `transition` (Transitioned). */
  action: string;
  /** The object's created_at (its Last-Modified), ISO 8601. */
  object_created_at: string;
  /** Expired: the object's age when it went, in whole seconds. */
  expiration_age_seconds?: number;
  /** Expired: the rule's `expire_after` as written; null for retain-newest. */
  expire_after?: string | null;
  /** Logical bytes of the object (Expired: removed; Transitioned: copied). */
  content_length: number;
  /** Transitioned: where the copy went. */
  source_bucket?: string;
  source_key?: string;
  destination_bucket?: string;
  destination_key?: string;
  copied_bytes?: number;
}

/** A delivered event also carries its outbox position (monotonic; orders events of one key). */
export type DeliveredEvent = ObjectEvent & { seq: number };

function eventOf(
  kind: EventKind,
  bucket: string,
  info: ObjectInfo,
  context: WriteContext | undefined,
  at: number,
): ObjectEvent {
  const meta = info.meta;
  return {
    id: crypto.randomUUID(),
    kind,
    operation: context?.operation ?? null,
    bucket,
    key: info.key,
    size: meta.size,
    etag: meta.etag,
    sha256: meta.sha256 ? meta.sha256 : null,
    storage: info.debug?.decision ?? meta.storage,
    content_type: meta.contentType ?? null,
    principal: context?.principal ?? null,
    source_ip: context?.sourceIp ?? null,
    request_id: context?.requestId ?? null,
    time: new Date(at).toISOString(),
  };
}

export function createdEvent(
  bucket: string,
  info: ObjectInfo,
  context: WriteContext | undefined,
  at = Date.now(),
): ObjectEvent {
  return eventOf("ObjectCreated", bucket, info, context, at);
}

export function deletedEvent(
  bucket: string,
  info: ObjectInfo,
  context: WriteContext | undefined,
  at = Date.now(),
): ObjectEvent {
  return eventOf("ObjectDeleted", bucket, info, context, at);
}
