/**
 * Object metadata too large for the metadata attribute. ext4 holds at most one block (~4 KiB) of
 * extended attributes per inode, and S3's limits allow more in one object: 2 KiB of user
 * metadata, ten tags of 128-character keys and 256-character values, long headers
 * (Content-Disposition). A record longer than SPILL_ABOVE bytes is kept in the object's own file,
 * after its bytes (the "spill"), and the attribute holds a small core naming where it is:
 * `spill: { body, at, length, id }`.
 *
 * In the same inode, the spill is written and fsynced with the object before its name exists,
 * moves with it (the nesting conversion hard-links the inode), is replaced with it and unlinked
 * with it: no lifetime of its own, no orphan, and no moment where a reader finds the object
 * without its metadata. Readers take the body's length from `spill.body`, never from the file size.
 *
 * Rewriting the record in place (tagging an existing object) puts the new record where no current
 * reader looks: before the current one when the space between the body and it is large enough,
 * else after it. Then fsync, the switch (one setxattr, atomic), and a truncation of what lies past
 * the new record, so a file holds at most two records. A reader that took the attribute before the
 * switch may find other bytes there: the record carries the id the attribute names, and a
 * mismatch (or a record cut short) reads the attribute again.
 */

import { SvcError } from "../../lib/mod.ts";
import { lookupXattr, setJsonXattr } from "../../native/mod.ts";
import type { Spill, StoredMeta } from "./fs-extents.ts";
import { isAbsentError } from "./fs-calls.ts";

/** The extended attribute holding an object's metadata (JSON StoredMeta, or a spilled core). */
export const META_XATTR = "user.svc.meta";

/**
 * Records up to this many bytes stay in the attribute alone. ext4 fits ~4,020 bytes of one
 * attribute in a 4 KiB block; the margin leaves room for other attributes (security labels).
 */
export const SPILL_ABOVE = 3072;

/** How often a reader takes the attribute again when its record was being rewritten. */
const SPILL_READ_ATTEMPTS = 5;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Whether `stored` fits in the attribute alone. */
export function fitsAttribute(stored: StoredMeta): boolean {
  const json = JSON.stringify(stored);
  // UTF-16 units: at most 3 UTF-8 bytes each, so short records need no encoding to measure.
  return json.length * 3 <= SPILL_ABOVE || encoder.encode(json).length <= SPILL_ABOVE;
}

/**
 * The metadata of the object at `path` (file or directory), spill resolved; null when it has
 * none or vanished. The result keeps `spill` (fromStored strips it) so the body's length is known.
 */
export function readStoredMeta(path: string): StoredMeta | null {
  for (let attempt = 0; attempt < SPILL_READ_ATTEMPTS; attempt++) {
    const raw = lookupXattr(path, META_XATTR);
    if (raw === null) return null;
    const stored = JSON.parse(decoder.decode(raw)) as StoredMeta;
    if (stored.spill === undefined) return stored;
    const full = readSpill(path, stored.spill);
    if (full !== null) return full;
  }
  throw new SvcError("SlowDown", `The metadata of "${path}" is being rewritten too often to read`);
}

/** The record `spill` names in the file at `path`; null when other bytes are there now. */
function readSpill(path: string, spill: Spill): StoredMeta | null {
  let file: Deno.FsFile;
  try {
    file = Deno.openSync(path, { read: true });
  } catch (err) {
    if (isAbsentError(err)) return null; // replaced or deleted: the attribute says which
    throw err;
  }
  try {
    const bytes = new Uint8Array(spill.length);
    file.seekSync(spill.at, Deno.SeekMode.Start);
    for (let offset = 0; offset < bytes.length;) {
      const n = file.readSync(bytes.subarray(offset));
      if (n === null) return null; // cut short by a rewrite
      offset += n;
    }
    const record = JSON.parse(decoder.decode(bytes)) as { id?: string; meta?: StoredMeta };
    if (record.id !== spill.id || !record.meta) return null;
    return { ...record.meta, spill };
  } catch (err) {
    if (err instanceof SyntaxError) return null; // torn by a rewrite
    throw err;
  } finally {
    file.close();
  }
}

