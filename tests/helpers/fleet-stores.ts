/**
 * The backing stores of a fleet test as stored (what the instances wrote there), and a second
 * store as another named backend (migrations between the two).
 */
import { ListObjectsV2Command, S3Client } from "@aws-sdk/client-s3";
import type { S3Server } from "./s3-servers.ts";
import { ACCESS_KEY, SECRET_KEY } from "./svc.ts";

/** A client of a backing store itself (what the fleet stored, as stored). */
export function rawClient(endpoint: string): S3Client {
  return new S3Client({
    endpoint,
    region: "us-east-1",
    forcePathStyle: true,
    credentials: { accessKeyId: ACCESS_KEY, secretAccessKey: SECRET_KEY },
  });
}

/** The keys a backing store holds in `bucket` (none when the bucket is not there). */
export async function storedKeys(endpoint: string, bucket: string): Promise<string[]> {
  const client = rawClient(endpoint);
  try {
    const page = await client.send(new ListObjectsV2Command({ Bucket: bucket }));
    return (page.Contents ?? []).map((object) => object.Key!);
  } catch (err) {
    if ((err as { name?: string }).name === "NoSuchBucket") return [];
    throw err;
  } finally {
    client.destroy();
  }
}

/** `backendsYaml` of two S3 backends: the fleet's store (`main`, the default) and `second`. */
export function twoStores(second: S3Server) {
  return (store: S3Server) => {
    const backend = (name: string, s: S3Server) =>
      `    - name: ${name}\n      type: s3\n      endpoint: ${s.endpoint}\n` +
      `      access_key_id: ${s.accessKeyId}\n      secret_access_key: ${s.secretAccessKey}\n`;
    return `  default_backend: main\n  backends:\n${backend("main", store)}${
      backend("second", second)
    }`;
  };
}
