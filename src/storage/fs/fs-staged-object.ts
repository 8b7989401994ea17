/**
 * A staged upload of the filesystem backend, waiting for its commit: a temp file in
 * `<root>/.svc/tmp/` (same filesystem as the buckets) whose rename into place is the single
 * commit point, or an empty directory marker, committed by setting the directory's attribute.
 */

import { KeyLock, SvcError } from "../../lib/mod.ts";
import type { ObjectMeta, StagedObject, WriteCondition } from "../backend.ts";
import type { EarlyWriteback } from "./early-writeback.ts";
import type { ExtentStore, StoredMeta } from "./fs-extents.ts";
import {
  locateObjectSync,
  type ParsedKey,
  placeFile,
  placeMarker,
  type Placement,
} from "./fs-keys.ts";
import { fitsAttribute, writeNewMetaSync } from "./fs-meta-spill.ts";
import { type StoredObject, versionOf } from "./fs-object-meta.ts";
import { RETIRE_MIN_BYTES, type RetiredFiles } from "./retired-files.ts";

/** What a commit works with besides the upload itself: the backend's shared stores. */
export interface CommitContext extends Placement {
  extents: ExtentStore;
  retired: RetiredFiles;
}

/** The staged temp file of `parsed`, holding `size` bytes (or naming `extents`). */
export function stagedFile(
  context: CommitContext,
  bucketDir: string,
  parsed: ParsedKey,
  tmpPath: string,
  file: Deno.FsFile,
  size: number,
  extents?: string,
  /** Early syncs of the bytes (large bodies): settled before the commit's fsync. */
  writeback?: EarlyWriteback,
): StagedObject {
  // "refused": a commit failed on its condition; the temp file stays for another commit.
  let state: "staged" | "refused" | "failed" | "done" = "staged";
  let open = true;
  const bodyBytes = extents === undefined ? size : 0;
  const closeFile = () => {
    if (open) file.close();
    open = false;
  };
  const commitOnce = async (meta: ObjectMeta, condition?: WriteCondition) => {
    if (state !== "staged" && state !== "refused") {
      throw new Error(`Staged object "${parsed.key}" was already used`);
    }
    if (state === "refused") {
      // The refused commit's record is replaced: anything it spilled after the bytes goes.
      file = await Deno.open(tmpPath, { read: true, write: true });
      open = true;
      await file.truncate(bodyBytes);
    }
    state = "failed"; // until the rename succeeds; abort() then still cleans up
    // Metadata first, so one fsync makes bytes and metadata durable before the name exists.
    // A record too large for the attribute goes after the bytes (the file of an object kept as
    // extents holds none).
    const stored: StoredMeta = extents === undefined ? meta : { ...meta, extents };
    writeNewMetaSync(tmpPath, file, bodyBytes, stored);
    await writeback?.settle();
    await file.sync();
    closeFile();
    const place = async () => {
      // The object this commit replaces may have extents: released once the rename is done.
      const replaced = locateObjectSync(bucketDir, parsed);
      checkCondition(parsed.key, replaced, condition);
      // A large replaced file keeps a second name, so the rename does not free its blocks.
      const held = replaced?.file && replaced.extents === undefined &&
          replaced.storedSize >= RETIRE_MIN_BYTES
        ? await context.retired.hold(replaced.file.path)
        : null;
      try {
        await placeFile(tmpPath, bucketDir, parsed, context);
      } finally {
        if (held !== null) context.retired.release(held);
      }
      state = "done";
      if (replaced?.extents !== extents) await context.extents.release(replaced?.extents);
      if (!condition) return { key: parsed.key, storedSize: size, meta };
      const placed = locateObjectSync(bucketDir, parsed);
      const version = placed ? { version: versionOf(placed) } : {};
      return { key: parsed.key, storedSize: size, meta, ...version };
    };
    // One process per root: a key lock makes the check and the rename one step for every
    // conditional commit of the key (unconditional ones need no check).
    return condition ? await underConditionLock(bucketDir, parsed.key, place) : await place();
  };
  return {
    size,
    commit: async (meta, condition) => {
      try {
        return await commitOnce(meta, condition);
      } catch (err) {
        // Refused before anything moved: the staged bytes may be committed again (backend.ts).
        const refused = err instanceof SvcError && err.code === "PreconditionFailed";
        if (refused && state === "failed") state = "refused";
        throw err;
      }
    },
    abort: async () => {
      if (state === "done") return;
      state = "done";
      await writeback?.settle().catch(() => {});
      closeFile();
      await Deno.remove(tmpPath).catch(() => {});
      await context.extents.release(extents);
    },
  };
}

const conditionLocks = new KeyLock();

/**
 * Runs `fn` under the lock every conditional commit of the key takes, so a conditional delete's
 * check and unlink are one step for them too (one process per root).
 */
export function underConditionLock<T>(bucketDir: string, key: string, fn: () => Promise<T>) {
  return conditionLocks.run(`${bucketDir}\0${key}`, fn);
}

/** Throws PreconditionFailed when `condition` does not hold for the stored object `current`. */
export function checkCondition(
  key: string,
  current: StoredObject | null,
  condition: WriteCondition | undefined,
): void {
  if (!condition) return;
  const holds = "ifNoneMatch" in condition
    ? current === null
    : current !== null && versionOf(current) === condition.ifMatch;
  if (holds) return;
  const header = "ifNoneMatch" in condition ? "If-None-Match" : "If-Match";
  throw new SvcError("PreconditionFailed", `Write of "${key}" refused: ${header} did not hold`, {
    Condition: header,
  });
}

/**
 * An empty directory marker: nothing to stage, the commit sets the directory's attribute. Metadata
 * too large for an attribute makes it a marker file without bytes instead (markerFileOfMeta).
 */
export function stagedMarker(
  placement: Placement,
  bucketDir: string,
  parsed: ParsedKey,
  tmpDir: string,
): StagedObject {
  let used = false;
  return {
    size: 0,
    commit: async (meta, condition) => {
      if (used) throw new Error(`Staged object "${parsed.key}" was already used`);
      used = true;
      checkCondition(parsed.key, locateObjectSync(bucketDir, parsed), condition);
      if (fitsAttribute(meta)) await placeMarker(bucketDir, parsed, meta, placement);
      else await placeFile(await markerFileOfMeta(tmpDir, meta), bucketDir, parsed, placement);
      return { key: parsed.key, storedSize: 0, meta };
    },
    abort: () => {
      used = true;
      return Promise.resolve();
    },
  };
}

/**
 * A staged file of no bytes whose metadata is `meta`, for an empty marker whose metadata does not
 * fit in the directory's attribute: placed as MARKER_ENTRY, it is the marker (fs-nesting.ts).
 */
export async function markerFileOfMeta(tmpDir: string, meta: StoredMeta): Promise<string> {
  const tmpPath = `${tmpDir}/${crypto.randomUUID()}.put`;
  const file = await Deno.open(tmpPath, { write: true, createNew: true });
  try {
    writeNewMetaSync(tmpPath, file, 0, meta);
    await file.sync();
    return tmpPath;
  } catch (err) {
    await Deno.remove(tmpPath).catch(() => {});
    throw err;
  } finally {
    file.close();
  }
}
