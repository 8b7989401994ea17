/**
 * Browser POST forms signed with the test credentials (or another key pair), as a web page's server would build them
 * ("Browser-Based Uploads Using POST"), for black-box tests of form uploads.
 */
import { createHmac } from "node:crypto";
import { ACCESS_KEY, SECRET_KEY } from "./svc.ts";

function hmac(key: string | Uint8Array, data: string): Uint8Array {
  return new Uint8Array(createHmac("sha256", key).update(data).digest());
}

/**
 * A form uploading `content` as `key` into `bucket`, its policy allowing exactly that; `fields`
 * are extra form fields, each allowed by an exact-match condition.
 */
export function signedPostForm(
  bucket: string,
  key: string,
  content: string,
  fields: Record<string, string> = {},
  keys: { accessKeyId: string; secretAccessKey: string } = {
    accessKeyId: ACCESS_KEY,
    secretAccessKey: SECRET_KEY,
  },
): FormData {
  const now = new Date();
  const stamp = now.toISOString().replace(/[-:]/g, "").replace(/\.\d{3}/, "");
  const date = stamp.slice(0, 8);
  const credential = `${keys.accessKeyId}/${date}/us-east-1/s3/aws4_request`;
  const policy = btoa(JSON.stringify({
    expiration: new Date(now.getTime() + 600_000).toISOString(),
    conditions: [
      { bucket },
      { key },
      { "x-amz-credential": credential },
      { "x-amz-algorithm": "AWS4-HMAC-SHA256" },
      { "x-amz-date": stamp },
      ...Object.entries(fields).map(([name, value]) => ({ [name]: value })),
    ],
  }));
  const signingKey = hmac(
    hmac(hmac(hmac(`AWS4${keys.secretAccessKey}`, date), "us-east-1"), "s3"),
    "aws4_request",
  );
  const form = new FormData();
  form.append("key", key);
  form.append("x-amz-credential", credential);
  form.append("x-amz-algorithm", "AWS4-HMAC-SHA256");
  form.append("x-amz-date", stamp);
  form.append("policy", policy);
  for (const [name, value] of Object.entries(fields)) form.append(name, value);
  form.append("x-amz-signature", createHmac("sha256", signingKey).update(policy).digest("hex"));
  form.append("file", new Blob([content]), "upload.txt");
  return form;
}
