/**
 * Object tags on the wire: the `x-amz-tagging` header (URL query encoded, as on PutObject,
 * CreateMultipartUpload and CopyObject with REPLACE), the `<Tagging>` XML document (the
 * `?tagging` subresource and the POST form's `tagging` field), and S3's limits with S3's codes:
 *
 * - more than 10 tags: 400 BadRequest "Object tags cannot be greater than 10";
 * - a key that is empty, longer than 128 Unicode characters, starts with `aws:` or holds a
 *   character outside letters, digits, spaces and `_ . : / = + - @`: 400 InvalidTag (TagKey);
 *   the same rules for a value, at most 256 characters (empty allowed): 400 InvalidTag (TagValue);
 * - the same key twice: InvalidTag in XML, InvalidArgument in the header (as S3 answers);
 * - a header that is not valid URL query encoding of UTF-8: 400 InvalidArgument;
 * - XML that is not a `<Tagging><TagSet><Tag><Key/><Value/></Tag>…</TagSet></Tagging>`
 *   document: 400 MalformedXML.
 */
import { SvcError } from "../lib/mod.ts";
import { child, childrenNamed, malformedXml, parseXmlBytes, requiredChildText } from "./xml.ts";

export type Tags = Record<string, string>;

export const MAX_TAGS = 10;
export const MAX_TAG_KEY_CHARS = 128;
export const MAX_TAG_VALUE_CHARS = 256;
/** The largest Tagging document read (10 tags of 128 + 256 characters fit many times). */
export const MAX_TAGGING_XML_BYTES = 64 * 1024;

const ALLOWED = /^[\p{L}\p{Z}\p{N}_.:/=+\-@]*$/u;

function invalidTag(message: string, tag: { key: string; value?: string }): SvcError {
  return new SvcError("InvalidTag", message, {
    TagKey: tag.key,
    ...(tag.value !== undefined ? { TagValue: tag.value } : {}),
  });
}

function chars(text: string): number {
  let n = 0;
  for (const _ of text) n++;
  return n;
}

function checkTag(key: string, value: string): void {
  if (key === "" || chars(key) > MAX_TAG_KEY_CHARS || !ALLOWED.test(key)) {
    throw invalidTag(
      `The TagKey you have provided is invalid: "${key}" (1 to ${MAX_TAG_KEY_CHARS} letters, digits, spaces or _ . : / = + - @)`,
      { key },
    );
  }
  if (key.toLowerCase().startsWith("aws:")) {
    throw invalidTag(`Your TagKey cannot be prefixed with aws: ("${key}")`, { key });
  }
  if (chars(value) > MAX_TAG_VALUE_CHARS || !ALLOWED.test(value)) {
    throw invalidTag(
      `The TagValue you have provided is invalid: "${value}" (at most ${MAX_TAG_VALUE_CHARS} letters, digits, spaces or _ . : / = + - @)`,
      { key, value },
    );
  }
}

function tooManyTags(count: number): SvcError {
  return new SvcError(
    "BadRequest",
    `Object tags cannot be greater than ${MAX_TAGS} (${count} given)`,
  );
}

/** Checks the pairs against S3's limits and returns them as a record, in the given order. */
function toTags(pairs: [string, string][], duplicate: (key: string) => SvcError): Tags {
  if (pairs.length > MAX_TAGS) throw tooManyTags(pairs.length);
  const tags: Tags = {};
  for (const [key, value] of pairs) {
    checkTag(key, value);
    if (Object.hasOwn(tags, key)) throw duplicate(key);
    tags[key] = value;
  }
  return tags;
}

function headerError(value: string): SvcError {
  return new SvcError(
    "InvalidArgument",
    `The header 'x-amz-tagging' shall be encoded as UTF-8 then URLEncoded URL query parameters without tag name duplicates (got "${value}")`,
    { ArgumentName: "x-amz-tagging", ArgumentValue: value },
  );
}

/** The tags of an `x-amz-tagging` header (`k1=v1&k2=v2`, URL query encoded). */
export function parseTaggingHeader(value: string): Tags {
  const decode = (text: string) => {
    try {
      return decodeURIComponent(text.replaceAll("+", " "));
    } catch {
      throw headerError(value);
    }
  };
  const pairs: [string, string][] = [];
  for (const field of value.split("&")) {
    if (field === "") continue;
    const equals = field.indexOf("=");
    const key = decode(equals < 0 ? field : field.slice(0, equals));
    pairs.push([key, equals < 0 ? "" : decode(field.slice(equals + 1))]);
  }
  return toTags(pairs, () => headerError(value));
}

/** The tags of a request's `x-amz-tagging` header; undefined when there is none. */
export function taggingHeader(headers: Headers): Tags | undefined {
  const value = headers.get("x-amz-tagging");
  return value === null ? undefined : parseTaggingHeader(value);
}

/** The tags of a `<Tagging>` document (UTF-8 bytes; invalid UTF-8 is MalformedXML). */
export function parseTaggingXml(bytes: Uint8Array): Tags {
  if (bytes.length > MAX_TAGGING_XML_BYTES) throw malformedXml("Tagging document too large");
  const root = parseXmlBytes(bytes);
  if (root.name !== "Tagging") throw malformedXml(`root element is <${root.name}>, not <Tagging>`);
  const tagSet = child(root, "TagSet");
  if (!tagSet) throw malformedXml("no <TagSet> in <Tagging>");
  const pairs = childrenNamed(tagSet, "Tag").map((tag): [string, string] => [
    requiredChildText(tag, "Key"),
    requiredChildText(tag, "Value"),
  ]);
  return toTags(
    pairs,
    (key) => invalidTag(`Cannot provide multiple Tags with the same key ("${key}")`, { key }),
  );
}

/** The `<Tagging>` response body's children. */
export function taggingDocument(tags: Tags | undefined): Record<string, unknown> {
  return {
    TagSet: { Tag: Object.entries(tags ?? {}).map(([Key, Value]) => ({ Key, Value })) },
  };
}

/** The number of tags, for `x-amz-tagging-count`; 0 when none. */
export function tagCount(tags: Tags | undefined): number {
  return tags ? Object.keys(tags).length : 0;
}
