/**
 * Object tagging (`?tagging` on a key): GetObjectTagging, PutObjectTagging, DeleteObjectTagging.
 * Tags live in the object's metadata record; putting or deleting them rewrites that record in
 * place (the bytes, ETag and other metadata stay). Bucket tagging is not offered (501).
 */
import type { ObjectService } from "../../objects/mod.ts";
import { readSmallBytes } from "./bucket-ops.ts";
import type { ObjectRequest } from "../routes/route-types.ts";
import { xmlResponse } from "../response.ts";
import { MAX_TAGGING_XML_BYTES, parseTaggingXml, taggingDocument } from "../tagging.ts";

export async function getObjectTagging(
  objects: ObjectService,
  request: ObjectRequest,
): Promise<Response> {
  const info = await objects.head(request.bucket, request.key);
  return xmlResponse("Tagging", taggingDocument(info.meta.tags));
}

export async function putObjectTagging(
  objects: ObjectService,
  request: ObjectRequest,
): Promise<Response> {
  // The document is read and judged before the object is looked at: nothing changes on a refusal.
  const tags = parseTaggingXml(await readSmallBytes(request, MAX_TAGGING_XML_BYTES));
  await objects.setTags(request.bucket, request.key, tags);
  return new Response(null, { status: 200 });
}

export async function deleteObjectTagging(
  objects: ObjectService,
  request: ObjectRequest,
): Promise<Response> {
  await objects.setTags(request.bucket, request.key, {});
  return new Response(null, { status: 204 });
}
