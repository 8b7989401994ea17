/**
 * Archive-aware deltas in the write and read paths (issue 28). A compressed archive (gzip or zip
 * family, see archive/archive-codec.ts) is encoded in its token form, where unchanged content
 * keeps unchanged bytes between versions; the delta's metadata says so (`transform`), and a read
 * contracts the decoded token form back into the exact original bytes.
 *
 * An archive is stored this way only after the PUT rebuilt it from its token form and the rebuilt
 * bytes matched the object's size and sha256; any other outcome stores it passthrough with the
 * reason `archive_not_rebuildable` (a later version can still be a delta). Expansion and the
 * check hold a codec slot: they are CPU work like an encode (in a worker, off the event loop).
 */

import { createHash } from "node:crypto";
import { SvcError } from "../lib/mod.ts";
import {
  archiveFormatOf,
  contractArchive,
  expandArchive,
  type MemoStream,
  type StreamMemo,
} from "./archive/archive-codec.ts";
import type { DeltaContext, DeltaSettings } from "./delta-context.ts";
import { removeQuietly } from "./delta-context.ts";
import { getLogger } from "../observability/mod.ts";

const log = getLogger("svc::delta");

/** A local file of known size (live-encode.ts's Spool, named here without importing it). */
type Spool = { path: string; size: number };

/**
 * Extra time an archive's expansion or contraction may take beyond `codec_timeout_secs`: 50 ms
 * per MB (20 MB/s, half the slowest rate measured for jars of many small members), so the
 * timeout bounds a stuck job, not a large archive.
 */
export function archiveAllowanceMs(bytes: number): number {
  return Math.ceil(bytes / 20_000);
}

/** The `transform` of a delta (and a baseline) stored in archive token form. */
export const ARCHIVE_TOKENS = "archive-tokens-1";

/** What an archive PUT encodes: its token form. */
export interface ArchiveForm {
  spool: Spool;
  /** The token form's digests, computed once when first asked (a new baseline needs them). */
  digests(): Promise<{ sha256: string; md5: string }>;
  transform: typeof ARCHIVE_TOKENS;
  /** Its predicted records' streams in the archive (a new baseline remembers them). */
  streams?: MemoStream[];
}

export type ArchivePreparation =
  | ArchiveForm
  | { passthrough: "archive_not_rebuildable" | "codec_busy" }
  | null; // not an archive, or nothing in it to expand: the raw bytes are encoded as they are

/** Whether the key names an archive whose deltas are made in token form. */
export function isArchiveKey(key: string): boolean {
  return archiveFormatOf(key) !== null;
}

/**
 * The token form of the archive in `spool`, checked to rebuild `expected` exactly. The caller
 * removes `form.spool.path` when done.
 */
export async function prepareArchiveForm(
  ctx: DeltaContext,
  settings: DeltaSettings,
  key: string,
  spool: Spool,
  expected: { size: number; sha256: string },
): Promise<ArchivePreparation> {
  const format = archiveFormatOf(key);
  if (format === null) return null;
  const permit = await ctx.pool.acquireWithin(undefined, settings.codecSlotWaitMs);
  if (!permit) return { passthrough: "codec_busy" };
  const formPath = await Deno.makeTempFile({ dir: ctx.spoolDir, prefix: "form-" });
  const checkPath = await Deno.makeTempFile({ dir: ctx.spoolDir, prefix: "check-" });
  let keep = false;
  try {
    return await ctx.pool.run(async (signal) => {
      const expanded = await expandArchive(format, spool.path, formPath, signal);
      if (!expanded.ok) {
        log.info("Archive is not representable in token form; storing it as it is", {
          key,
          reason: expanded.reason,
        });
        return { passthrough: "archive_not_rebuildable" as const };
      }
      if (expanded.deflateStreams === 0) return null;
      let rebuilt: { size: number; sha256: string };
      try {
        rebuilt = await contractArchive(formPath, checkPath, signal);
      } catch (err) {
        if (!(err instanceof SvcError)) throw err;
        log.warn("Archive token form did not rebuild; storing it as it is", { key, error: err });
        return { passthrough: "archive_not_rebuildable" as const };
      }
      if (rebuilt.size !== expected.size || rebuilt.sha256 !== expected.sha256) {
        log.warn("Archive rebuilt from its token form differs; storing it as it is", { key });
        return { passthrough: "archive_not_rebuildable" as const };
      }
      keep = true;
      let hashed: Promise<{ sha256: string; md5: string }> | undefined;
      return {
        spool: { path: formPath, size: expanded.expandedSize },
        digests: () => hashed ??= hashFile(formPath),
        transform: ARCHIVE_TOKENS,
        streams: expanded.streams,
      };
    }, { timeoutMs: settings.codecTimeoutMs + 2 * archiveAllowanceMs(spool.size), permit });
  } finally {
    await removeQuietly(checkPath);
    if (!keep) await removeQuietly(formPath);
  }
}

