/**
 * The conditional-write probe: honoured by the filesystem backend and by a svc used as an S3
 * backend; s3rver ignores `If-None-Match`, which the probe reports (and logs). Nothing is left.
 */
import assert from "node:assert/strict";
import type { Backend } from "../../storage/backend.ts";
import { FilesystemBackend } from "../../storage/fs/filesystem-backend.ts";
import { openBackend } from "../../testing/s3-backend-fixture.ts";
import {
  s3rverUnavailable,
  type S3Server,
  startS3rver,
  startSvcServer,
} from "../../../tests/helpers/s3-servers.ts";
import type { DeltaContext } from "../delta-context.ts";
import { conditionalWritesHold } from "./conditional-probe.ts";

const BUCKET = "probed";

async function probeOn(backend: Backend): Promise<boolean> {
  await backend.createBucket(BUCKET);
  const ctx = { inner: backend } as unknown as DeltaContext;
  const verdict = await conditionalWritesHold(ctx, BUCKET);
  // Asked once per bucket: the second answer is the remembered one.
  assert.equal(await conditionalWritesHold(ctx, BUCKET), verdict);
  const left = await backend.listObjects(BUCKET, { prefix: "", maxKeys: 10 });
  assert.deepEqual(left.objects.map((o) => o.key), []);
  return verdict;
}

async function onServer(start: () => Promise<S3Server>): Promise<boolean> {
  const server = await start();
  const opened = await openBackend(server);
  try {
    return await probeOn(opened.backend);
  } finally {
    await opened.close();
    await server.stop();
  }
}

Deno.test("conditional probe: the filesystem backend honours conditions", async () => {
  const dir = await Deno.makeTempDir({ prefix: "svc-probe-" });
  try {
    assert.equal(await probeOn(await FilesystemBackend.open(dir)), true);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test({
  name: "conditional probe: svc as an S3 backend honours conditions",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => assert.equal(await onServer(startSvcServer), true),
});

const s3rverMissing = await s3rverUnavailable();
Deno.test({
  name: "conditional probe: s3rver ignores If-None-Match and is reported",
  ignore: s3rverMissing !== undefined,
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => assert.equal(await onServer(startS3rver), false),
});
