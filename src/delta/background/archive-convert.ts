/**
 * Background archive conversion (`archive_deltas: background`, docs/DELTA.md "Archives
 * converted in the background"). The PUT of an archive stores it as it came (`archive_pending`,
 * at passthrough speed) and queues it (archive-backlog.ts); this stores that same write again as
 * an archive delta, off the request path, with the checks of a PUT in `inline` mode: the token
 * form must rebuild the archive byte for byte (sha256) before anything is stored in that form.
 *
 * The converted delta keeps the write's place among the key's writes: it carries the write's
 * `writtenAt` and Last-Modified (fleet/stored-order.ts), replaces only an older `x.delta`, and is
 * not committed once the passthrough copy is gone (a delete) — checked right before the commit —
 * so a later overwrite or delete always wins, on this instance or another. Once committed, the
 * passthrough copy goes as for any write that changed form (fleet/stored-forms.ts).
 */

import { createHash } from "node:crypto";
import { SvcError } from "../../lib/mod.ts";
import type { ObjectInfo } from "../../storage/mod.ts";
import { type DeltaContext, type DeltaMeta, type DeltaSettings } from "../delta-context.ts";
import { removeQuietly } from "../delta-context.ts";
import { sourceTimeOf, storedNameFor } from "../layout.ts";
import { isNewerStored, writtenAtOf } from "../fleet/stored-order.ts";
import { isPreconditionFailed } from "../fleet/baseline-guard.ts";
import { policyFor, resolveDeltaspace } from "../groups/deltaspace-policy.ts";
import { isDeltaEligible } from "../eligibility.ts";
import { commitArchiveOrBody } from "../delta-write.ts";
import { plainMeta, storeFile, warmRebuilt, warms } from "../delta-stored.ts";
import { deleteDelta } from "../delta-cleanup.ts";
import { settleForms } from "../fleet/stored-forms.ts";
import type { Spool } from "../live-encode.ts";
import { getLogger } from "../../observability/mod.ts";

const log = getLogger("svc::delta");

/** One archive PUT waiting for its conversion: the write is named by its sha256 and stamp. */
export interface PendingArchive {
  bucket: string;
  key: string;
  sha256: string;
  writtenAt: string;
}

/**
 * What became of a conversion: `converted` (stored as a delta), `kept` (stays passthrough with
 * the reason the inline path would have given), `superseded` (the write was overwritten or
 * deleted, or compression is off: nothing to do) or `retry` (no codec slot, a backend error).
 */
export type ConvertOutcome = "converted" | "kept" | "superseded" | "retry";

/** What a conversion tells its owner. */
export interface ConvertHooks {
  /** Drops what is remembered of the key (the metadata cache). */
  forget(): void;
  /** The write `source` (stored as it came) is now stored as `stored` (usage counters). */
  converted?(stored: ObjectInfo, source: ObjectInfo): void;
}

/** The pending entry of a stored passthrough write. */
export function pendingOf(bucket: string, key: string, stored: ObjectInfo): PendingArchive {
  return { bucket, key, sha256: stored.meta.sha256, writtenAt: String(writtenAtOf(stored)) };
}

/** Whether `stored` (the key's passthrough name) still holds the pending write. */
function holdsWrite(stored: ObjectInfo | null, pending: PendingArchive): stored is ObjectInfo {
  return stored !== null && (stored.meta as DeltaMeta).storageReason === "archive_pending" &&
    stored.meta.sha256 === pending.sha256 && String(writtenAtOf(stored)) === pending.writtenAt;
}

