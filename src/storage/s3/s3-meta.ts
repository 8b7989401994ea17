/**
 * ObjectMeta as S3 headers, and back.
 *
 * Content-Type and the STORED_HEADERS travel as the real headers, so other S3 clients of the
 * same bucket see them too. svc's own fields are user metadata named `x-amz-meta-svc-<field>`:
 * `svc-size`, `svc-etag`, `svc-md5`, `svc-sha256`, `svc-parts`, `svc-storage`,
 * `svc-encryption-key-id` (the key an aes256-gcm-proxy object is sealed under), `svc-tags` (the
 * object's tags as a JSON list of pairs: compact, since a store allows 2 KB of user metadata in
 * all, so many long tags get MetadataTooLarge from it), and
 * `svc-x-<name>` for any extra string field a layer above adds (the delta layer's
 * `referenceSha256` becomes `svc-x-reference-sha256`; camelCase ↔ kebab-case, since header names
 * lose their case). `svc-no-content-type` records an empty content type, which S3 would
 * otherwise replace with a default.
 *
 * User metadata, unambiguous beside ours: a user key that starts with `svc-` is stored as
 * `svc-u-<key>` (so `svc-size` → `x-amz-meta-svc-u-svc-size`); every other user key is stored
 * as it is, so foreign tools see ordinary metadata. Reading: `svc-u-` prefixes are stripped,
 * other `svc-` names are ours, everything else is the user's. None of our field names starts
 * with `u-`, so no user key can land on one of them.
 *
 * Values that are not plain printable ASCII (non-ASCII, control characters, leading or trailing
 * blanks, empty, or starting with `=?`) are sent as RFC 2047 `=?UTF-8?B?<base64>?=`, the form
 * S3 and its SDKs use; every value of that exact form is decoded on the way back, so a value
 * that merely looks encoded is always encoded itself first.
 *
 * Last-Modified is not stored: HEAD, GET and LIST all report the backend's own Last-Modified,
 * the one timestamp a listing can show without a HEAD per key, so all three agree.
 */
import { type ObjectMeta, type StorageKind, STORED_HEADERS } from "../backend.ts";
import { unquoteEtag } from "./s3-xml.ts";

const META = "x-amz-meta-";
const OURS = "svc-";
const USER_ESCAPE = "svc-u-";
const EXTRA = "svc-x-";
const NO_CONTENT_TYPE = "svc-no-content-type";

/** The ObjectMeta fields with a fixed place; anything else is an extra field. */
const KNOWN_FIELDS = new Set([
  "size",
  "etag",
  "md5",
  "sha256",
  "contentType",
  "userMeta",
  "headers",
  "lastModified",
  "partsCount",
  "storage",
  "tags",
  "encryptionKeyId",
]);
const STORAGE_KINDS = new Set<string>(["passthrough", "delta", "reference"]);
const PLAIN_VALUE = /^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/;
const ENCODED_VALUE = /^=\?UTF-8\?B\?([A-Za-z0-9+/]*={0,2})\?=$/i;

/** The request headers that store `meta` with an object (PUT or CreateMultipartUpload). */
export function metaToHeaders(meta: ObjectMeta): Record<string, string> {
  const headers: Record<string, string> = {};
  const own = (field: string, value: string) => headers[`${META}${OURS}${field}`] = value;
  if (meta.contentType) headers["content-type"] = meta.contentType;
  else own(NO_CONTENT_TYPE.slice(OURS.length), "1");
  for (const name of STORED_HEADERS) {
    const value = meta.headers[name];
    if (value !== undefined) headers[name] = value;
  }
  own("size", String(meta.size));
  own("etag", meta.etag);
  if (meta.md5) own("md5", meta.md5);
  if (meta.sha256) own("sha256", meta.sha256);
  if (meta.partsCount !== undefined) own("parts", String(meta.partsCount));
  own("storage", meta.storage);
  if (meta.encryptionKeyId !== undefined) own("encryption-key-id", meta.encryptionKeyId);
  if (meta.tags && Object.keys(meta.tags).length > 0) {
    own("tags", encodeValue(JSON.stringify(Object.entries(meta.tags))));
  }
  for (const [field, value] of Object.entries(meta)) {
    if (KNOWN_FIELDS.has(field) || value === undefined) continue;
    if (typeof value !== "string" || !/^[a-z][a-zA-Z0-9]*$/.test(field)) {
      throw new Error(`Metadata field "${field}" cannot be stored on an S3 backend`);
    }
    headers[`${META}${EXTRA}${camelToKebab(field)}`] = encodeValue(value);
  }
  for (const [key, value] of Object.entries(meta.userMeta)) {
    const stored = key.startsWith(OURS) ? `${USER_ESCAPE}${key}` : key;
    headers[`${META}${stored}`] = encodeValue(value);
  }
  return headers;
}

