/**
 * A front svc on S3 backends for black-box tests: backing svc instances (their buckets with
 * `compression: false`), clients for any S3 server, and small read helpers.
 */
import { GetObjectCommand, ListBucketsCommand, S3Client } from "@aws-sdk/client-s3";
import { createHash } from "node:crypto";
import type { S3Server } from "./s3-servers.ts";
import { ACCESS_KEY, SECRET_KEY, startSvc, type SvcProcess } from "./svc.ts";

export function sha256(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

export function md5(bytes: Uint8Array): string {
  return createHash("md5").update(bytes).digest("hex");
}

export async function bytesOf(client: S3Client, Bucket: string, Key: string, Range?: string) {
  const out = await client.send(new GetObjectCommand({ Bucket, Key, Range }));
  return new Uint8Array(await out.Body!.transformToByteArray());
}

export function clientFor(server: S3Server): S3Client {
  return new S3Client({
    endpoint: server.endpoint,
    region: "us-east-1",
    forcePathStyle: true,
    credentials: { accessKeyId: server.accessKeyId, secretAccessKey: server.secretAccessKey },
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
  });
}

/** A backing svc whose named buckets keep every key verbatim. */
export async function startBackingSvc(
  buckets: string[],
  options: { dataDir?: string; port?: number } = {},
): Promise<S3Server & { svc: SvcProcess }> {
  const dir = options.dataDir ?? await Deno.makeTempDir({ prefix: "svc-backing-" });
  const yaml = "storage:\n  buckets:\n" +
    buckets.map((name) => `    ${name}:\n      compression: false\n`).join("");
  await Deno.writeTextFile(`${dir}/backing.yaml`, yaml);
  const svc = await startSvc({
    dataDir: dir,
    args: [
      "--config",
      `${dir}/backing.yaml`,
      ...(options.port ? ["--listen", `127.0.0.1:${options.port}`] : []),
    ],
  });
  return {
    name: "svc",
    endpoint: svc.url,
    accessKeyId: ACCESS_KEY,
    secretAccessKey: SECRET_KEY,
    svc,
    stop: () => svc.stop(),
  };
}

/** The front svc with one S3 backend. */
export function startFront(
  backing: S3Server,
  env: Record<string, string> = {},
): Promise<SvcProcess> {
  return startSvc({
    env: {
      SVC_S3_ENDPOINT: backing.endpoint,
      SVC_BE_AWS_ACCESS_KEY_ID: backing.accessKeyId,
      SVC_BE_AWS_SECRET_ACCESS_KEY: backing.secretAccessKey,
      SVC_BACKEND_LIST_FRESH_SECS: "0",
      ...env,
    },
  });
}

/**
 * The `storage:` section's start for a front with two named backends: `local` (the default, a
 * filesystem under `dir`) and `remote` (the backing S3 server). Continue it with `buckets:` etc.
 */
export function twoBackendsYaml(
  dir: string,
  backing: { endpoint: string; accessKeyId: string; secretAccessKey: string },
): string {
  return `storage:
  filesystem: ${dir}
  default_backend: local
  backends:
    - name: local
      type: filesystem
      path: ${dir}/local
    - name: remote
      type: s3
      endpoint: ${backing.endpoint}
      access_key_id: ${backing.accessKeyId}
      secret_access_key: ${backing.secretAccessKey}`;
}

/** A front with a local filesystem backend (default) and the backing svc as `remote`. */
export async function startRoutedFront(backing: S3Server, extraYaml = ""): Promise<SvcProcess> {
  const dir = await Deno.makeTempDir({ prefix: "svc-front-" });
  const yaml = `${twoBackendsYaml(dir, backing)}
  buckets:
    mirror:
      backend: remote
      alias: real-mirror
${extraYaml}`;
  await Deno.mkdir(`${dir}/local`);
  await Deno.writeTextFile(`${dir}/front.yaml`, yaml);
  return await startSvc({
    dataDir: dir,
    args: ["--config", `${dir}/front.yaml`],
    env: {
      SVC_BACKEND_LIST_FRESH_SECS: "0",
      SVC_BACKEND_LIST_TIMEOUT_SECS: "2",
      SVC_BACKEND_LIST_COOLDOWN_SECS: "1",
      SVC_S3_CONNECT_TIMEOUT_SECS: "1",
    },
  });
}

export async function bucketNames(s3: S3Client): Promise<string[]> {
  const out = await s3.send(new ListBucketsCommand({}));
  return (out.Buckets ?? []).map((b) => b.Name!);
}

export function statusOf(err: unknown): number | undefined {
  return (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
}

/**
 * A front svc whose single backend is `store` (another svc process), with `extraYaml` appended
 * to its config file (indented sections such as `advanced:` blocks, or lines under `storage:`
 * when `storageYaml` is given).
 */
export async function frontOfStore(
  store: SvcProcess,
  extraYaml: string,
  storageYaml = "",
): Promise<SvcProcess> {
  const dir = await Deno.makeTempDir({ prefix: "svc-front-" });
  const file = `${dir}/svc.yaml`;
  await Deno.writeTextFile(
    file,
    `storage:
  s3: ${store.url}
  access_key_id: ${ACCESS_KEY}
  secret_access_key: ${SECRET_KEY}
${storageYaml}${extraYaml}`,
  );
  return await startSvc({ dataDir: dir, args: ["--config", file], unsetEnv: ["SVC_S3_ENDPOINT"] });
}
