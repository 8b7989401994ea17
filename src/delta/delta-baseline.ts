/**
 * Encoding one eligible object under its deltaspace lock: the encode itself (timed, in a codec
 * slot), the first object of a deltaspace, which becomes its baseline plus a tiny delta, and the
 * object that re-baselines a group: the same, in a new generation folder (groups/generations.ts).
 * A baseline is created only where none exists (`If-None-Match: *`, baseline-guard.ts): another
 * instance may win the race, and the caller then encodes against the winner's.
 */

import type { ObjectInfo, ObjectMeta } from "../storage/mod.ts";
import {
  countStrike,
  currentGeneration,
  deltaGrown,
  groupRootOf,
  nextGenerationFolder,
  noteGeneration,
} from "./groups/generations.ts";
import { getLogger } from "../observability/mod.ts";
import type { EncodeResult } from "./codec/codec.ts";
import type { CodecPermit } from "./codec/codec-pool.ts";
import { referenceNameFor } from "./layout.ts";
import {
  type DeltaContext,
  type DeltaMeta,
  type DeltaSettings,
  internalError,
  removeQuietly,
} from "./delta-context.ts";
import { fileStream, storeDelta, type Target } from "./delta-stored.ts";
import { baselineStillHeld, createBaselineFile } from "./fleet/baseline-guard.ts";
import { removeBaselineIfUnused } from "./delta-cleanup.ts";
import { type ArchiveForm, baselineFormFields } from "./archive-form.ts";
import { identityDelta } from "./codec/codec-choice.ts";
import { seedDerivedBaseline } from "./delta-read.ts";
import type { Spool } from "./live-encode.ts";

/**
 * What is encoded: the spooled body itself, or an archive's token form (archive-form.ts), and the
 * digests of those bytes, asked for only when they become a new baseline (a token form is hashed
 * then, not on every PUT).
 */
export type EncodeInput = {
  spool: Spool;
  digests(): Promise<{ sha256: string; md5: string }>;
  transform?: ArchiveForm["transform"];
  /** The bucket's `delta_codec` (codec/codec-choice.ts). */
  codecSetting?: string;
  /** An archive's own bytes beside its token form (a new baseline keeps them). */
  original?: { spool: Spool; sha256: string; md5: string };
  /** The token form's predicted streams in the archive (ArchiveForm). */
  streams?: ArchiveForm["streams"];
};

/** Encodes the input's spool against `reference` with the codec chosen for it (in a slot). */
export async function encodeWith(
  ctx: DeltaContext,
  permit: CodecPermit,
  reference: string,
  input: EncodeInput,
  timeoutMs: number,
  maxDeltaBytes?: number,
): Promise<EncodeResult> {
  const { spool } = input;
  const baselineBytes = await Deno.stat(reference).then((s) => s.size, () => 0);
  const chosen = ctx.codecs.chooseEncoder({
    setting: input.codecSetting,
    transform: input.transform,
    baselineBytes,
    targetBytes: spool.size,
  });
  if (chosen.fallback) log.debug(`Delta written by xdelta3: ${chosen.fallback}`);
  const started = performance.now();
  try {
    const result = await ctx.pool.run(
      async (signal) =>
        chosen.encode(reference, await fileStream(spool.path), { maxDeltaBytes, signal }),
      { timeoutMs, permit },
    );
    ctx.observer?.encoded((performance.now() - started) / 1000);
    return result;
  } finally {
    chosen.release();
  }
}

/**
 * Why createBaselineAndDelta stored no delta: `lost`, another instance created the baseline
 * first (nothing was stored); `unheld`, the new baseline was retired or replaced by another
 * instance right after it was made, so the delta just stored cannot be trusted (the caller
 * stores the object otherwise, which cleans that delta up).
 */
export type NotCreated = "lost" | "unheld";

/**
 * The first eligible object of a deltaspace: baseline plus a tiny delta. Under the lock.
 */
