/**
 * Reading objects of the filesystem backend: HEAD and GET. A GET reads from one open inode, so
 * a commit replacing the file meanwhile cannot mix versions; a small plain object is read in one
 * pass over one descriptor.
 */

import {
  bytesStream,
  emptyStream,
  fileRangeStream,
  openIfUnchanged,
  readRangeSync,
  SMALL_BODY_BYTES,
  SvcError,
} from "../../lib/mod.ts";
import type { ByteRange, ObjectBody, ObjectInfo } from "../backend.ts";
import { withRegularFile } from "../../native/mod.ts";
import type { BucketDirectories } from "./fs-buckets.ts";
import type { ExtentStore, StoredMeta } from "./fs-extents.ts";
import { locateObjectSync, objectPath, type ParsedKey, parseKeyOrNull } from "./fs-keys.ts";
import { META_XATTR, type StoredObject, versionOf } from "./fs-object-meta.ts";

/** Reads retried when a commit keeps replacing the file between reading metadata and opening. */
export const READ_ATTEMPTS = 5;

/**
 * An object with the file holding its bytes (path and inode; none for an empty marker) and the
 * extents a multipart object keeps its bytes in.
 */
export interface FoundObject {
  info: ObjectInfo;
  ino: StoredObject["file"];
  extents?: string;
}

/** The object of `parsed` in `bucketDir`, or null when absent or not an object. */
export function readObject(bucketDir: string, parsed: ParsedKey): FoundObject | null {
  const found = locateObjectSync(bucketDir, parsed);
  if (!found) return null;
  const info = {
    key: parsed.key,
    storedSize: found.storedSize,
    meta: found.meta,
    version: versionOf(found),
  };
  return { info, ino: found.file, extents: found.extents };
}

export class ObjectReader {
  constructor(
    private readonly buckets: BucketDirectories,
    private readonly extents: ExtentStore,
  ) {}

  async head(bucket: string, key: string): Promise<ObjectInfo | null> {
    const parsed = parseKeyOrNull(key);
    const found = parsed ? readObject(this.buckets.dir(bucket), parsed) : null;
    if (!found) await this.buckets.require(bucket);
    return found?.info ?? null;
  }

  async get(bucket: string, key: string, range?: ByteRange): Promise<ObjectBody | null> {
    const parsed = parseKeyOrNull(key);
    const small = parsed && this.readSmall(bucket, parsed, range);
    if (small) return small;
    for (let attempt = 0; parsed && attempt < READ_ATTEMPTS; attempt++) {
      const found = readObject(this.buckets.dir(bucket), parsed);
      if (!found) break;
      const { info, ino, extents } = found;
      const start = range?.start ?? 0;
      const end = range?.end ?? info.storedSize - 1;
      if (range && (start < 0 || end < start || end >= info.storedSize)) {
        throw new SvcError("InvalidRange", `Range ${start}-${end} is outside object "${key}"`);
      }
      if (!ino) return { info, body: emptyStream() }; // an empty marker: the directory itself
      const file = openIfUnchanged(ino.path, ino.ino);
      if (file && extents !== undefined) {
        // Open (and protect) the extents before letting go of the entry that names them.
        const body = this.extents.open(extents, info.meta, range && { start, end });
        file.close();
        return { info, body };
      }
      if (file && end - start + 1 <= SMALL_BODY_BYTES) {
        return smallBody(info, readRangeSync(file, start, end - start + 1));
      }
      if (file) {
        // The file's own size: a read to its end may stream it whole, which must not include
        // a metadata record kept after the bytes (fs-meta-spill.ts).
        return { info, body: fileRangeStream(file, start, end - start + 1, ino.size) };
      }
      if (attempt === READ_ATTEMPTS - 1) {
        throw new SvcError("SlowDown", `Object "${key}" is being replaced too often to be read`);
      }
    }
    await this.buckets.require(bucket);
    return null;
  }

  /**
   * The common small GET in one pass over one descriptor (fd-read.ts): a plain key whose file
   * holds a passthrough object of at most SMALL_BODY_BYTES in the requested range. Metadata,
   * size and bytes come from the one open inode, so a concurrent replace cannot mix versions.
   * null for anything else (absent, nested, a marker, extents, a larger read): the general path.
   */
  private readSmall(
    bucket: string,
    parsed: ParsedKey,
    range: ByteRange | undefined,
  ): ObjectBody | null {
    if (parsed.marker) return null;
    return withRegularFile(objectPath(this.buckets.dir(bucket), parsed), (file) => {
      const raw = file.attribute(META_XATTR);
      if (raw === null) return null;
      const stored = JSON.parse(utf8.decode(raw)) as StoredMeta;
      // Extents, or a record after the bytes (fs-meta-spill.ts): the general path.
      if (stored.extents !== undefined || stored.spill !== undefined) return null;
      const info: ObjectInfo = { key: parsed.key, storedSize: file.size, meta: stored };
      const start = range?.start ?? 0;
      const end = range?.end ?? file.size - 1;
      if (range && (start < 0 || end < start || end >= file.size)) {
        throw new SvcError(
          "InvalidRange",
          `Range ${start}-${end} is outside object "${parsed.key}"`,
        );
      }
      if (end - start + 1 > SMALL_BODY_BYTES) return null;
      return smallBody(info, file.read(start, end - start + 1));
    });
  }
}

const utf8 = new TextDecoder();

/**
 * A small body already read. Its stream is made only if a caller asks for it: the HTTP answer
 * sends `bytes` with the headers, and building an unused ReadableStream per GET was measurable.
 */
function smallBody(info: ObjectInfo, bytes: Uint8Array<ArrayBuffer>): ObjectBody {
  let stream: ReadableStream<Uint8Array> | undefined;
  return {
    info,
    bytes,
    get body() {
      return stream ??= bytesStream(bytes);
    },
  };
}
