/**
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
import type { PartInfo } from "./multipart-store.ts";
import { isUploadId } from "./upload-ids.ts";

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
