/**
 * Encoding one eligible object under its deltaspace lock: the encode itself (timed, in a codec
 * slot), and the first object of a deltaspace, which becomes its baseline plus a tiny delta.
 */

import type { ObjectInfo, ObjectMeta } from "../storage/mod.ts";
import type { EncodeResult } from "./codec/codec.ts";
import type { CodecPermit } from "./codec/codec-pool.ts";
import { referenceNameFor } from "./layout.ts";
import {
  type DeltaContext,
  type DeltaMeta,
  internalError,
  removeQuietly,
} from "./delta-context.ts";
import { fileStream, storeDelta, storeFile, type Target } from "./delta-stored.ts";
import type { ArchiveForm } from "./archive-form.ts";
import type { Spool } from "./live-encode.ts";

/**
 * What is encoded: the spooled body itself, or an archive's token form (archive-form.ts), with
 * the sha256 of those bytes (a new baseline's sha256).
 */
export type EncodeInput = {
  spool: Spool;
  sha256: string;
  /** For a token form: its md5 (the object's own md5 is the caller's). */
  md5?: string;
  transform?: ArchiveForm["transform"];
};

export async function encodeWith(
  ctx: DeltaContext,
  permit: CodecPermit,
  reference: string,
  spool: Spool,
  timeoutMs: number,
  maxDeltaBytes?: number,
): Promise<EncodeResult> {
  const started = performance.now();
  const result = await ctx.pool.run(
    async (signal) =>
      ctx.codec.encode(reference, await fileStream(spool.path), { maxDeltaBytes, signal }),
    { timeoutMs, permit },
  );
  ctx.observer?.encoded((performance.now() - started) / 1000);
  return result;
}

/** The first eligible object of a deltaspace: baseline plus a tiny delta. Under the lock. */
export async function createBaselineAndDelta(
  ctx: DeltaContext,
  permit: CodecPermit,
  bucket: string,
  key: string,
  target: Target,
  input: EncodeInput,
  meta: ObjectMeta,
  timeoutMs: number,
): Promise<ObjectInfo> {
  const { spool } = input;
  const referenceName = referenceNameFor(target.space.folder);
  const referenceMeta: ObjectMeta = {
    size: spool.size,
    etag: input.md5 || meta.md5 || meta.etag,
    md5: input.md5 || meta.md5,
    sha256: input.sha256,
    contentType: "application/octet-stream",
    userMeta: {},
    headers: {},
    lastModified: Date.now(),
    storage: "reference",
    deltaGroup: target.space.label,
    ...(input.transform ? { transform: input.transform } : {}),
  } as DeltaMeta;
  await storeFile(ctx, bucket, referenceName, spool.path, referenceMeta);
  try {
    const encoded = await encodeWith(ctx, permit, spool.path, spool, timeoutMs);
    if (encoded.aborted) throw internalError("Delta codec aborted an unbounded encode");
    try {
      const info = await storeDelta(
        ctx,
        bucket,
        key,
        target,
        encoded.deltaPath,
        meta,
        input.sha256,
        "new_baseline",
      );
      ctx.observer?.decision("reference", meta.size, info.storedSize + spool.size, "new_baseline");
      return { ...info, debug: { ...info.debug, decision: "reference" } };
    } finally {
      await removeQuietly(encoded.deltaPath);
    }
  } catch (err) {
    await ctx.inner.deleteObject(bucket, referenceName).catch(() => {});
    throw err;
  }
}
