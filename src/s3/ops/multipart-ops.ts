/**
 * Multipart operations: Create, UploadPart, UploadPartCopy, Complete, Abort, ListParts and
 * ListMultipartUploads.
 */
import { compareUtf8, SvcError } from "../../lib/mod.ts";
import type { MultipartService, ObjectService } from "../../objects/mod.ts";
import { readSmallBody } from "./bucket-ops.ts";
import { bareEtag } from "../conditionals.ts";
import { validateObjectKey } from "../names.ts";
import {
  clientMetadata,
  copySourceCheck,
  parseCopySource,
  writePrecondition,
} from "./object-ops.ts";
import { replayBodyCheck, uploadBody } from "../../body/mod.ts";
import { intParam, type S3Request, writeContextOf } from "../request.ts";
import type { BucketRequest, ObjectRequest } from "../routes/route-types.ts";
import type { KeyVisibility } from "../access.ts";
import {
  isoDate,
  OWNER,
  quoteEtag,
  setStorageDebugHeaders,
  urlEncodeKey,
  xmlResponse,
} from "../response.ts";
import { childrenNamed, childText, parseXml } from "../xml.ts";

export interface MultipartContext {
  objects: ObjectService;
  multipart: MultipartService;
}

function uploadIdOf(request: S3Request): string {
  return request.query.get("uploadId") ?? "";
}

/** `partNumber`, an integer in 1..10000; anything else (10001 included) is refused, not clamped. */
function partNumberOf(request: S3Request): number {
  const raw = request.query.get("partNumber") ?? "";
  const value = /^\d{1,5}$/.test(raw) ? Number(raw) : 0;
  if (value < 1 || value > 10000) {
    throw new SvcError(
      "InvalidArgument",
      "Part number must be an integer between 1 and 10000, inclusive",
      { ArgumentName: "partNumber", ArgumentValue: raw },
    );
  }
  return value;
}

export async function createMultipartUpload(
  ctx: MultipartContext,
  request: ObjectRequest,
): Promise<Response> {
  const key = request.key;
  validateObjectKey(key);
  const record = await ctx.multipart.create(request.bucket, key, clientMetadata(request.headers));
  return xmlResponse("InitiateMultipartUploadResult", {
    Bucket: request.bucket,
    Key: key,
    UploadId: record.uploadId,
  });
}

export async function uploadPart(ctx: MultipartContext, request: ObjectRequest): Promise<Response> {
  const partNumber = partNumberOf(request);
  const body = uploadBody(request);
  const part = await ctx.multipart.uploadPart(
    request.bucket,
    request.key,
    uploadIdOf(request),
    partNumber,
    body.stream,
    {
      contentLength: body.length,
      expectedMd5: body.expectedMd5,
      expectedSha256: body.expectedSha256,
      signal: request.signal,
      replayCheck: replayBodyCheck(request.replay?.compareBody),
    },
  );
  return new Response(null, { headers: { etag: quoteEtag(part.etag) } });
}

/** `bytes=a-b` of x-amz-copy-source-range, both ends required and within the source. */
function copySourceRange(header: string | null, size: number) {
  if (header === null) return undefined;
  const match = /^bytes=(\d+)-(\d+)$/.exec(header.trim());
  if (!match) {
    throw new SvcError(
      "InvalidArgument",
      `The x-amz-copy-source-range value must be of the form bytes=first-last, got "${header}"`,
    );
  }
  const start = Number(match[1]), end = Number(match[2]);
  if (start > end || end >= size) {
    throw new SvcError(
      "InvalidRange",
      `The requested range "${header}" is not satisfiable for a source of ${size} bytes`,
      {
        ActualObjectSize: String(size),
      },
    );
  }
  return { start, end };
}

