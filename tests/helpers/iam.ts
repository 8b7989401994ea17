/**
 * IAM users in black-box tests: the record `POST /users` answers (the secret shown once) and an
 * S3 client signing with a user's key pair (no retries, so a refusal surfaces at once).
 */
import { S3Client } from "@aws-sdk/client-s3";
import type { SvcProcess } from "./svc.ts";

export interface CreatedUser {
  id: string;
  name: string;
  access_key_id: string;
  secret_access_key: string;
}

export interface KeyPair {
  access_key_id: string;
  secret_access_key: string;
}

export function clientAs(svc: Pick<SvcProcess, "url">, user: KeyPair): S3Client {
  return new S3Client({
    endpoint: svc.url,
    region: "us-east-1",
    forcePathStyle: true,
    credentials: { accessKeyId: user.access_key_id, secretAccessKey: user.secret_access_key },
    maxAttempts: 1,
  });
}