/**
 * A baseline made from an archive keeps the archive's own bytes (a lone archive then costs no more
 * than itself: its token form is ~1.43x larger, and larger than the archive even compressed);
 * the codecs use its token form, derived on use and cached (delta-read.ts). Its metadata:
 * `baselineForm: "archive-tokens-1"`, `formSha256` and `formSize` of the token form. A baseline
 * without `baselineForm` is used as stored (older baselines are token forms themselves).
 */
export interface BaselineForm {
  transform: typeof ARCHIVE_TOKENS;
  sha256: string;
  size: number;
}

/** The derived form a baseline's codecs use, from its metadata; null: its stored bytes. */
export function baselineFormOf(meta: object): BaselineForm | null {
  const { baselineForm, formSha256, formSize } = meta as Record<string, unknown>;
  if (baselineForm === undefined) return null;
  if (baselineForm !== ARCHIVE_TOKENS || typeof formSha256 !== "string") {
    throw new SvcError("InternalError", `Unknown baseline form "${String(baselineForm)}"`);
  }
  return { transform: ARCHIVE_TOKENS, sha256: formSha256, size: Number(formSize) };
}

/**
 * The metadata fields that record a baseline's derived form. Strings only: an S3 backend stores
 * extra fields as `x-amz-meta-svc-x-*` headers (storage/s3/s3-meta.ts).
 */
export function baselineFormFields(form: { sha256: string; size: number }) {
  return { baselineForm: ARCHIVE_TOKENS, formSha256: form.sha256, formSize: String(form.size) };
}

/**
 * The container the file at `path` starts like: gzip's magic, a zip's first local header, or
 * null (not an archive, whatever its name says).
 */
export async function containerOf(path: string): Promise<"gzip" | "zip" | null> {
  const head = new Uint8Array(4);
  using file = await Deno.open(path, { read: true });
  let got = 0;
  while (got < head.length) {
    const n = await file.read(head.subarray(got));
    if (n === null) break;
    got += n;
  }
  if (got >= 2 && head[0] === 0x1f && head[1] === 0x8b) return "gzip";
  if (got === 4 && head[0] === 0x50 && head[1] === 0x4b && head[2] === 3 && head[3] === 4) {
    return "zip";
  }
  return null;
}

/**
 * Writes the token form of the archive at `rawPath` to `outPath` (the container sniffed from its
 * first bytes: gzip's magic, else zip). The caller checks the result's sha256 against the
 * recorded one; an archive that does not expand rejects. Answers the form's predicted streams
 * (archive/stream-memo.ts).
 */
export async function deriveTokenForm(
  rawPath: string,
  outPath: string,
  signal?: AbortSignal,
): Promise<MemoStream[] | undefined> {
  const format = (await containerOf(rawPath)) === "gzip" ? "gzip" : "zip";
  const expanded = await expandArchive(format, rawPath, outPath, signal);
  if (!expanded.ok) {
    throw new SvcError("InternalError", `Baseline archive does not expand: ${expanded.reason}`);
  }
  return expanded.streams;
}

/**
 * Decodes a delta whose metadata has `transform` into `outPath`: `decode` writes the token form
 * to a file in `scratchDir`, which is contracted into `outPath` (the caller hashes `outPath` as for
 * any rebuilt object), copying the streams `memo` knows from its baseline archive (`copied`
 * counts them). An unknown transform is an error, never bytes.
 */
export async function decodeTransformed(
  scratchDir: string,
  transform: string,
  outPath: string,
  decode: (path: string) => Promise<void>,
  signal?: AbortSignal,
  memo?: StreamMemo,
): Promise<{ copied: number }> {
  if (transform !== ARCHIVE_TOKENS) {
    throw new SvcError("InternalError", `Unknown delta transform "${transform}"`);
  }
  const formPath = await Deno.makeTempFile({ dir: scratchDir, prefix: "form-" });
  try {
    await decode(formPath);
    return await contractArchive(formPath, outPath, signal, memo);
  } finally {
    await removeQuietly(formPath);
  }
}

async function hashFile(path: string): Promise<{ sha256: string; md5: string }> {
  const sha256 = createHash("sha256");
  const md5 = createHash("md5");
  const file = await Deno.open(path, { read: true });
  for await (const chunk of file.readable) { // the stream closes the file
    sha256.update(chunk);
    md5.update(chunk);
  }
  return { sha256: sha256.digest("hex"), md5: md5.digest("hex") };
}