export async function uploadPartCopy(
  ctx: MultipartContext,
  request: ObjectRequest,
  /** Throws (AccessDenied) when the principal may not read the source. */
  authorizeSource: (source: { bucket: string; key: string }) => void = () => {},
): Promise<Response> {
  const partNumber = partNumberOf(request);
  const uploadId = uploadIdOf(request);
  await ctx.multipart.upload(request.bucket, request.key, uploadId);
  const source = parseCopySource(request.headers.get("x-amz-copy-source")!);
  authorizeSource(source);
  const check = copySourceCheck(request.headers);
  const { info, body, range } = await ctx.objects.openPlanned(source.bucket, source.key, (info) => {
    check(info);
    return copySourceRange(request.headers.get("x-amz-copy-source-range"), info.meta.size);
  });
  const part = await ctx.multipart.uploadPart(
    request.bucket,
    request.key,
    uploadId,
    partNumber,
    body,
    { contentLength: range ? range.end - range.start + 1 : info.meta.size, signal: request.signal },
  );
  return xmlResponse("CopyPartResult", {
    LastModified: isoDate(part.lastModified),
    ETag: quoteEtag(part.etag),
  });
}

export function parseCompleteRequest(text: string) {
  const root = parseXml(text);
  const malformed = (why: string) =>
    new SvcError(
      "MalformedXML",
      `The XML you provided was not well-formed or did not validate against our published schema (${why})`,
    );
  if (root.name !== "CompleteMultipartUpload") throw malformed(`unexpected root <${root.name}>`);
  return childrenNamed(root, "Part").map((part) => {
    const number = childText(part, "PartNumber")?.trim() ?? "";
    const etag = childText(part, "ETag");
    if (!/^\d{1,5}$/.test(number) || etag === undefined) {
      throw malformed("a <Part> needs <PartNumber> and <ETag>");
    }
    return { partNumber: Number(number), etag: bareEtag(etag) };
  });
}

export async function completeMultipartUpload(
  ctx: MultipartContext,
  request: ObjectRequest,
): Promise<Response> {
  const bucket = request.bucket, key = request.key;
  const precondition = writePrecondition(request.headers);
  const parts = parseCompleteRequest(await readSmallBody(request, 4 << 20));
  const answer = await ctx.multipart.complete(
    bucket,
    key,
    uploadIdOf(request),
    parts,
    precondition,
    request.signal,
    writeContextOf(request, "complete_multipart"),
  );
  const headers = new Headers();
  if (answer.info) setStorageDebugHeaders(headers, answer.info);
  else headers.set("x-amz-storage-type", answer.storage);
  return xmlResponse("CompleteMultipartUploadResult", {
    Location: `/${bucket}/${key}`,
    Bucket: bucket,
    Key: key,
    ETag: quoteEtag(answer.etag),
  }, { headers });
}

export async function abortMultipartUpload(
  ctx: MultipartContext,
  request: ObjectRequest,
): Promise<Response> {
  await ctx.multipart.abort(request.bucket, request.key, uploadIdOf(request));
  return new Response(null, { status: 204 });
}

export async function listParts(ctx: MultipartContext, request: ObjectRequest): Promise<Response> {
  const marker = intParam(request.query, "part-number-marker", 0, 0, 10000);
  const maxParts = intParam(request.query, "max-parts", 1000, 1, 1000);
  const { record, parts } = await ctx.multipart.listParts(
    request.bucket,
    request.key,
    uploadIdOf(request),
  );
  const after = parts.filter((part) => part.partNumber > marker);
  const page = after.slice(0, maxParts);
  const truncated = after.length > page.length;
  return xmlResponse("ListPartsResult", {
    Bucket: record.bucket,
    Key: record.key,
    UploadId: record.uploadId,
    Initiator: OWNER,
    Owner: OWNER,
    StorageClass: "STANDARD",
    PartNumberMarker: marker,
    NextPartNumberMarker: page.length > 0 ? page[page.length - 1].partNumber : marker,
    MaxParts: maxParts,
    IsTruncated: truncated,
    Part: page.map((part) => ({
      PartNumber: part.partNumber,
      LastModified: isoDate(part.lastModified),
      ETag: quoteEtag(part.etag),
      Size: part.size,
    })),
  });
}

/** Is `key` one a listing with this visibility shows (undefined shows every key)? */
function shows(visibility: KeyVisibility | undefined, key: string): boolean {
  if (visibility === undefined) return true;
  if (!visibility.prefixes.some((prefix) => key.startsWith(prefix))) return false;
  return visibility.visible?.(key, "object") ?? true;
}

