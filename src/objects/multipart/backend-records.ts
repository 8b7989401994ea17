/**
 * svc's own small records in an S3 backend bucket, sent with the backend's raw client (below the
 * storage layers): JSON documents (upload records, completion claims, completed-upload records),
 * zero-byte index keys whose names carry what they describe, listings of key names and deletes.
 * Only part bytes go through the storage stack (sealed as objects are); these records hold what
 * a backend's object keys and metadata hold anyway (keys, ETags, sizes, client metadata).
 *
 * Creation is conditional (`If-None-Match: *`): of two instances writing one record exactly one
 * wins, the other learns it lost (false). Deletes are idempotent: a key already gone is fine.
 */
import { SvcError } from "../../lib/mod.ts";
import type { PartInfo } from "./multipart-store.ts";
import { isUploadId } from "./upload-ids.ts";
import {
  BackendError,
  parseListObjects,
  type S3Client,
  svcErrorFromBackend,
} from "../../storage/mod.ts";

/*
 * The keys of backend-resident multipart state inside a bucket, all under `.svc/multipart/`
 * (hidden from clients by internal-keys-guard.ts):
 *
 *   .svc/multipart/<uploadId>/upload.json            the UploadRecord (created conditionally)
 *   .svc/multipart/<uploadId>/claim                  who completes (or sweeps) it, see claim()
 *   .svc/multipart/<uploadId>/p<nnnnn>.<stamp>       one stored version of part n: its bytes,
 *                                                    written through the storage stack (sealed
 *                                                    and compressed as objects are)
 *   .svc/multipart/<uploadId>/i<nnnnn>.<stamp>.<size>.<md5>
 *                                                    its index: empty, written after the bytes,
 *                                                    so a listing alone tells the parts
 *   .svc/multipart/completed/<uploadId>.json         record of a completed upload
 *
 * A part's bytes cannot be named by their md5 and size (the key is chosen before the body is
 * read), hence the index key. `stamp` is `<epoch ms, 13 digits>-<8 hex>`: string order is time
 * order, so of two versions of a part the later stamp wins and the earlier is removed.
 * Upload ids are checked against their generated shape before a key is built (upload-ids.ts).
 */
export const INTERNAL_PREFIX = ".svc/multipart/";
export const COMPLETED_PREFIX = `${INTERNAL_PREFIX}completed/`;
const INDEX_SHAPE = /^i(\d{5})\.(\d{13}-[0-9a-f]{8})\.(\d+)\.([0-9a-f]{32})$/;

/** `.svc/multipart/<uploadId>/`; the id must have been checked with isUploadId. */
export function uploadPrefix(uploadId: string): string {
  if (!isUploadId(uploadId)) throw new RangeError(`Upload id "${uploadId}" is malformed`);
  return `${INTERNAL_PREFIX}${uploadId}/`;
}

export const recordKey = (uploadId: string) => `${uploadPrefix(uploadId)}upload.json`;
export const claimKey = (uploadId: string) => `${uploadPrefix(uploadId)}claim`;
export const completedKey = (uploadId: string) => `${COMPLETED_PREFIX}${uploadId}.json`;

/** A new stamp for a part version written now. */
export function newStamp(now = Date.now()): string {
  const random = crypto.getRandomValues(new Uint8Array(4));
  const hex = Array.from(random, (b) => b.toString(16).padStart(2, "0")).join("");
  return `${String(now).padStart(13, "0")}-${hex}`;
}

const number5 = (partNumber: number) => String(partNumber).padStart(5, "0");

export function dataKey(uploadId: string, partNumber: number, stamp: string): string {
  return `${uploadPrefix(uploadId)}p${number5(partNumber)}.${stamp}`;
}

export function indexKey(uploadId: string, part: PartInfo & { stored: string }): string {
  return `${uploadPrefix(uploadId)}i${
    number5(part.partNumber)
  }.${part.stored}.${part.size}.${part.etag}`;
}

/** The part an index key names (`name` is the key's last segment); null for any other name. */
export function parseIndex(name: string): (PartInfo & { stored: string }) | null {
  const match = INDEX_SHAPE.exec(name);
  if (match === null) return null;
  return {
    partNumber: Number(match[1]),
    stored: match[2],
    size: Number(match[3]),
    etag: match[4],
    lastModified: Number(match[2].slice(0, 13)),
  };
}

/** The upload id a key under INTERNAL_PREFIX belongs to; null for completed records. */
export function uploadIdOf(key: string): string | null {
  const id = key.slice(INTERNAL_PREFIX.length).split("/", 1)[0];
  return isUploadId(id) ? id : null;
}

