/**
 * Server-side encryption by the S3 store itself (`sse-s3`, `sse-kms`): svc sends the store's
 * `x-amz-server-side-encryption*` headers on every request that creates an object (PUT,
 * CreateMultipartUpload, the copy that rewrites metadata); UploadPart and reads need none.
 * Stores that apply a bucket default would encrypt anyway; sending the headers makes the mode
 * the config names hold whatever the bucket default is. Filesystem backends refuse these modes
 * at config validation (schema-checks.ts).
 */
import type { EncryptionConfig } from "../../config/mod.ts";

export function sseWriteHeaders(block: EncryptionConfig | undefined): Record<string, string> {
  if (block?.mode === "sse-s3") return { "x-amz-server-side-encryption": "AES256" };
  if (block?.mode !== "sse-kms") return {};
  const headers: Record<string, string> = { "x-amz-server-side-encryption": "aws:kms" };
  if (block.kms_key_id !== undefined) {
    headers["x-amz-server-side-encryption-aws-kms-key-id"] = block.kms_key_id;
  }
  if (block.bucket_key_enabled !== undefined) {
    headers["x-amz-server-side-encryption-bucket-key-enabled"] = String(block.bucket_key_enabled);
  }
  return headers;
}