export async function listMultipartUploads(
  ctx: MultipartContext,
  request: BucketRequest,
  /** What the principal may see (IAM): uploads of keys it may not read are not listed. */
  visibility?: KeyVisibility,
): Promise<Response> {
  const query = request.query;
  const prefix = query.get("prefix") ?? "";
  const delimiter = query.get("delimiter") ?? "";
  const keyMarker = query.get("key-marker") ?? "";
  const uploadIdMarker = query.get("upload-id-marker") ?? "";
  const maxUploads = intParam(query, "max-uploads", 1000, 1, 1000);
  const encode = query.get("encoding-type") === "url" ? urlEncodeKey : (v: string) => v;

  const uploads = (await ctx.multipart.listUploads(request.bucket))
    // Filtered before paging and before common prefixes are built, so markers and prefixes
    // come from visible uploads only.
    .filter((u) => u.key.startsWith(prefix) && shows(visibility, u.key))
    .sort((a, b) => compareUtf8(a.key, b.key) || a.initiated - b.initiated);
  // Resume after (key-marker, upload-id-marker); without an upload-id-marker skip the whole key.
  let start = 0;
  if (keyMarker) {
    const markerIndex = uploadIdMarker
      ? uploads.findIndex((u) => u.key === keyMarker && u.uploadId === uploadIdMarker)
      : -1;
    start = markerIndex >= 0
      ? markerIndex + 1
      : uploads.findIndex((u) => compareUtf8(u.key, keyMarker) > 0);
    if (start < 0) start = uploads.length;
  }
  const entries: { upload?: typeof uploads[number]; prefix?: string }[] = [];
  const seenPrefixes = new Set<string>();
  let truncated = false;
  for (const upload of uploads.slice(start)) {
    let commonPrefix: string | undefined;
    if (delimiter) {
      const at = upload.key.indexOf(delimiter, prefix.length);
      if (at >= 0) commonPrefix = upload.key.slice(0, at + delimiter.length);
    }
    if (commonPrefix !== undefined && seenPrefixes.has(commonPrefix)) continue;
    // A Deny on `s3:prefix` may refuse to show a common prefix (KeyVisibility).
    if (commonPrefix !== undefined && visibility?.visible?.(commonPrefix, "prefix") === false) {
      seenPrefixes.add(commonPrefix);
      continue;
    }
    // A common prefix at or before the key marker was returned by an earlier page.
    if (commonPrefix !== undefined && keyMarker && compareUtf8(commonPrefix, keyMarker) <= 0) {
      continue;
    }
    if (entries.length >= maxUploads) {
      truncated = true;
      break;
    }
    if (commonPrefix !== undefined) {
      seenPrefixes.add(commonPrefix);
      entries.push({ prefix: commonPrefix });
    } else entries.push({ upload });
  }
  // Resume after the last entry of the page, upload or common prefix.
  const last = entries[entries.length - 1];
  const nextKeyMarker = last?.upload?.key ?? last?.prefix;
  return xmlResponse("ListMultipartUploadsResult", {
    Bucket: request.bucket,
    KeyMarker: encode(keyMarker),
    UploadIdMarker: uploadIdMarker,
    NextKeyMarker: truncated && nextKeyMarker !== undefined ? encode(nextKeyMarker) : undefined,
    NextUploadIdMarker: truncated ? last?.upload?.uploadId : undefined,
    Delimiter: delimiter ? encode(delimiter) : undefined,
    Prefix: encode(prefix),
    EncodingType: query.get("encoding-type") ?? undefined,
    MaxUploads: maxUploads,
    IsTruncated: truncated,
    Upload: entries.filter((e) => e.upload).map(({ upload }) => ({
      Key: encode(upload!.key),
      UploadId: upload!.uploadId,
      Initiator: OWNER,
      Owner: OWNER,
      StorageClass: "STANDARD",
      Initiated: isoDate(upload!.initiated),
    })),
    CommonPrefixes: entries.filter((e) => e.prefix !== undefined).map((e) => ({
      Prefix: encode(e.prefix!),
    })),
  });
}
