/**
 * Upload ids and part numbers as clients send them: an id is checked against the shape this
 * store generates before any path is built from it, so a client-supplied id can never point
 * outside the multipart store.
 */
import { SvcError } from "../../lib/mod.ts";

export const MAX_PART_NUMBER = 10_000;
// base64url of 24 random bytes: 32 characters, no padding, never "." or "/".
const UPLOAD_ID_SHAPE = /^[A-Za-z0-9_-]{32}$/;

/** A new unguessable, URL-safe upload id. */
export function newUploadId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(24));
  return btoa(String.fromCharCode(...bytes)).replaceAll("+", "-").replaceAll("/", "_");
}

/** Whether a value has the shape of an id this store generates. */
export function isUploadId(value: string): boolean {
  return UPLOAD_ID_SHAPE.test(value);
}

/** Throws InvalidArgument unless the part number is an integer in 1..10000. */
export function validatePartNumber(partNumber: number): void {
  if (!Number.isInteger(partNumber) || partNumber < 1 || partNumber > MAX_PART_NUMBER) {
    throw new SvcError(
      "InvalidArgument",
      `Part number must be an integer between 1 and 10000, inclusive; got "${partNumber}".`,
      { ArgumentName: "partNumber", ArgumentValue: String(partNumber) },
    );
  }
}
