/**
 * Single-object operations: GetObject, HeadObject, PutObject, CopyObject, DeleteObject.
 */
import { SvcError } from "../../lib/mod.ts";
import {
  type ClientMetadata,
  type ObjectService,
  partRange,
  type WritePrecondition,
} from "../../objects/mod.ts";
import {
  type ByteRange,
  type ObjectInfo,
  STORED_HEADERS,
  type StoredHeader,
} from "../../storage/mod.ts";
import {
  assertCopySourceConditions,
  assertReadConditions,
  copySourceConditionHeaders,
  evaluateWriteConditions,
  readConditionHeaders,
  validateWriteConditionHeaders,
  writeConditionHeaders,
} from "../conditionals.ts";
import { parseUserMetadata, validateObjectKey } from "../names.ts";
import { contentRange, parseRange } from "../range.ts";
import { replayBodyCheck, uploadBody } from "../../body/mod.ts";
import { type S3Request, writeContextOf } from "../request.ts";
import type { ObjectRequest } from "../routes/route-types.ts";
import { tagCount, taggingHeader } from "../tagging.ts";
import { deleteObjectIfMatch } from "./conditional-delete.ts";
import {
  applyResponseOverrides,
  httpDate,
  isoDate,
  objectHeaders,
  quoteEtag,
  setStorageDebugHeaders,
  xmlResponse,
} from "../response.ts";

/** Object metadata a client sends with PutObject, CreateMultipartUpload or a REPLACE copy. */
export function clientMetadata(headers: Headers): ClientMetadata {
  const stored: Partial<Record<StoredHeader, string>> = {};
  for (const name of STORED_HEADERS) {
    const value = headers.get(name);
    // aws-chunked is transfer framing, not a property of the object.
    if (name === "content-encoding" && value !== null) {
      const kept = value.split(",").map((v) => v.trim()).filter((v) => v && v !== "aws-chunked");
      if (kept.length > 0) stored[name] = kept.join(", ");
      continue;
    }
    if (value !== null) stored[name] = value;
  }
  const tags = taggingHeader(headers);
  return {
    contentType: headers.get("content-type") ?? undefined,
    userMeta: parseUserMetadata(headers),
    headers: stored,
    ...(tags ? { tags } : {}),
  };
}

/** `x-amz-tagging-directive` of a copy: the tags to give the copy, undefined to keep the source's. */
export function copyTags(headers: Headers): Record<string, string> | undefined {
  const directive = (headers.get("x-amz-tagging-directive") ?? "COPY").toUpperCase();
  if (directive !== "COPY" && directive !== "REPLACE") {
    throw new SvcError("InvalidArgument", `Unknown tagging directive "${directive}"`, {
      ArgumentName: "x-amz-tagging-directive",
      ArgumentValue: directive,
    });
  }
  return directive === "REPLACE" ? taggingHeader(headers) ?? {} : undefined;
}

/** If-Match / If-None-Match on a write, checked again under the key lock at commit. */
export function writePrecondition(headers: Headers): WritePrecondition | undefined {
  const conditions = writeConditionHeaders(headers);
  if (conditions.ifMatch === null && conditions.ifNoneMatch === null) return undefined;
  // Refuse unsupported shapes before the body is read.
  validateWriteConditionHeaders(conditions);
  return (existing) =>
    evaluateWriteConditions(conditions, existing ? { etag: existing.meta.etag } : null);
}

export async function getObject(
  objects: ObjectService,
  request: ObjectRequest,
  headOnly: boolean,
): Promise<Response> {
  const bucket = request.bucket, key = request.key;
  const conditions = readConditionHeaders(request.headers);
  const partNumber = readPartNumber(request);
  let judged: ObjectInfo | undefined;
  // Conditionals and the range are judged on the version that is then opened.
  const plan = (info: ObjectInfo) => {
    judged = info;
    assertReadConditions(conditions, info.meta);
    if (partNumber !== undefined) return partRange(info.meta, partNumber);
    return parseRange(request.headers.get("range"), info.meta.size) ?? undefined;
  };
  let opened: {
    info: ObjectInfo;
    body: ReadableStream<Uint8Array> | null;
    bytes?: Uint8Array<ArrayBuffer>;
    range?: ByteRange;
  };
  try {
    if (headOnly) {
      const info = await objects.head(bucket, key);
      opened = { info, body: null, range: plan(info) };
    } else {
      opened = await objects.openPlanned(bucket, key, plan);
    }
  } catch (err) {
    if (err instanceof SvcError && err.code === "NotModified" && judged) {
      return new Response(null, {
        status: 304,
        headers: {
          etag: quoteEtag(judged.meta.etag),
          "last-modified": httpDate(judged.meta.lastModified),
        },
      });
    }
    throw err;
  }
  const { info, body, bytes, range } = opened;
  const size = info.meta.size;
  const headers = objectHeaders(info);
  if (tagCount(info.meta.tags) > 0) {
    headers.set("x-amz-tagging-count", String(tagCount(info.meta.tags)));
  }
  applyResponseOverrides(headers, request.query);
  if (range) headers.set("content-range", contentRange(range, size));
  headers.set("content-length", String(range ? range.end - range.start + 1 : size));
  // A small body already read leaves with the headers (see ObjectBody.bytes).
  return new Response(bytes ?? body, { status: range ? 206 : 200, headers });
}

