/**
 * The HTTP `Range` header as S3 answers it: exactly one byte range or none at all.
 *
 * Behaviour confirmed against public reports of real S3 responses:
 * - Multiple ranges (`bytes=0-1,3-4`) are not served; S3 ignores the header and answers 200 with
 *   the whole object (no Content-Range). The same goes for unknown units (`items=0-1`), garbage,
 *   and a last byte before the first (`bytes=5-2`, RFC 9110 says such a spec is invalid): the
 *   header is ignored, never a 400 or 416.
 * - A range that starts inside the object but ends past it is clamped (206). A suffix longer than
 *   the object selects the whole object (206 covering every byte).
 * - A first byte at or past the end is 416 InvalidRange, so every range with a first byte is
 *   unsatisfiable on an empty object.
 * - A suffix range (`bytes=-n`) on an empty object is answered 200 with an empty body, not 416:
 *   tail readers (Trino, object_store) rely on that. We model it as "no range".
 */

import { SvcError } from "../lib/mod.ts";
import type { ByteRange } from "../storage/mod.ts";

// Whitespace is tolerated around the spec and after "=" because RFC 9110 list syntax allows
// optional whitespace there; a comma anywhere means several ranges and fails the match.
const SINGLE_RANGE = /^\s*bytes\s*=\s*(\d*)-(\d*)\s*$/i;

/**
 * Resolves a Range header against an object of `size` bytes. Returns null when the whole object
 * must be sent (no header, or one S3 ignores); throws InvalidRange (416) when unsatisfiable.
 */
export function parseRange(header: string | null | undefined, size: number): ByteRange | null {
  if (header === null || header === undefined) return null;
  const match = SINGLE_RANGE.exec(header);
  if (match === null) return null;
  const [, firstText, lastText] = match;
  if (firstText === "" && lastText === "") return null;

  if (firstText === "") {
    // Digit strings beyond 2^53 lose precision, but only their order against `size` matters.
    const suffix = Number(lastText);
    if (size === 0) return null;
    if (suffix === 0) throw unsatisfiable(header, size);
    return { start: Math.max(0, size - suffix), end: size - 1 };
  }

  const start = Number(firstText);
  const last = lastText === "" ? Infinity : Number(lastText);
  if (last < start) return null;
  if (start >= size) throw unsatisfiable(header, size);
  return { start, end: Math.min(last, size - 1) };
}

/** The Content-Range value of a 206 response: `bytes a-b/size`. */
export function contentRange(range: ByteRange, size: number): string {
  return `bytes ${range.start}-${range.end}/${size}`;
}

/** The Content-Range value of a 416 response, which tells the client the real size. */
export function unsatisfiedContentRange(size: number): string {
  return `bytes */${size}`;
}

/** Bytes a range covers, for Content-Length. */
export function rangeLength(range: ByteRange): number {
  return range.end - range.start + 1;
}

function unsatisfiable(header: string, size: number): SvcError {
  return new SvcError(
    "InvalidRange",
    `The requested range "${header.trim()}" is not satisfiable for an object of ${size} bytes.`,
    { RangeRequested: header.trim(), ActualObjectSize: String(size) },
  );
}
