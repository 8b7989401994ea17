/**
 * svc's own small records in an S3 backend bucket, sent with the backend's raw client (below the
 * storage layers): JSON documents (upload records, completion claims, completed-upload records),
 * zero-byte index keys whose names carry what they describe, listings of key names and deletes.
 * Only part bytes go through the storage stack (sealed as objects are); these records hold what
 * a backend's object keys and metadata hold anyway (keys, ETags, sizes, client metadata).
 *
 * Creation is conditional (`If-None-Match: *`): of two instances writing one record exactly one
 * wins, the other learns it lost (false). Deletes are idempotent: a key already gone is fine.
 */
import { SvcError } from "../../lib/mod.ts";
import {
  BackendError,
  parseListObjects,
  type S3Client,
  svcErrorFromBackend,
} from "../../storage/mod.ts";

/** The raw client of the backend a bucket lives on, and the bucket's name there. */
export interface BackendBucket {
  client: S3Client;
  /** The bucket name on the backend (an alias resolved). */
  real: string;
  /** The name the client uses: errors speak of it. */
  bucket: string;
}

export interface ListedKey {
  key: string;
  size: number;
  /** Epoch milliseconds, whole seconds on most stores. */
  lastModified: number;
}

const preconditionFailed = (err: unknown) =>
  err instanceof BackendError && (err.status === 412 || err.status === 409);
const absent = (err: unknown) =>
  err instanceof BackendError && err.status === 404 && err.code !== "NoSuchBucket";

/** A JSON record with its ETag (for a conditional replacement); null when absent. */
export async function readRecord<T>(
  at: BackendBucket,
  key: string,
): Promise<{ value: T; etag: string } | null> {
  try {
    const response = await at.client.send({
      method: "GET",
      bucket: at.real,
      key,
      idempotent: true,
    });
    let value: T;
    try {
      value = JSON.parse(response.text) as T;
    } catch {
      throw new SvcError("InternalError", `Multipart record "${key}" is corrupt`);
    }
    return { value, etag: response.headers.get("etag") ?? "" };
  } catch (err) {
    if (absent(err)) return null;
    throw fromBackend(err, at);
  }
}

/**
 * Writes a JSON record (or an empty body, for index keys). `onlyIf`: `"absent"` creates it only
 * when no such key exists, an ETag replaces only that version. false when the condition failed.
 */
export async function writeRecord(
  at: BackendBucket,
  key: string,
  value: unknown,
  onlyIf?: "absent" | { etag: string },
): Promise<boolean> {
  const condition: Record<string, string> = onlyIf === undefined
    ? {}
    : onlyIf === "absent"
    ? { "if-none-match": "*" }
    : { "if-match": onlyIf.etag };
  try {
    await at.client.send({
      method: "PUT",
      bucket: at.real,
      key,
      headers: { "content-type": "application/json", ...condition },
      body: value === undefined ? "" : JSON.stringify(value),
      // Sending a conditional create again is harmless: at worst it fails its condition, and
      // the caller then reads what is there.
      idempotent: true,
    });
    return true;
  } catch (err) {
    if (onlyIf !== undefined && preconditionFailed(err)) return false;
    throw fromBackend(err, at);
  }
}

/** Removes keys; ones already gone (another instance removed them) are no error. */
export async function deleteKeys(at: BackendBucket, keys: readonly string[]): Promise<void> {
  const queue = [...keys];
  const worker = async () => {
    for (let key = queue.shift(); key !== undefined; key = queue.shift()) {
      try {
        await at.client.send({ method: "DELETE", bucket: at.real, key, idempotent: true });
      } catch (err) {
        if (!absent(err)) throw fromBackend(err, at);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(8, queue.length) }, worker));
}

/**
 * Every key under `prefix` (with `delimiter`, the common prefixes too), following continuation
 * tokens. Names and sizes come from the listing alone: nothing is HEADed.
 */
export async function listKeys(
  at: BackendBucket,
  prefix: string,
  delimiter?: string,
): Promise<{ keys: ListedKey[]; prefixes: string[] }> {
  const keys: ListedKey[] = [];
  const prefixes: string[] = [];
  let startAfter: string | undefined;
  for (;;) {
    let text: string;
    try {
      text = (await at.client.send({
        method: "GET",
        bucket: at.real,
        query: {
          "list-type": "2",
          delimiter,
          "encoding-type": "url",
          "max-keys": "1000",
          prefix,
          "start-after": startAfter,
        },
        idempotent: true,
      })).text;
    } catch (err) {
      throw fromBackend(err, at);
    }
    const page = parseListObjects(text);
    keys.push(...page.objects.map(({ key, size, lastModified }) => ({ key, size, lastModified })));
    prefixes.push(...page.commonPrefixes);
    const last = [...page.objects.map((o) => o.key), ...page.commonPrefixes].sort().at(-1);
    if (!page.isTruncated || last === undefined) return { keys, prefixes };
    startAfter = last;
  }
}

function fromBackend(err: unknown, at: BackendBucket): SvcError {
  return svcErrorFromBackend(err, at.bucket);
}
