/**
 * ListObjectsV2 and ListObjects (v1): one backend listing path, two wire shapes. A listing
 * admitted anonymously through public prefixes is narrowed to them (public-list.ts), and one by
 * an IAM principal to what it may see (access.ts KeyVisibility): to its granted ranges through
 * public-list.ts, key by key through filtered-list.ts when some keys inside them are hidden.
 */
import { wholeBucket } from "../../admission/mod.ts";
import { SvcError } from "../../lib/mod.ts";
import type { ObjectService } from "../../objects/mod.ts";
import type { ListPage } from "../../storage/mod.ts";
import { continuationToken } from "./bucket-ops.ts";
import { listPublic } from "./public-list.ts";
import { type FilteredPage, listFiltered } from "./filtered-list.ts";
import { looksSealed, openPosition, sealPosition } from "./list-position.ts";
import { intParam, type S3Request } from "../request.ts";
import type { BucketRequest } from "../routes/route-types.ts";
import type { KeyVisibility } from "../access.ts";
import { isoDate, OWNER, quoteEtag, urlEncodeKey, xmlResponse } from "../response.ts";

const MAX_KEYS = 1000;

interface ListParams {
  prefix: string;
  delimiter: string;
  maxKeys: number;
  startAfter: string;
  /** `startAfter` came sealed (list-position.ts): a place to resume, not an entry returned. */
  resumeRaw: boolean;
  encode: (value: string) => string;
}

function listParams(request: S3Request, startAfter: string, resumeRaw = false): ListParams {
  const encodingType = request.query.get("encoding-type");
  if (encodingType !== null && encodingType !== "url") {
    throw new SvcError(
      "InvalidArgument",
      `Invalid Encoding Method specified in Request: "${encodingType}"`,
      {
        ArgumentName: "encoding-type",
      },
    );
  }
  return {
    prefix: request.query.get("prefix") ?? "",
    delimiter: request.query.get("delimiter") ?? "",
    maxKeys: intParam(request.query, "max-keys", MAX_KEYS, 0, MAX_KEYS),
    startAfter,
    resumeRaw,
    encode: encodingType === "url" ? urlEncodeKey : (value) => value,
  };
}

async function listPage(
  objects: ObjectService,
  request: BucketRequest,
  params: ListParams,
  visibility: KeyVisibility | undefined,
): Promise<FilteredPage> {
  const bucket = request.bucket;
  if (params.maxKeys === 0) {
    await objects.headBucket(bucket);
    return { objects: [], commonPrefixes: [], isTruncated: false };
  }
  // An anonymous reader sees its public prefixes; an IAM principal what its grants show. Both
  // read only the granted key ranges (public-list.ts), so nothing outside them leaks.
  const publicPrefixes = request.anonymous?.publicPrefixes;
  const narrowed: KeyVisibility | undefined = publicPrefixes !== undefined
    ? { prefixes: publicPrefixes }
    : visibility;
  if (narrowed?.visible !== undefined) {
    await objects.headBucket(bucket);
    return await listFiltered((options) => objects.listObjects(bucket, options), {
      prefix: params.prefix,
      delimiter: params.delimiter,
      maxKeys: params.maxKeys,
      startAfter: params.startAfter,
      resumeRaw: params.resumeRaw,
    }, narrowed);
  }
  if (narrowed !== undefined && !wholeBucket(narrowed.prefixes)) {
    // No range may be read at all: the bucket must still exist for the answer to be empty.
    await objects.headBucket(bucket);
    return await listPublic(
      (options) => objects.listObjects(bucket, options),
      {
        prefix: params.prefix,
        delimiter: params.delimiter,
        maxKeys: params.maxKeys,
        startAfter: params.startAfter,
      },
      narrowed.prefixes,
    );
  }
  return await objects.listObjects(bucket, {
    prefix: params.prefix,
    delimiter: params.delimiter || undefined,
    startAfter: params.startAfter || undefined,
    maxKeys: params.maxKeys,
  });
}

function contents(page: ListPage, params: ListParams, withOwner: boolean) {
  return page.objects.map((object) => ({
    Key: params.encode(object.key),
    LastModified: isoDate(object.meta.lastModified),
    ETag: quoteEtag(object.meta.etag),
    Size: object.meta.size,
    Owner: withOwner ? OWNER : undefined,
    StorageClass: "STANDARD",
  }));
}