/** Converts one pending archive (see the header). Errors are outcomes, never thrown. */
export async function convertArchive(
  ctx: DeltaContext,
  settings: DeltaSettings,
  pending: PendingArchive,
  hooks: ConvertHooks,
): Promise<ConvertOutcome> {
  const { forget } = hooks;
  const { bucket, key } = pending;
  let spool: Spool | null = null;
  let warmed = false;
  try {
    if (!settings.bucketCompression(bucket)) return "superseded";
    const source = await ctx.inner.headObject(bucket, key);
    if (!holdsWrite(source, pending)) return "superseded";
    const deltaName = storedNameFor(key, "delta");
    const delta = await ctx.inner.headObject(bucket, deltaName);
    if (delta && isNewerStored(delta, source)) {
      if (!isConversionOf(delta, pending)) return "superseded";
      // Converted before a crash, the passthrough copy not yet removed: done now.
      await settleForms(ctx, bucket, key, deltaName);
      return "converted";
    }
    const size = source.meta.size;
    spool = await download(ctx, pending);
    if (spool === null) return "superseded";
    if (!isDeltaEligible(key, { size, maxObjectSize: settings.maxObjectSize }).eligible) {
      return await keep(ctx, pending, source, spool, "not_eligible");
    }
    const stillStored = async () => holdsWrite(await ctx.inner.headObject(bucket, key), pending);
    const space = resolveDeltaspace(policyFor(settings, bucket), key);
    const options = { bucket, key, space, spool, forget, sameWrite: { source, stillStored } };
    const stored = await commitArchiveOrBody(ctx, settings, options, plainMeta(source.meta));
    forget();
    if ("passthrough" in stored) {
      // A delta may be in already (its baseline was lost after its commit): it cannot be read.
      await dropConverted(ctx, pending);
      if (stored.passthrough === "codec_busy") return "retry";
      return await keep(ctx, pending, source, spool, stored.passthrough);
    }
    hooks.converted?.({ ...stored, key }, source);
    if (warms(ctx, stored, spool)) {
      warmed = true;
      warmRebuilt(ctx, bucket, key, spool, stored.meta.sha256);
    }
    return "converted";
  } catch (err) {
    if (isPreconditionFailed(err)) return "superseded"; // a newer write, or a delete, won
    if (err instanceof SvcError && err.code === "NoSuchBucket") return "superseded";
    log.warn("Background archive conversion failed; it is tried again later", {
      bucket,
      key,
      error: String(err),
    });
    return "retry";
  } finally {
    if (spool && !warmed) await removeQuietly(spool.path);
  }
}

/**
 * Removes the key's delta when it is this conversion's (the inline path stores the object
 * passthrough after such a delta, which then goes as the older name; a conversion ties with it).
 */
async function dropConverted(ctx: DeltaContext, pending: PendingArchive): Promise<void> {
  const delta = await ctx.inner.headObject(pending.bucket, storedNameFor(pending.key, "delta"));
  if (delta && isConversionOf(delta, pending)) {
    await deleteDelta(ctx, pending.bucket, pending.key, delta);
  }
}

/** Whether the stored delta `delta` is a conversion of the pending write. */
function isConversionOf(delta: ObjectInfo, pending: PendingArchive): boolean {
  const meta = delta.meta as DeltaMeta;
  return meta.sourceLastModified !== undefined && meta.sha256 === pending.sha256 &&
    String(writtenAtOf(delta)) === pending.writtenAt;
}

/**
 * The write stays passthrough: stored again as it is with the `storageReason` the inline path
 * would have given (diagnostics show it), replacing exactly the source (`If-Match`; a newer write
 * meanwhile wins) and keeping its place (its stamp, and its Last-Modified in
 * `sourceLastModified`). Not a metadata rewrite: an S3 backend's copy in place is conditional on
 * its source only, and could put this write back over a newer one.
 */
async function keep(
  ctx: DeltaContext,
  pending: PendingArchive,
  source: ObjectInfo,
  spool: Spool,
  reason: NonNullable<DeltaMeta["storageReason"]>,
): Promise<ConvertOutcome> {
  log.info("Archive stays stored as it came", { key: pending.key, reason });
  if (source.version === undefined) return "kept"; // no condition to write it back under
  const meta: DeltaMeta = {
    ...source.meta,
    storageReason: reason,
    sourceLastModified: String(sourceTimeOf(source)),
  };
  await storeFile(ctx, pending.bucket, pending.key, spool.path, meta, { ifMatch: source.version });
  return "kept";
}

/** The pending write's bytes in a spool file, checked against its sha256; null: not that write. */
async function download(ctx: DeltaContext, pending: PendingArchive): Promise<Spool | null> {
  const body = await ctx.inner.getObject(pending.bucket, pending.key);
  if (!body) return null;
  if (!holdsWrite(body.info, pending)) {
    await body.body.cancel().catch(() => {});
    return null;
  }
  const path = await Deno.makeTempFile({ dir: ctx.spoolDir, prefix: "convert-" });
  try {
    const hash = createHash("sha256");
    let size = 0;
    using file = await Deno.open(path, { write: true });
    for await (const chunk of body.body) {
      hash.update(chunk);
      size += chunk.length;
      let written = 0;
      while (written < chunk.length) written += await file.write(chunk.subarray(written));
    }
    if (hash.digest("hex") === pending.sha256 && size === body.info.meta.size) {
      return { path, size };
    }
    // Left as it is: reads of it answer 500, and the scrub reports it.
    log.error("A stored archive does not match its sha256; it is not converted", {
      bucket: pending.bucket,
      key: pending.key,
    });
  } catch (err) {
    await removeQuietly(path);
    throw err;
  }
  await removeQuietly(path);
  return null;
}
