/**
 * Test support only: an S3Backend over a real S3 server (a second svc, s3rver) with the
 * timeouts and part sizes the backend tests share, and a temp spool removed by `close()`.
 */
import { S3Backend } from "../storage/s3/s3-backend.ts";
import type { S3BackendOptions } from "../storage/s3/s3-options.ts";

const MiB = 1024 * 1024;

/** Where the server is and how to sign for it (tests/helpers/s3-servers.ts S3Server). */
export interface S3Endpoint {
  endpoint: string;
  accessKeyId: string;
  secretAccessKey: string;
}

export async function openBackend(
  server: S3Endpoint,
  overrides: Partial<S3BackendOptions> = {},
): Promise<{ backend: S3Backend; spoolDir: string; close(): Promise<void> }> {
  const spoolDir = await Deno.makeTempDir({ prefix: "svc-s3-spool-" });
  const backend = await S3Backend.open({
    endpoint: server.endpoint,
    region: "us-east-1",
    forcePathStyle: true,
    accessKeyId: server.accessKeyId,
    secretAccessKey: server.secretAccessKey,
    connectTimeoutMs: 5000,
    readTimeoutMs: 20_000,
    attemptTimeoutMs: 60_000,
    stallGraceMs: 5000,
    streamCopyThreshold: 8 * MiB,
    partSize: 5 * MiB,
    uploadConcurrency: 4,
    spoolDir,
    ...overrides,
  });
  return {
    backend,
    spoolDir,
    close: () => Deno.remove(spoolDir, { recursive: true }),
  };
}