function commonPrefixes(page: ListPage, params: ListParams) {
  return page.commonPrefixes.map((prefix) => ({ Prefix: params.encode(prefix) }));
}

export async function listObjectsV2(
  objects: ObjectService,
  request: BucketRequest,
  /** What the principal may see (IAM); undefined shows every key. */
  visibility?: KeyVisibility,
): Promise<Response> {
  const token = request.query.get("continuation-token");
  const startAfterParam = request.query.get("start-after") ?? "";
  const sealed = token !== null ? openPosition(token) : undefined;
  if (token !== null && sealed === undefined && looksSealed(token)) {
    throw new SvcError("InvalidArgument", "The continuation token provided is incorrect", {
      ArgumentName: "continuation-token",
    });
  }
  const resumeAt = sealed ?? (token !== null ? continuationToken.decode(token) : "");
  // A continuation token resumes where the previous page ended; start-after only seeds page one.
  const params = listParams(
    request,
    token !== null ? resumeAt : startAfterParam,
    sealed !== undefined,
  );
  const bucket = request.bucket;
  const page = await listPage(objects, request, params, visibility);
  const fetchOwner = request.query.get("fetch-owner") === "true";
  return xmlResponse("ListBucketResult", {
    Name: bucket,
    Prefix: params.encode(params.prefix),
    Delimiter: params.delimiter ? params.encode(params.delimiter) : undefined,
    MaxKeys: params.maxKeys,
    EncodingType: request.query.get("encoding-type") ?? undefined,
    KeyCount: page.objects.length + page.commonPrefixes.length,
    IsTruncated: page.isTruncated,
    ContinuationToken: token ?? undefined,
    NextContinuationToken: page.isTruncated && page.nextStartAfter !== undefined
      ? (page.nextSealed ? sealPosition : continuationToken.encode)(page.nextStartAfter)
      : undefined,
    StartAfter: request.query.has("start-after") ? params.encode(startAfterParam) : undefined,
    Contents: contents(page, params, fetchOwner),
    CommonPrefixes: commonPrefixes(page, params),
  });
}

export async function listObjectsV1(
  objects: ObjectService,
  request: BucketRequest,
  /** What the principal may see (IAM); undefined shows every key. */
  visibility?: KeyVisibility,
): Promise<Response> {
  const marker = request.query.get("marker") ?? "";
  // A marker this process sealed resumes at its hidden position; any other is a key, unless it
  // is shaped as a sealed one this process cannot open (made before a restart).
  const sealed = openPosition(marker);
  if (sealed === undefined && looksSealed(marker)) {
    throw new SvcError("InvalidArgument", "The marker provided is no longer valid: list again", {
      ArgumentName: "marker",
    });
  }
  const params = listParams(request, sealed ?? marker, sealed !== undefined);
  const bucket = request.bucket;
  const page = await listPage(objects, request, params, visibility);
  return xmlResponse("ListBucketResult", {
    Name: bucket,
    // With encoding-type=url, v1 encodes Delimiter, Marker, NextMarker, Key and CommonPrefixes'
    // Prefix, never the Prefix element: exactly the fields boto3 / awscli decode for v1 (and
    // AWS's answers round-trip through them), so a prefix holding a newline comes back intact.
    Prefix: params.prefix,
    Marker: params.encode(marker),
    // S3 sends NextMarker only with a delimiter; svc always sends it when truncated, which every
    // client accepts and which saves the ones that forget the last-key fallback.
    NextMarker: page.isTruncated && page.nextStartAfter !== undefined
      ? (page.nextSealed ? sealPosition(page.nextStartAfter) : params.encode(page.nextStartAfter))
      : undefined,
    MaxKeys: params.maxKeys,
    Delimiter: params.delimiter ? params.encode(params.delimiter) : undefined,
    EncodingType: request.query.get("encoding-type") ?? undefined,
    IsTruncated: page.isTruncated,
    Contents: contents(page, params, true),
    CommonPrefixes: commonPrefixes(page, params),
  });
}
