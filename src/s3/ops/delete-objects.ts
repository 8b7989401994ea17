/**
 * DeleteObjects (`POST /bucket?delete`): up to 1000 keys, Quiet mode, per-key errors. Each key is
 * deleted exactly (a key ending in `/` removes only that marker, unlike DeleteObject).
 */
import { SvcError, toSvcError } from "../../lib/mod.ts";
import type { ObjectService } from "../../objects/mod.ts";
import { readSmallBody } from "./bucket-ops.ts";
import type { BucketRequest } from "../routes/route-types.ts";
import { writeContextOf } from "../request.ts";
import { xmlResponse } from "../response.ts";
import { childrenNamed, childText, parseXml } from "../xml.ts";

export const MAX_DELETE_KEYS = 1000;

function malformed(reason: string): SvcError {
  return new SvcError(
    "MalformedXML",
    `The XML you provided was not well-formed or did not validate against our published schema (${reason})`,
  );
}

export function parseDeleteRequest(text: string): { keys: string[]; quiet: boolean } {
  const root = parseXml(text);
  if (root.name !== "Delete") throw malformed(`root element is <${root.name}>, expected <Delete>`);
  const entries = childrenNamed(root, "Object");
  if (entries.length === 0) throw malformed("no <Object> elements");
  if (entries.length > MAX_DELETE_KEYS) {
    throw malformed(`${entries.length} keys, at most ${MAX_DELETE_KEYS} are allowed`);
  }
  const keys = entries.map((entry) => {
    const key = childText(entry, "Key");
    if (key === undefined || key === "") throw malformed("an <Object> without a <Key>");
    return key;
  });
  const quiet = (childText(root, "Quiet") ?? "false").trim().toLowerCase() === "true";
  return { keys, quiet };
}

export async function deleteObjects(
  objects: ObjectService,
  request: BucketRequest,
  /** Throws (AccessDenied) for a key the principal may not delete: that key fails alone. */
  authorizeKey: (key: string) => void = () => {},
): Promise<Response> {
  const bucket = request.bucket;
  const { keys, quiet } = parseDeleteRequest(await readSmallBody(request, 2 << 20));
  await objects.headBucket(bucket);
  const context = writeContextOf(request, "delete_objects");
  const deleted: { Key: string }[] = [];
  const errors: { Key: string; Code: string; Message: string }[] = [];
  // The events of every removal, committed together (group commit) before the answer.
  const recorded: Promise<void>[] = [];
  for (const key of keys) {
    try {
      authorizeKey(key);
      await objects.deleteOne(bucket, key, context, recorded);
      deleted.push({ Key: key });
    } catch (err) {
      const error = toSvcError(err);
      errors.push({ Key: key, Code: error.code, Message: error.message });
    }
  }
  await Promise.all(recorded);
  return xmlResponse("DeleteResult", {
    Deleted: quiet ? [] : deleted,
    Error: errors,
  });
}
