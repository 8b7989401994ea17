/**
 * The verdicts on a body once its digest is complete, before anything becomes visible: a PUT's
 * body against what the client declared, a copy's re-read bytes against the source's record.
 * Each returns how the ETag is formed (see CommitPlan) or throws the S3 error that refuses it.
 */
import type { BodyDigest } from "../body/mod.ts";
import { SvcError } from "../lib/mod.ts";
import type { ObjectInfo } from "../storage/mod.ts";
import type { CommitPlan, PutOptions } from "./write-options.ts";

/** A PUT body against its Content-Length, Content-MD5 and x-amz-content-sha256. */
export function verifyUpload(
  digest: BodyDigest,
  declared: Pick<PutOptions, "contentLength" | "expectedMd5" | "expectedSha256">,
): CommitPlan {
  if (declared.contentLength !== undefined && digest.bytes !== declared.contentLength) {
    throw new SvcError(
      "IncompleteBody",
      `You did not provide the number of bytes specified by the Content-Length HTTP header (${declared.contentLength} declared, ${digest.bytes} received)`,
    );
  }
  const { md5, sha256 } = digest.result();
  if (declared.expectedMd5 !== undefined && declared.expectedMd5 !== md5) {
    throw new SvcError(
      "BadDigest",
      "The Content-MD5 you specified did not match what we received",
    );
  }
  if (declared.expectedSha256 !== undefined && declared.expectedSha256 !== sha256) {
    throw new SvcError(
      "XAmzContentSHA256Mismatch",
      "The provided 'x-amz-content-sha256' header does not match what was computed",
      {
        ClientComputedContentSHA256: declared.expectedSha256,
        S3ComputedContentSHA256: sha256,
      },
    );
  }
  return {};
}

/**
 * A copy's bytes against the source object they were read from. The copy re-reads stored bytes:
 * a different hash means the source is damaged. An object another client put straight on an S3
 * backend has no sha256 recorded: its md5 (a plain ETag) is checked then, or only its size when
 * it has neither.
 */
export function verifyCopy(digest: BodyDigest, sourceKey: string, source: ObjectInfo): CommitPlan {
  const { sha256, md5 } = digest.result();
  const expected = source.meta;
  const damaged = digest.bytes !== expected.size ||
    (expected.sha256 ? sha256 !== expected.sha256 : expected.md5 !== "" && md5 !== expected.md5);
  if (damaged) {
    throw new SvcError("InternalError", `Source object "${sourceKey}" failed verification`);
  }
  // A copy keeps a multipart ETag, so HEAD, GET and LIST of the copy agree with the source.
  return expected.partsCount !== undefined
    ? { etag: expected.etag, partsCount: expected.partsCount, partSizes: expected.partSizes }
    : {};
}