/**
 * Sets the metadata of the new object file `path`, open as `file` and holding `bodyBytes` bytes
 * (nothing else yet): the attribute alone, or the record written after the bytes and the core
 * naming it. The caller's fsync of `file` makes both durable.
 */
export function writeNewMetaSync(
  path: string,
  file: Deno.FsFile,
  bodyBytes: number,
  stored: StoredMeta,
): void {
  if (fitsAttribute(stored)) return setJsonXattr(path, META_XATTR, stored);
  const { bytes, spill } = spillRecord(stored, bodyBytes, bodyBytes);
  writeAt(file, bytes, bodyBytes);
  setJsonXattr(path, META_XATTR, spilledCore(stored, spill));
}

/**
 * Rewrites the metadata of the object file `path` in place (see the header), provided it still
 * is inode `ino`: false when it was replaced (nothing changed that a reader can see). The record
 * is made durable before the switch; the caller makes the switch durable (fsync).
 */
export async function rewriteMetaInFile(
  path: string,
  /** null where the platform reports none: the caller's stillCurrent alone decides. */
  ino: number | null,
  bodyBytes: number,
  stored: StoredMeta,
  stillCurrent: () => boolean,
): Promise<boolean> {
  let file: Deno.FsFile;
  try {
    file = await Deno.open(path, { read: true, write: true });
  } catch (err) {
    if (isAbsentError(err)) return false;
    throw err;
  }
  try {
    if (ino !== null && (await file.stat()).ino !== ino) return false;
    if (fitsAttribute(stored)) {
      if (!stillCurrent()) return false;
      setJsonXattr(path, META_XATTR, stored);
      await file.truncate(bodyBytes); // the records after the bytes are no one's now
      return true;
    }
    const raw = lookupXattr(path, META_XATTR);
    const current = raw === null
      ? undefined
      : (JSON.parse(decoder.decode(raw)) as StoredMeta).spill;
    const { bytes } = spillRecord(stored, bodyBytes, 0);
    const at = current && current.at - bodyBytes >= bytes.length
      ? bodyBytes
      : current
      ? current.at + current.length
      : bodyBytes;
    const { bytes: record, spill } = spillRecord(stored, bodyBytes, at);
    writeAt(file, record, at);
    await file.sync();
    // Synchronous from the check to the switch: no commit of this process lands in between.
    if (!stillCurrent()) return false;
    setJsonXattr(path, META_XATTR, spilledCore(stored, spill));
    await file.truncate(at + record.length);
    return true;
  } finally {
    file.close();
  }
}

/** The record for `stored` at offset `at`: JSON of its id and the whole metadata. */
function spillRecord(
  stored: StoredMeta,
  body: number,
  at: number,
): { bytes: Uint8Array; spill: Spill } {
  const { spill: _, ...meta } = stored;
  const id = crypto.randomUUID();
  const bytes = encoder.encode(JSON.stringify({ id, meta }));
  return { bytes, spill: { body, at, length: bytes.length, id } };
}

/**
 * What the attribute holds beside a spill: where the record is, and the extents id, which
 * cleanup at start reads without resolving anything. Never used as metadata on its own.
 */
function spilledCore(stored: StoredMeta, spill: Spill): StoredMeta {
  const core = { spill } as StoredMeta;
  if (stored.extents !== undefined) core.extents = stored.extents;
  return core;
}

function writeAt(file: Deno.FsFile, bytes: Uint8Array, at: number): void {
  file.seekSync(at, Deno.SeekMode.Start);
  for (let offset = 0; offset < bytes.length;) {
    offset += file.writeSync(bytes.subarray(offset));
  }
}