/** The raw client of the backend a bucket lives on, and the bucket's name there. */
export interface BackendBucket {
  client: S3Client;
  /** The bucket name on the backend (an alias resolved). */
  real: string;
  /** The name the client uses: errors speak of it. */
  bucket: string;
  /** Sent with every write (the backend's server-side encryption settings). */
  writeHeaders?: Record<string, string>;
}

export interface ListedKey {
  key: string;
  size: number;
  /** Epoch milliseconds, whole seconds on most stores. */
  lastModified: number;
}

const preconditionFailed = (err: unknown) =>
  err instanceof BackendError && (err.status === 412 || err.status === 409);
const absent = (err: unknown) =>
  err instanceof BackendError && err.status === 404 && err.code !== "NoSuchBucket";

/** A JSON record with its ETag (for a conditional replacement); null when absent. */
export async function readRecord<T>(
  at: BackendBucket,
  key: string,
): Promise<{ value: T; etag: string } | null> {
  try {
    const response = await at.client.send({
      method: "GET",
      bucket: at.real,
      key,
      idempotent: true,
    });
    let value: T;
    try {
      value = JSON.parse(response.text) as T;
    } catch {
      throw new SvcError("InternalError", `Multipart record "${key}" is corrupt`);
    }
    return { value, etag: response.headers.get("etag") ?? "" };
  } catch (err) {
    if (absent(err)) return null;
    throw fromBackend(err, at);
  }
}

/**
 * Writes a JSON record (or an empty body, for index keys). `onlyIf`: `"absent"` creates it only
 * when no such key exists, an ETag replaces only that version. false when the condition failed.
 */
export async function writeRecord(
  at: BackendBucket,
  key: string,
  value: unknown,
  onlyIf?: "absent" | { etag: string },
): Promise<boolean> {
  const condition: Record<string, string> = onlyIf === undefined
    ? {}
    : onlyIf === "absent"
    ? { "if-none-match": "*" }
    : { "if-match": onlyIf.etag };
  try {
    await at.client.send({
      method: "PUT",
      bucket: at.real,
      key,
      headers: { "content-type": "application/json", ...at.writeHeaders, ...condition },
      body: value === undefined ? "" : JSON.stringify(value),
      // Sending a conditional create again is harmless: at worst it fails its condition, and
      // the caller then reads what is there.
      idempotent: true,
    });
    return true;
  } catch (err) {
    if (onlyIf !== undefined && preconditionFailed(err)) return false;
    throw fromBackend(err, at);
  }
}

/** Removes keys; ones already gone (another instance removed them) are no error. */
export async function deleteKeys(at: BackendBucket, keys: readonly string[]): Promise<void> {
  const queue = [...keys];
  const worker = async () => {
    for (let key = queue.shift(); key !== undefined; key = queue.shift()) {
      try {
        await at.client.send({ method: "DELETE", bucket: at.real, key, idempotent: true });
      } catch (err) {
        if (!absent(err)) throw fromBackend(err, at);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(8, queue.length) }, worker));
}

/**
 * Every key under `prefix` (with `delimiter`, the common prefixes too), following continuation
 * tokens. Names and sizes come from the listing alone: nothing is HEADed.
 */
export async function listKeys(
  at: BackendBucket,
  prefix: string,
  delimiter?: string,
): Promise<{ keys: ListedKey[]; prefixes: string[] }> {
  const keys: ListedKey[] = [];
  const prefixes: string[] = [];
  let startAfter: string | undefined;
  for (;;) {
    let text: string;
    try {
      text = (await at.client.send({
        method: "GET",
        bucket: at.real,
        query: {
          "list-type": "2",
          delimiter,
          "encoding-type": "url",
          "max-keys": "1000",
          prefix,
          "start-after": startAfter,
        },
        idempotent: true,
      })).text;
    } catch (err) {
      throw fromBackend(err, at);
    }
    const page = parseListObjects(text);
    keys.push(...page.objects.map(({ key, size, lastModified }) => ({ key, size, lastModified })));
    prefixes.push(...page.commonPrefixes);
    const last = [...page.objects.map((o) => o.key), ...page.commonPrefixes].sort().at(-1);
    if (!page.isTruncated || last === undefined) return { keys, prefixes };
    startAfter = last;
  }
}

function fromBackend(err: unknown, at: BackendBucket): SvcError {
  return svcErrorFromBackend(err, at.bucket);
}