/**
 * `?partNumber=N` of GET/HEAD: an integer in 1..10000, never together with a Range header (both
 * as AWS answers them).
 */
function readPartNumber(request: S3Request): number | undefined {
  const raw = request.query.get("partNumber");
  if (raw === null) return undefined;
  const value = /^\d{1,5}$/.test(raw) ? Number(raw) : 0;
  if (value < 1 || value > 10000) {
    throw new SvcError(
      "InvalidArgument",
      `Part number must be an integer between 1 and 10000, inclusive; got "${raw}"`,
      { ArgumentName: "partNumber", ArgumentValue: raw },
    );
  }
  if (request.headers.has("range")) {
    throw new SvcError(
      "InvalidRequest",
      "Cannot specify both Range header and partNumber query parameter",
    );
  }
  return value;
}

export async function putObject(objects: ObjectService, request: ObjectRequest): Promise<Response> {
  const key = request.key;
  validateObjectKey(key);
  const body = uploadBody(request);
  objects.checkDeclaredSize(body.length);
  const info = await objects.put(request.bucket, key, body.stream, {
    metadata: clientMetadata(request.headers),
    contentLength: body.length,
    expectedMd5: body.expectedMd5,
    expectedSha256: body.expectedSha256,
    precondition: writePrecondition(request.headers),
    signal: request.signal,
    replayCheck: replayBodyCheck(request.replay?.compareBody),
    context: writeContextOf(request, "put"),
  });
  const headers = new Headers({ etag: quoteEtag(info.meta.etag) });
  setStorageDebugHeaders(headers, info);
  return new Response(null, { headers });
}

/** Parses `x-amz-copy-source`: `bucket/key` or `/bucket/key`, URL-encoded, optional `?versionId`. */
export function parseCopySource(value: string): { bucket: string; key: string } {
  let source = value.trim();
  const question = source.indexOf("?");
  if (question >= 0) {
    const versionId = new URLSearchParams(source.slice(question + 1)).get("versionId");
    if (versionId !== null && versionId !== "null") {
      throw new SvcError(
        "InvalidArgument",
        `Object versions are not supported (versionId "${versionId}")`,
      );
    }
    source = source.slice(0, question);
  }
  let decoded: string;
  try {
    decoded = decodeURIComponent(source).replace(/^\/+/, "");
  } catch {
    throw new SvcError("InvalidArgument", `Invalid copy source "${value}"`);
  }
  const slash = decoded.indexOf("/");
  if (slash <= 0 || slash === decoded.length - 1) {
    throw new SvcError(
      "InvalidArgument",
      `Copy Source must mention the source bucket and key: sourcebucket/sourcekey, got "${value}"`,
    );
  }
  return { bucket: decoded.slice(0, slash), key: decoded.slice(slash + 1) };
}

/** x-amz-copy-source-if-* checks, all answered 412 on failure. */
export function copySourceCheck(headers: Headers): (source: ObjectInfo) => void {
  const conditions = copySourceConditionHeaders(headers);
  return (source) => assertCopySourceConditions(conditions, source.meta);
}

export async function copyObject(
  objects: ObjectService,
  request: ObjectRequest,
  /** Throws (AccessDenied) when the principal may not read the source. */
  authorizeSource: (source: { bucket: string; key: string }) => void = () => {},
): Promise<Response> {
  const key = request.key;
  validateObjectKey(key);
  const source = parseCopySource(request.headers.get("x-amz-copy-source")!);
  authorizeSource(source);
  const directive = (request.headers.get("x-amz-metadata-directive") ?? "COPY").toUpperCase();
  if (directive !== "COPY" && directive !== "REPLACE") {
    throw new SvcError("InvalidArgument", `Unknown metadata directive "${directive}"`, {
      ArgumentName: "x-amz-metadata-directive",
    });
  }
  const tags = copyTags(request.headers);
  const info = await objects.copy(source, { bucket: request.bucket, key }, {
    metadata: directive === "REPLACE" ? clientMetadata(request.headers) : null,
    tags,
    sourceCheck: copySourceCheck(request.headers),
    precondition: writePrecondition(request.headers),
    signal: request.signal,
    context: writeContextOf(request, "copy"),
  });
  return xmlResponse("CopyObjectResult", {
    LastModified: isoDate(info.meta.lastModified),
    ETag: quoteEtag(info.meta.etag),
  });
}

export async function deleteObject(
  objects: ObjectService,
  request: ObjectRequest,
): Promise<Response> {
  const ifMatch = request.headers.get("if-match");
  if (ifMatch !== null) return await deleteObjectIfMatch(objects, request, ifMatch);
  await objects.delete(request.bucket, request.key, writeContextOf(request, "delete"));
  return new Response(null, { status: 204 });
}
