/**
 * Bucket-level operations: ListBuckets, CreateBucket, DeleteBucket, HeadBucket and the stubs
 * (GetBucketLocation, GetBucketVersioning, GetBucketAcl).
 */
import { createHash } from "node:crypto";
import { SvcError } from "../../lib/mod.ts";
import { readBounded } from "../../http/mod.ts";
import type { MultipartService, ObjectService } from "../../objects/mod.ts";
import { validateBucketName } from "../names.ts";
import { uploadBody } from "../../body/mod.ts";
import { intParam, type S3Request } from "../request.ts";
import type { BucketRequest } from "../routes/route-types.ts";
import { isoDate, OWNER, ownerOnlyAcl, xmlResponse } from "../response.ts";
import { childText, malformedXml, parseXml, type XmlElement } from "../xml.ts";

export const REGION = "us-east-1";

/**
 * Reads a small request body (an XML document) up to `limit` bytes, checking its digests. Invalid
 * UTF-8 is MalformedXML: a key must never be read with U+FFFD in place of the bytes sent.
 */
export async function readSmallBody(request: S3Request, limit = 1 << 20): Promise<string> {
  const bytes = await readSmallBytes(request, limit);
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw malformedXml("body is not valid UTF-8");
  }
}

/** The bytes of a small request body up to `limit`, its digests checked. */
export async function readSmallBytes(request: S3Request, limit = 1 << 20): Promise<Uint8Array> {
  const { stream, expectedMd5, expectedSha256 } = uploadBody(request);
  const bytes = await readBounded(stream, limit);
  if (expectedMd5 !== undefined && createHash("md5").update(bytes).digest("hex") !== expectedMd5) {
    throw new SvcError("BadDigest", "The Content-MD5 you specified did not match what we received");
  }
  const sha256 = expectedSha256 && createHash("sha256").update(bytes).digest("hex");
  if (sha256 !== undefined && sha256 !== expectedSha256) {
    throw new SvcError(
      "XAmzContentSHA256Mismatch",
      "The provided 'x-amz-content-sha256' header does not match what was computed",
      { ClientComputedContentSHA256: expectedSha256!, S3ComputedContentSHA256: sha256 },
    );
  }
  return bytes;
}

function encodeToken(value: string): string {
  return btoa(String.fromCharCode(...new TextEncoder().encode(value)))
    .replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function decodeToken(token: string): string {
  try {
    const binary = atob(token.replace(/-/g, "+").replace(/_/g, "/"));
    return new TextDecoder("utf-8", { fatal: true }).decode(
      Uint8Array.from(binary, (c) => c.charCodeAt(0)),
    );
  } catch {
    throw new SvcError("InvalidArgument", "The continuation token provided is incorrect", {
      ArgumentName: "continuation-token",
    });
  }
}

/** Opaque continuation tokens: the last key or name returned, base64url-encoded. */
export const continuationToken = { encode: encodeToken, decode: decodeToken };

export async function listBuckets(
  objects: ObjectService,
  request: S3Request,
  /** Drops buckets the principal may not see (IAM); undefined shows all. */
  visible?: (bucket: string) => boolean,
): Promise<Response> {
  const prefix = request.query.get("prefix") ?? "";
  const limit = request.query.has("max-buckets")
    ? intParam(request.query, "max-buckets", 10000, 1, 10000)
    : Infinity;
  const token = request.query.get("continuation-token");
  const after = token ? decodeToken(token) : "";
  const all = (await objects.listBuckets())
    .filter((b) => b.name.startsWith(prefix) && b.name > after && (visible?.(b.name) ?? true))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const page = all.slice(0, limit);
  const truncated = all.length > page.length;
  return xmlResponse("ListAllMyBucketsResult", {
    Owner: OWNER,
    Buckets: {
      Bucket: page.map((b) => ({
        Name: b.name,
        CreationDate: isoDate(b.created.getTime()),
        BucketRegion: REGION,
      })),
    },
    ContinuationToken: truncated ? encodeToken(page[page.length - 1].name) : undefined,
    Prefix: request.query.has("prefix") ? prefix : undefined,
  });
}

export async function createBucket(
  objects: ObjectService,
  request: BucketRequest,
): Promise<Response> {
  const bucket = request.bucket;
  validateBucketName(bucket);
  const text = await readSmallBody(request, 64 * 1024);
  if (text.trim() !== "") checkBucketConfiguration(parseXml(text));
  await objects.createBucket(bucket);
  return new Response(null, { headers: { location: `/${bucket}` } });
}

/**
 * CreateBucketConfiguration: only `LocationConstraint` is understood (anything else is
 * MalformedXML), and it must name svc's region. svc answers as one region, us-east-1; a client
 * configured for it may still send that name, or an empty constraint (rclone, older SDKs), so
 * both are accepted, although AWS's us-east-1 endpoint refuses an explicit "us-east-1". Any
 * other region is IllegalLocationConstraintException: the bucket would not be where the client
 * asked.
 */
function checkBucketConfiguration(root: XmlElement): void {
  if (root.name !== "CreateBucketConfiguration") {
    throw malformedXml(`root element is <${root.name}>, not <CreateBucketConfiguration>`);
  }
  const unknown = root.children.find((element) => element.name !== "LocationConstraint");
  if (unknown) {
    throw malformedXml(`<${unknown.name}> is not supported in CreateBucketConfiguration`);
  }
  const constraint = (childText(root, "LocationConstraint") ?? "").trim();
  if (constraint !== "" && constraint !== REGION) {
    throw new SvcError(
      "IllegalLocationConstraintException",
      `The ${constraint} location constraint is incompatible for the region specific endpoint this request was sent to (svc's region is ${REGION})`,
      { LocationConstraint: constraint },
    );
  }
}

export async function deleteBucket(
  objects: ObjectService,
  multipart: MultipartService,
  request: BucketRequest,
): Promise<Response> {
  const bucket = request.bucket;
  await objects.headBucket(bucket);
  // The bucket and its uploads go together while no Complete runs: one that starts meanwhile
  // waits, then finds neither (never a half-purged upload).
  await multipart.whileBucketQuiet(bucket, async () => {
    await objects.deleteBucket(bucket);
    await multipart.purgeBucket(bucket);
  });
  return new Response(null, { status: 204 });
}

export async function headBucket(
  objects: ObjectService,
  request: BucketRequest,
): Promise<Response> {
  await objects.headBucket(request.bucket);
  return new Response(null, { headers: { "x-amz-bucket-region": REGION } });
}

export async function getBucketLocation(
  objects: ObjectService,
  request: BucketRequest,
): Promise<Response> {
  await objects.headBucket(request.bucket);
  return xmlResponse("LocationConstraint", {});
}

export async function getBucketVersioning(
  objects: ObjectService,
  request: BucketRequest,
): Promise<Response> {
  await objects.headBucket(request.bucket);
  return xmlResponse("VersioningConfiguration", {});
}

export async function getAcl(objects: ObjectService, request: BucketRequest): Promise<Response> {
  if (request.key === null) await objects.headBucket(request.bucket);
  else await objects.head(request.bucket, request.key);
  return ownerOnlyAcl();
}
