/**
 * Reading a stored object from the tree: its metadata attribute, and the file holding its bytes
 * (a plain or nested object file, or a directory marker in either of its two forms).
 */

import type { ObjectMeta } from "../backend.ts";
import { fromStored, type StoredMeta } from "./fs-extents.ts";
import { readStoredMeta } from "./fs-meta-spill.ts";
import { MARKER_ENTRY } from "./fs-reserved.ts";
import { statOrNull } from "./fs-calls.ts";

export { META_XATTR } from "./fs-meta-spill.ts";

/**
 * The stored metadata of `path` (a record kept after the bytes read too: fs-meta-spill.ts); null
 * when it has none or vanished.
 */
export function readMeta(path: string): StoredMeta | null {
  return readStoredMeta(path);
}

/** A stored object: its metadata, and the file holding its bytes (none for an empty marker). */
export interface StoredObject {
  meta: ObjectMeta;
  storedSize: number;
  /** `size`: the file's, which is more than storedSize when metadata follows the bytes. */
  file?: { path: string; ino: number | null; size: number };
  /** The extents directory holding the bytes of a completed multipart upload (fs-extents.ts). */
  extents?: string;
}

/** The object in file `path` from its metadata attribute and stat (fs-extents' stored form). */
export function fileObject(
  stored: StoredMeta,
  path: string,
  stat: Pick<Deno.FileInfo, "size" | "ino">,
): StoredObject {
  const { meta, storedSize, extents } = fromStored(stored, stat.size);
  const found: StoredObject = { meta, storedSize, file: { path, ino: stat.ino, size: stat.size } };
  if (extents !== undefined) found.extents = extents;
  return found;
}

/**
 * The object in the regular file `path`; null when it is absent, not a file or no object. The
 * attribute is read first: for a path that is not there that is one syscall and no exception
 * (a thrown NotFound costs more than the syscall, and listings probe many absent paths).
 * `forOpen`: the caller will open the file expecting `file.ino`; then the stat comes first, so the
 * metadata read after it belongs to that inode, or the file was replaced and the open (which
 * checks the inode) fails and is retried. Metadata first, a replace in between could pair the
 * old metadata with the new inode.
 */
export function readFileObjectSync(path: string, forOpen = false): StoredObject | null {
  const first = forOpen ? statOrNull(path) : null;
  if (forOpen && !first?.isFile) return null;
  const meta = readMeta(path);
  if (!meta) return null;
  const stat = first ?? statOrNull(path);
  if (!stat?.isFile) return null;
  return fileObject(meta, path, stat);
}

/**
 * The directory marker of `dirPath`: the directory's own attribute (empty body) or the
 * MARKER_ENTRY file inside it (a body). While an overwrite that changes form is between its two
 * steps both exist, and the later one is the marker (the other is removed next). `markerEntry`
 * is whether the caller saw MARKER_ENTRY in the directory (undefined: not read, so look).
 */
export function readMarkerSync(
  dirPath: string,
  markerEntry?: boolean,
  forOpen = false,
): StoredObject | null {
  const own = readMeta(dirPath);
  const withBody = markerEntry === false
    ? null
    : readFileObjectSync(`${dirPath}/${MARKER_ENTRY}`, forOpen);
  if (own && (!withBody || own.lastModified > withBody.meta.lastModified)) {
    return statOrNull(dirPath)?.isDirectory ? { meta: own, storedSize: 0 } : null;
  }
  return withBody;
}

/**
 * The version token of a stored object (ObjectInfo.version): its inode (each commit renames a new
 * file into place), time and ETag, so a replace of the key gives another token.
 */
export function versionOf(found: StoredObject): string {
  return `${found.file?.ino ?? "m"}-${found.meta.lastModified}-${found.meta.etag}`;
}
