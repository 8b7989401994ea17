/**
 * PostObject: the browser form upload (`POST /{bucket}`, multipart/form-data).
 *
 * Order matters: the fields before the file are read (at most 20 KiB, within
 * `header_timeout_secs`, holding no concurrency slot), the policy and its signature are verified,
 * and only then is a slot taken and the file read, straight into the object service. So a refused
 * form never costs more than its small head, a stranger trickling fields holds no slot, and the
 * file is never buffered. The
 * content-length-range of the policy is enforced on the bytes as they stream: too many and the
 * upload stops at once, too few and it fails at the end; either way nothing is stored.
 *
 * Like S3, the object's metadata comes from the form fields (Content-Type, Cache-Control,
 * Content-Disposition, Content-Encoding, Content-Language, Expires, x-amz-meta-*), not from the
 * file part's own Content-Type header: S3 ignores that header, and so does svc, so an object
 * stored through a form is the same object S3 would store.
 */
import { utf8HeaderValue } from "../header-text.ts";
import type { CredentialStore, Principal } from "../../iam/mod.ts";
import { type LengthRange, verifyPostPolicy } from "../../auth/mod.ts";
import { SvcError } from "../../lib/mod.ts";
import type { ObjectService } from "../../objects/mod.ts";
import { STORED_HEADERS } from "../../storage/mod.ts";
import {
  formBoundary,
  type FormField,
  type FormFile,
  malformedForm,
  readFormData,
  validateContentMd5,
} from "../../body/mod.ts";
import { validateObjectKey } from "../names.ts";
import { clientMetadata } from "./object-ops.ts";
import { type S3Request, writeContextOf } from "../request.ts";
import type { BucketRequest } from "../routes/route-types.ts";
import { parseTaggingXml } from "../tagging.ts";
import { quoteEtag, urlEncodeKey, xmlResponse } from "../response.ts";

/** Form fields that become object metadata (as the matching PUT headers would). */
const METADATA_FIELDS = new Set<string>(["content-type", ...STORED_HEADERS]);

/**
 * Handles a PostObject request. `credentials` is the store the policy's signing key is looked up
 * in (the `x-amz-credential` access key); the request needs no other authentication.
 */
export async function postObject(
  objects: ObjectService,
  credentials: CredentialStore,
  request: BucketRequest,
  /**
   * Authorization (the form's signer on its key) and bucket policy checks (write gate), run
   * once the policy is verified and the key known.
   */
  beforeStore?: (key: string, principal: Principal) => Promise<void>,
): Promise<Response> {
  const bucket = request.bucket;
  const boundary = formBoundary(request.headers.get("content-type"));
  if (request.raw.body === null) throw malformedForm("the request has no body");
  const form = readFormData(request.raw.body, boundary, { signal: request.signal });
  const fields: FormField[] = [];
  let file: FormFile | null = null;
  try {
    for await (const part of form) {
      if (part.kind === "file") file = part;
      else fields.push(part);
    }
    if (file === null) {
      throw new SvcError(
        "IncorrectNumberOfFilesInPostRequest",
        "POST requires exactly one file upload per request.",
      );
    }
    if (!fields.some((f) => f.name.toLowerCase() === "key")) {
      throw new SvcError(
        "InvalidArgument",
        "Bucket POST must contain a field named 'key'.  If it is specified, please check the order of the fields.",
        { ArgumentName: "key", ArgumentValue: "" },
      );
    }
    const verified = verifyPostPolicy({
      bucket,
      fields,
      filename: file.filename,
      credentials,
    });
    const values = verified.values;
    const key = values.get("key")!;
    validateObjectKey(key);
    const expectedMd5 = validateContentMd5(values.get("content-md5")) ?? undefined;
    const metadata = clientMetadata(metadataHeaders(values));
    // S3's form field `tagging` holds a Tagging XML document (not the header's query string).
    const taggingField = values.get("tagging");
    if (taggingField !== undefined) {
      metadata.tags = parseTaggingXml(new TextEncoder().encode(taggingField));
    }
    // Only a form whose policy verified gets a concurrency slot (and the time to send its file).
    await request.takeSlot?.();
    await beforeStore?.(key, verified.principal);
    const info = await objects.put(
      bucket,
      key,
      withLengthRange(file.body, verified.contentLength),
      {
        metadata,
        expectedMd5,
        signal: request.signal,
        context: { ...writeContextOf(request, "post"), principal: verified.principal.name },
      },
    );
    return answer(request, bucket, key, info.meta.etag, values);
  } catch (err) {
    // Whatever failed, the rest of the body is not wanted.
    await file?.abort(err);
    throw err;
  } finally {
    await form.return();
  }
}

