/**
 * What a CompleteMultipartUpload checks and answers: the part list against the stored parts,
 * the multipart ETag, and the errors it shares with the multipart service.
 */
import { createHash } from "node:crypto";
import { SvcError } from "../../lib/mod.ts";
import type { ObjectInfo, StorageKind } from "../../storage/mod.ts";
import type { PartInfo } from "./multipart-store.ts";

export const MIN_PART_SIZE = 5 * 1024 * 1024;

export interface CompletedPart {
  partNumber: number;
  /** ETag as the client sent it, quotes stripped. */
  etag: string;
}

/** What a Complete answers: the first one also has the committed object's info. */
export interface CompletionAnswer {
  etag: string;
  storage: StorageKind;
  info?: ObjectInfo;
  /** Answered from the record of an earlier Complete. */
  repeated?: boolean;
}

export function noSuchUpload(uploadId: string): SvcError {
  return new SvcError(
    "NoSuchUpload",
    "The specified multipart upload does not exist. The upload ID may be invalid, or the upload may have been aborted or completed.",
    { UploadId: uploadId },
  );
}

/**
 * A part file that is gone while the upload completes: the upload was aborted or its bucket
 * deleted meanwhile (the streaming path answers the same).
 */
export function vanished(err: unknown, uploadId: string): unknown {
  return err instanceof Deno.errors.NotFound ? noSuchUpload(uploadId) : err;
}

/** Checks the client's part list against the stored parts; returns the stored parts in order. */
export function validateCompletion(
  requested: CompletedPart[],
  stored: Map<number, PartInfo>,
): PartInfo[] {
  if (requested.length === 0) {
    throw new SvcError(
      "MalformedXML",
      "The XML you provided was not well-formed or did not validate against our published schema (no parts)",
    );
  }
  const parts: PartInfo[] = [];
  let previous = 0;
  for (const { partNumber, etag } of requested) {
    if (partNumber <= previous) {
      throw new SvcError(
        "InvalidPartOrder",
        "The list of parts was not in ascending order. Parts must be ordered by part number.",
      );
    }
    previous = partNumber;
    const part = stored.get(partNumber);
    if (part === undefined || part.etag !== etag) {
      throw new SvcError(
        "InvalidPart",
        `One or more of the specified parts could not be found (part ${partNumber}, ETag "${etag}"). The part may not have been uploaded, or the specified entity tag may not match the part's entity tag.`,
        { PartNumber: String(partNumber), ETag: etag },
      );
    }
    parts.push(part);
  }
  parts.slice(0, -1).forEach((part) => {
    if (part.size < MIN_PART_SIZE) {
      throw new SvcError(
        "EntityTooSmall",
        "Your proposed upload is smaller than the minimum allowed size",
        {
          ProposedSize: String(part.size),
          MinSizeAllowed: String(MIN_PART_SIZE),
          PartNumber: String(part.partNumber),
          ETag: part.etag,
        },
      );
    }
  });
  return parts;
}

/** `md5(concatenated binary part md5s)-N`, the ETag S3 gives multipart objects. */
export function multipartEtag(parts: PartInfo[]): string {
  const hash = createHash("md5");
  for (const part of parts) {
    hash.update(Uint8Array.from(part.etag.match(/../g)!, (h) => parseInt(h, 16)));
  }
  return `${hash.digest("hex")}-${parts.length}`;
}

/**
 * The completed object's total against `max_passthrough_object_size`, checked at Complete (as S3
 * does) because only then is it known which stored parts make the object. Each part is bounded
 * by `max_object_size` when it arrives; the total is not.
 */
export function checkUploadTotal(parts: PartInfo[], max: number): number {
  const total = parts.reduce((sum, part) => sum + part.size, 0);
  if (total > max) {
    throw new SvcError(
      "EntityTooLarge",
      `Your proposed upload of ${total} bytes exceeds the maximum allowed object size of ${max} ` +
        "bytes (max_passthrough_object_size)",
      { ProposedSize: String(total), MaxSizeAllowed: String(max) },
    );
  }
  return total;
}