export async function createBaselineAndDelta(
  ctx: DeltaContext,
  permit: CodecPermit,
  bucket: string,
  key: string,
  target: Target,
  input: EncodeInput,
  meta: ObjectMeta,
  timeoutMs: number,
): Promise<ObjectInfo | NotCreated> {
  const { spool } = input;
  const form = await input.digests();
  // An archive's baseline keeps the archive's own bytes; its codecs use the token form, derived
  // on use (archive-form.ts BaselineForm), and the object is that baseline: an empty delta.
  const original = input.transform && input.original?.sha256 ? input.original : undefined;
  const { sha256, md5 } = original ?? form;
  const source = original?.spool ?? spool;
  const referenceName = referenceNameFor(target.space.folder);
  const referenceMeta: ObjectMeta = {
    size: source.size,
    etag: md5 || meta.etag,
    md5,
    sha256,
    contentType: "application/octet-stream",
    userMeta: {},
    headers: {},
    lastModified: Date.now(),
    storage: "reference",
    deltaGroup: target.space.label,
    ...(original
      ? baselineFormFields({ sha256: form.sha256, size: spool.size })
      : input.transform
      ? { transform: input.transform }
      : {}),
  } as DeltaMeta;
  const stored = await createBaselineFile(ctx, bucket, referenceName, source.path, referenceMeta);
  if (stored === "lost") return "lost";
  if (original) {
    await seedDerivedBaseline(ctx, bucket, target.space.folder, stored, spool.path, input.streams);
  }
  try {
    const encoded = original
      ? await identityDelta(ctx.spoolDir)
      : await encodeWith(ctx, permit, spool.path, input, timeoutMs);
    if (encoded.aborted) throw internalError("Delta codec aborted an unbounded encode");
    try {
      const info = await storeDelta(
        ctx,
        bucket,
        key,
        target,
        encoded.deltaPath,
        meta,
        sha256,
        "new_baseline",
        encoded.codec,
      );
      if (!(await baselineStillHeld(ctx, bucket, target.space.folder, sha256))) return "unheld";
      // What the baseline really takes (storage compression may have shrunk it).
      const baselineBytes = stored.storedSize;
      ctx.observer?.decision(
        "reference",
        meta.size,
        info.storedSize + baselineBytes,
        "new_baseline",
      );
      return { ...info, debug: { ...info.debug, decision: "reference", baselineBytes } };
    } finally {
      await removeQuietly(encoded.deltaPath);
    }
  } catch (err) {
    // Another instance may already encode against it: removed only when nothing uses it.
    await removeBaselineIfUnused(ctx, bucket, target.space.folder).catch(() => {});
    throw err;
  }
}

const log = getLogger("svc::delta");

/**
 * The baseline a commit encodes against, read under the deltaspace lock (a failed HEAD or LIST
 * throws: error is not absence). For a group, `target.space` moves to its current generation
 * folder, where the baseline is (or, when null, is created).
 */
export async function currentBaseline(
  ctx: DeltaContext,
  bucket: string,
  target: Target,
): Promise<ObjectInfo | null> {
  if (!target.space.grouped) {
    return await ctx.inner.headObject(bucket, referenceNameFor(target.space.folder));
  }
  const current = await currentGeneration(ctx, bucket, groupRootOf(target.space.folder));
  target.space = { ...target.space, folder: current.folder };
  return current.reference;
}

/**
 * Whether an encode against a group's current baseline completes a streak of grown deltas, so
 * the object should start a new generation (groups/generations.ts). Under the lock.
 */
export function rebaselineDue(
  ctx: DeltaContext,
  bucket: string,
  target: Target,
  encoded: EncodeResult,
  size: number,
  baseline?: ObjectInfo | null,
): boolean {
  if (!target.space.grouped) return false; // parent folders keep their single baseline
  // A new baseline stores about as much of the object as the current one does of its own.
  const stored = baseline && baseline.meta.size > 0
    ? Math.min(1, baseline.storedSize / baseline.meta.size)
    : 1;
  const cost = {
    deltaBytes: encoded.aborted ? size : encoded.deltaBytes, // cut off: stored whole
    size,
    baselineCost: size * stored,
  };
  return countStrike(ctx, bucket, target.space.folder, deltaGrown(encoded, size), cost);
}

/**
 * The object becomes the baseline of a new generation of its group (plus a tiny delta against
 * it); later versions encode against it. Deltas of older generations keep theirs. Runs in a codec
 * slot of its own (the encode that struck has freed its slot), waited for like a PUT's: null when
 * none frees in time, and the caller keeps the delta it has. Under the lock.
 */
export async function rebaseline(
  ctx: DeltaContext,
  settings: DeltaSettings,
  bucket: string,
  key: string,
  target: Target,
  input: EncodeInput,
  meta: ObjectMeta,
): Promise<ObjectInfo | null> {
  const permit = await ctx.pool.acquireWithin(undefined, settings.codecSlotWaitMs);
  if (!permit) return null;
  try {
    const from = target.space.folder;
    const folder = await nextGenerationFolder(ctx, bucket, groupRootOf(from));
    const space = { ...target.space, folder };
    const fresh: Target = { space, sameWrite: target.sameWrite };
    const info = await createBaselineAndDelta(
      ctx,
      permit,
      bucket,
      key,
      fresh,
      input,
      meta,
      settings.codecTimeoutMs,
    );
    // Another instance started that generation first, or it did not hold: the caller keeps the
    // delta against the current one (which replaces a delta stored in the new folder) or stores
    // passthrough; either way the folder of the delta the new one replaced is released.
    if (info === "lost" || info === "unheld") {
      if (info === "unheld" && fresh.replaced !== undefined) target.replaced = fresh.replaced;
      return null;
    }
    target.space = space;
    if (fresh.replaced !== undefined) target.replaced = fresh.replaced;
    noteGeneration(ctx, bucket, folder);
    log.info("Deltas of a group grew: new baseline generation", {
      bucket,
      key,
      group: space.label,
      from,
      to: folder,
    });
    return info;
  } finally {
    permit.release();
  }
}
