/**
 * Where each part of a multipart object lies, kept in its metadata (`ObjectMeta.partSizes`) so
 * GET/HEAD `?partNumber=N` can answer that part's bytes.
 *
 * Stored as a run-length list of sizes, `size*count` runs joined by commas (`8388608*639,1234`):
 * clients upload equal parts but for the last, so the list stays a few dozen characters even at
 * 10,000 parts, and it fits where a plain array would not (an ext4 extended attribute holds about
 * 4 KiB; an S3 backend's user metadata 2 KiB). It is a string, so the S3 backend carries it as an
 * `x-amz-meta-svc-x-part-sizes` header without knowing what it is. A layout longer than
 * MAX_LAYOUT_CHARS (sizes that vary part to part) is not recorded; GET by part number of such an
 * object answers NotImplemented.
 *
 * Part numbers on reads are positions (1 … partsCount) in the completed object: an upload
 * completed with parts 1, 3 and 7 reads back as parts 1, 2 and 3.
 */
import { SvcError } from "../../lib/mod.ts";
import { type ByteRange, decodePartSizes, type ObjectMeta } from "../../storage/mod.ts";

export { decodePartSizes, encodePartSizes, MAX_LAYOUT_CHARS } from "../../storage/mod.ts";

/**
 * The byte range of part `partNumber` (1-based) of an object, as S3 serves `?partNumber=N`:
 * - a multipart object: that part; InvalidPartNumber (416) past the last part;
 * - any other object is one part: partNumber=1 is the whole object, anything else
 *   InvalidPartNumber (what AWS does; an empty object's part 1 is the empty body, `undefined`).
 */
export function partRange(meta: ObjectMeta, partNumber: number): ByteRange | undefined {
  const count = meta.partsCount ?? 1;
  if (partNumber > count) {
    throw new SvcError("InvalidPartNumber", "The requested partnumber is not satisfiable", {
      PartNumberRequested: String(partNumber),
      ActualPartCount: String(count),
    });
  }
  if (meta.partsCount === undefined) {
    return meta.size === 0 ? undefined : { start: 0, end: meta.size - 1 };
  }
  const sizes = meta.partSizes === undefined ? null : decodePartSizes(meta.partSizes);
  if (sizes === null || sizes.length !== count) {
    throw new SvcError(
      "NotImplemented",
      `The part boundaries of this object were not recorded (it was completed by an older svc, ` +
        `or its ${count} parts vary in size too much to list), so part ${partNumber} cannot be read; ` +
        "read it with a Range instead",
    );
  }
  let start = 0;
  for (let i = 0; i < partNumber - 1; i++) start += sizes[i];
  const size = sizes[partNumber - 1];
  // An empty part (only the last one can be) has no byte range: an empty body.
  return size === 0 ? undefined : { start, end: start + size - 1 };
}