/** The fields that describe the object, as the headers a PutObject would carry. */
function metadataHeaders(values: Map<string, string>): Headers {
  const headers = new Headers();
  for (const [name, value] of values) {
    if (!METADATA_FIELDS.has(name) && !name.startsWith("x-amz-meta-")) continue;
    try {
      // A form field is text; as a header it travels as its UTF-8 bytes, which parse back to
      // exactly that text (header-text.ts).
      headers.set(name, utf8HeaderValue(value));
    } catch {
      // Headers refuses names that are not tokens and values with CR, LF or NUL.
      throw new SvcError(
        "InvalidArgument",
        `The form field "${name}" cannot be stored as object metadata`,
        { ArgumentName: name },
      );
    }
  }
  return headers;
}

/** Fails the upload as soon as it passes `max`, or at its end when it is under `min`. */
function withLengthRange(
  body: ReadableStream<Uint8Array>,
  range: LengthRange | null,
): ReadableStream<Uint8Array> {
  if (range === null) return body;
  let seen = 0;
  return body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        seen += chunk.byteLength;
        if (seen > range.max) {
          throw new SvcError(
            "EntityTooLarge",
            `Your proposed upload exceeds the maximum allowed size of ${range.max} bytes set by the POST policy`,
            {
              MaxSizeAllowed: String(range.max),
            },
          );
        }
        controller.enqueue(chunk);
      },
      flush() {
        if (seen < range.min) {
          throw new SvcError(
            "EntityTooSmall",
            `Your proposed upload is smaller than the minimum allowed size of ${range.min} bytes set by the POST policy`,
            {
              ProposedSize: String(seen),
              MinSizeAllowed: String(range.min),
            },
          );
        }
      },
    }),
  );
}

/**
 * The success answer: a 303 to `success_action_redirect` (or the older `redirect`) when it is a
 * URL S3 could follow, else the `success_action_status` (200, 201 with a PostResponse document,
 * or 204, the default and the answer to any other value). Every answer carries the ETag.
 */
function answer(
  request: S3Request,
  bucket: string,
  key: string,
  etag: string,
  values: Map<string, string>,
): Response {
  const headers = new Headers({ etag: quoteEtag(etag) });
  const redirect = redirectUrl(
    values.get("success_action_redirect") ?? values.get("redirect"),
    { bucket, key, etag: quoteEtag(etag) },
  );
  if (redirect !== null) {
    headers.set("location", redirect);
    return new Response(null, { status: 303, headers });
  }
  const location = `${new URL(request.raw.url).origin}/${urlEncodeKey(bucket)}/${
    urlEncodeKey(key)
  }`;
  headers.set("location", location);
  const status = values.get("success_action_status");
  if (status === "201") {
    return xmlResponse(
      "PostResponse",
      { Location: location, Bucket: bucket, Key: key, ETag: quoteEtag(etag) },
      { status: 201, headers },
    );
  }
  return new Response(null, { status: status === "200" ? 200 : 204, headers });
}

/** The redirect target with bucket, key and etag appended; null when S3 would ignore it. */
function redirectUrl(target: string | undefined, params: Record<string, string>): string | null {
  if (target === undefined || target === "") return null;
  let url: URL;
  try {
    url = new URL(target);
  } catch {
    return null;
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return null;
  for (const [name, value] of Object.entries(params)) url.searchParams.append(name, value);
  return url.href;
}