/**
 * The ObjectMeta of a HEAD or GET answer. An object svc did not write (no `svc-etag`) is read
 * from the plain headers: size from the stored length, ETag without quotes, md5 when the ETag is
 * one, sha256 "", storage passthrough.
 */
export function metaFromHeaders(headers: Headers, storedSize: number): ObjectMeta {
  const ours = new Map<string, string>();
  const userMeta: Record<string, string> = {};
  const extras: Record<string, string> = {};
  headers.forEach((value, name) => {
    if (!name.startsWith(META)) return;
    const stored = name.slice(META.length);
    if (stored.startsWith(USER_ESCAPE)) {
      userMeta[stored.slice(USER_ESCAPE.length)] = decodeValue(value);
    } else if (stored.startsWith(EXTRA)) {
      extras[kebabToCamel(stored.slice(EXTRA.length))] = decodeValue(value);
    } else if (stored.startsWith(OURS)) {
      ours.set(stored.slice(OURS.length), value);
    } else {
      userMeta[stored] = decodeValue(value);
    }
  });
  const lastModified = Date.parse(headers.get("last-modified") ?? "") || 0;
  const stored: ObjectMeta["headers"] = {};
  for (const name of STORED_HEADERS) {
    const value = headers.get(name);
    if (value !== null) stored[name] = value;
  }
  const etag = ours.get("etag");
  const size = Number(ours.get("size"));
  if (etag === undefined || !Number.isSafeInteger(size)) {
    const backendEtag = unquoteEtag(headers.get("etag") ?? "");
    return {
      size: storedSize,
      etag: backendEtag,
      md5: /^[0-9a-f]{32}$/.test(backendEtag) ? backendEtag : "",
      sha256: "",
      contentType: headers.get("content-type") ?? "",
      userMeta,
      headers: stored,
      lastModified,
      storage: "passthrough",
    };
  }
  const storage = ours.get("storage") ?? "passthrough";
  const parts = ours.get("parts");
  const tags = ours.get("tags");
  const encryptionKeyId = ours.get("encryption-key-id");
  const meta: ObjectMeta = {
    size,
    etag,
    md5: ours.get("md5") ?? "",
    sha256: ours.get("sha256") ?? "",
    contentType: ours.has(NO_CONTENT_TYPE.slice(OURS.length))
      ? ""
      : headers.get("content-type") ?? "",
    userMeta,
    headers: stored,
    lastModified,
    ...(parts !== undefined ? { partsCount: Number(parts) } : {}),
    storage: (STORAGE_KINDS.has(storage) ? storage : "passthrough") as StorageKind,
    ...(tags ? { tags: parseTags(decodeValue(tags)) } : {}),
    ...(encryptionKeyId !== undefined ? { encryptionKeyId } : {}),
  };
  return Object.assign(meta, extras);
}

/** The meta a listing entry alone supports: size, ETag and time exact, the rest defaults. */
export function metaFromListing(size: number, etag: string, lastModified: number): ObjectMeta {
  return {
    size,
    etag,
    md5: /^[0-9a-f]{32}$/.test(etag) ? etag : "",
    sha256: "",
    contentType: "",
    userMeta: {},
    headers: {},
    lastModified,
    storage: "passthrough",
  };
}

/** `svc-tags`: a JSON array of [key, value] pairs (compact: S3 allows 2 KB of user metadata). */
function parseTags(json: string): Record<string, string> {
  const pairs: unknown = JSON.parse(json);
  const valid = Array.isArray(pairs) &&
    pairs.every((p) =>
      Array.isArray(p) && p.length === 2 && typeof p[0] === "string" && typeof p[1] === "string"
    );
  if (!valid) throw new Error(`Stored object tags are not a list of pairs: ${json}`);
  return Object.fromEntries(pairs as [string, string][]);
}

export function encodeValue(value: string): string {
  if (PLAIN_VALUE.test(value) && !value.startsWith("=?")) return value;
  const bytes = new TextEncoder().encode(value);
  return `=?UTF-8?B?${btoa(String.fromCharCode(...bytes))}?=`;
}

export function decodeValue(value: string): string {
  const match = ENCODED_VALUE.exec(value);
  if (!match) return value;
  const binary = atob(match[1]);
  return new TextDecoder().decode(Uint8Array.from(binary, (c) => c.charCodeAt(0)));
}

function camelToKebab(name: string): string {
  return name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
}

function kebabToCamel(name: string): string {
  return name.replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}
