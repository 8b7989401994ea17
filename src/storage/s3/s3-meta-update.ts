/**
 * Replacing an object's metadata on an S3 backend without sending its bytes again: the object is
 * copied onto itself with the new `x-amz-meta-*` headers (REPLACE), inside the store.
 *
 * The copy keeps what listings rely on (s3-upload.ts): a listable object (plain md5 ETag) is one
 * CopyObject, whose ETag stays the md5 of the same bytes; any other object (delta, multipart ETag)
 * is copied as a multipart upload of UploadPartCopy parts, so its listed ETag keeps its `-`.
 * Every copy is conditional on the backend ETag seen by the HEAD (`x-amz-copy-source-if-match`):
 * an object replaced meanwhile by another writer is not overwritten with stale metadata.
 * The backend's Last-Modified moves to the time of the copy (S3 has no other way).
 */
import type { ObjectMeta } from "../backend.ts";
import type { S3Client } from "./s3-client.ts";
import { BackendError } from "./s3-errors.ts";
import { encodeKeyPath } from "./s3-keys.ts";
import { metaToHeaders } from "./s3-meta.ts";
import { createMultipartUpload, isListable, type UploadSettings } from "./s3-upload.ts";
import { completeMultipartXml, parseErrorDocument } from "./s3-xml.ts";

/** S3's largest CopyObject source and UploadPartCopy range. */
const MAX_COPY_BYTES = 5 * 1024 ** 3;
const MAX_PARTS = 10_000;

export interface StoredVersion {
  bucket: string;
  key: string;
  storedSize: number;
  /** The backend's own ETag with its quotes, as HEAD answered it. */
  backendEtag: string;
}

/** Copies `stored` onto itself with `meta` as its metadata. */
export async function rewriteMeta(
  client: S3Client,
  settings: UploadSettings,
  stored: StoredVersion,
  meta: ObjectMeta,
): Promise<void> {
  const target = { bucket: stored.bucket, key: stored.key };
  const source = {
    "x-amz-copy-source": `/${stored.bucket}/${encodeKeyPath(stored.key)}`,
    "x-amz-copy-source-if-match": stored.backendEtag,
  };
  const headers = { ...metaToHeaders(meta), ...settings.writeHeaders };
  if (isListable(meta, stored.storedSize) && stored.storedSize <= MAX_COPY_BYTES) {
    const response = await client.send({
      method: "PUT",
      ...target,
      headers: { ...headers, ...source, "x-amz-metadata-directive": "REPLACE" },
      idempotent: true,
    });
    failOnErrorDocument(response.text, "PUT (copy onto itself)", target);
    return;
  }
  const uploadId = await createMultipartUpload(client, target, headers);
  try {
    const partSize = Math.min(
      MAX_COPY_BYTES,
      Math.max(settings.partSize, Math.ceil(stored.storedSize / MAX_PARTS)),
    );
    const count = Math.max(1, Math.ceil(stored.storedSize / partSize));
    const etags: string[] = [];
    for (let index = 0; index < count; index++) {
      const query = { partNumber: String(index + 1), uploadId };
      if (stored.storedSize === 0) {
        // A range cannot name zero bytes: the one empty part is uploaded, not copied.
        const response = await client.send({ method: "PUT", ...target, query, idempotent: true });
        etags.push(response.headers.get("etag") ?? "");
        continue;
      }
      const start = index * partSize;
      const end = Math.min(stored.storedSize, start + partSize) - 1;
      const response = await client.send({
        method: "PUT",
        ...target,
        query,
        headers: { ...source, "x-amz-copy-source-range": `bytes=${start}-${end}` },
        idempotent: true,
      });
      failOnErrorDocument(response.text, "UploadPartCopy", target);
      etags.push(/<ETag>([^<]*)<\/ETag>/.exec(response.text)?.[1]?.replaceAll("&quot;", '"') ?? "");
    }
    const completed = await client.send({
      method: "POST",
      ...target,
      query: { uploadId },
      headers: { "content-type": "application/xml" },
      body: completeMultipartXml(etags.map((etag) => etag.replaceAll('"', ""))),
      idempotent: false,
    });
    failOnErrorDocument(completed.text, "CompleteMultipartUpload", target);
  } catch (err) {
    await client.send({ method: "DELETE", ...target, query: { uploadId }, idempotent: true })
      .catch(() => {}); // best effort, as for uploads
    throw err;
  }
}

/** S3 may answer a copy or a completion 200 and put the failure in the body. */
function failOnErrorDocument(
  text: string,
  operation: string,
  target: { bucket: string; key: string },
): void {
  const error = parseErrorDocument(text);
  if (error) {
    throw new BackendError(
      200,
      error.code,
      error.message,
      `${operation} "${target.bucket}/${target.key}"`,
      false,
    );
  }
}
