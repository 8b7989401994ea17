/**
 * Objects whose bytes are several files: a completed multipart upload keeps its parts as the
 * object's extents instead of copying them into one file, so CompleteMultipartUpload costs one
 * hard link per part instead of a rewrite of the whole object (5 GiB: ~30 s → milliseconds).
 *
 * Layout: `<root>/.svc/extents/<id>/00001 …` one file per part, in order, hard links of the
 * multipart store's part files (same filesystem, so a link is O(1) and the upload stays intact
 * until the object is committed: a crash before the commit loses nothing and the client's retry
 * of the Complete works). The directory's `user.svc.extent-owner` attribute names the bucket and
 * key it was made for. The object itself is an empty file at its usual path whose metadata
 * (`user.svc.meta`) carries `extents: <id>`; the rename of that file stays the single commit
 * point, exactly as for any other object.
 *
 * Lifetime: when an object with extents is deleted or replaced, its extents are released; a
 * release waits for reads of this process still streaming them (one process per data directory),
 * so a GET that started before an overwrite finishes with the version it started with. What a
 * crash leaves (extents made but never committed, or released but not yet removed) is found at
 * start: an extents directory its owner key does not point to is removed.
 */
import { getJsonXattr, setJsonXattr } from "../../native/mod.ts";
import type { ByteRange, LocalExtent, ObjectMeta } from "../backend.ts";
import { errorCode, fsyncDirectory, nullIfAbsent } from "./fs-calls.ts";
import { fileRangeStream, PRIVATE_DIR_MODE, privateDir } from "../../lib/mod.ts";
import { decodePartSizes } from "../part-sizes.ts";

/**
 * ObjectMeta as stored by the filesystem backend: plus the extents id of a multi-file object, and
 * where a record too large for the attribute lies in the object's file (fs-meta-spill.ts).
 */
export type StoredMeta = ObjectMeta & { extents?: string; spill?: Spill };

/** Where a spilled metadata record lies in the object's file (fs-meta-spill.ts). */
export interface Spill {
  /** The object's bytes: the file's first `body` bytes. */
  body: number;
  /** The record's offset: `body`, or after an earlier record (a rewrite in place). */
  at: number;
  length: number;
  /** Also in the record: a reader holding an older attribute sees the mismatch. */
  id: string;
}

const OWNER_XATTR = "user.svc.extent-owner";
const TEMP_PREFIX = ".tmp-";
const TRASH_PREFIX = ".trash-";
const ID_SHAPE = /^[0-9a-f-]{36}$/;

/**
 * The client-visible metadata and stored size of a stored record (extents and spill stripped: a
 * spilled record's bytes end where the record starts, not at the end of the file).
 */
export function fromStored(
  stored: StoredMeta,
  fileSize: number,
): { meta: ObjectMeta; storedSize: number; extents?: string } {
  if (stored.extents === undefined && stored.spill === undefined) {
    return { meta: stored, storedSize: fileSize };
  }
  const { extents, spill, ...meta } = stored;
  const storedSize = extents !== undefined ? meta.size : spill!.body;
  return extents === undefined ? { meta, storedSize } : { meta, storedSize, extents };
}

export class ExtentStore {
  /** Reads streaming each extents directory, and releases waiting for them to finish. */
  readonly #readers = new Map<string, number>();
  readonly #released = new Set<string>();

  private constructor(
    readonly dir: string,
    private readonly removeLater?: (path: string) => void,
  ) {}

  /**
   * Opens the store under `root` and removes what a crash left: staging and trash directories,
   * and extents whose owner key no longer points to them (`current` answers the extents id of
   * the object at bucket/key, or null). Only entries older than this process are judged: an
   * earlier open of the same root in this process may be completing uploads right now.
   */
  static async open(
    root: string,
    current: (bucket: string, key: string) => Promise<string | null>,
    /** Removes a trash directory after the request (retired-files.ts); inline without it. */
    removeLater?: (path: string) => void,
  ): Promise<ExtentStore> {
    const store = new ExtentStore(`${root}/.svc/extents`, removeLater);
    await privateDir(store.dir);
    for await (const entry of Deno.readDir(store.dir)) {
      const path = `${store.dir}/${entry.name}`;
      const stat = await Deno.lstat(path).catch(nullIfAbsent);
      if (!stat || (stat.mtime?.getTime() ?? 0) >= performance.timeOrigin) continue;
      let orphan = !ID_SHAPE.test(entry.name);
      if (!orphan) {
        const owner = getJsonXattr<{ bucket: string; key: string }>(path, OWNER_XATTR);
        orphan = owner === null ||
          await current(owner.bucket, owner.key).catch(() => entry.name) !== entry.name;
      }
      if (orphan) await Deno.remove(path, { recursive: true }).catch(nullIfAbsent);
    }
    return store;
  }

  /**
   * Hard-links the files, in order, into a new extents directory owned by bucket/key and makes
   * it durable. Returns its id, or null when the files live on another filesystem (the caller
   * then copies the bytes the ordinary way).
   */
  async link(
    sources: LocalExtent[],
    owner: { bucket: string; key: string },
  ): Promise<string | null> {
    const id = crypto.randomUUID();
    const staging = `${this.dir}/${TEMP_PREFIX}${id}`;
    await Deno.mkdir(staging, { mode: PRIVATE_DIR_MODE });
    try {
      for (const [index, source] of sources.entries()) {
        await Deno.link(source.path, `${staging}/${extentName(index)}`);
      }
      setJsonXattr(staging, OWNER_XATTR, owner);
      await fsyncDirectory(staging);
      await Deno.rename(staging, `${this.dir}/${id}`);
      await fsyncDirectory(this.dir);
      return id;
    } catch (err) {
      await Deno.remove(staging, { recursive: true }).catch(() => {});
      if (errorCode(err) === "EXDEV") return null;
      throw err;
    }
  }

  /**
   * Streams `range` (default: everything) of an object's extents. `meta.partSizes` locates a
   * range without touching the files; without it the extents are measured as they are passed.
   */
  open(id: string, meta: ObjectMeta, range?: ByteRange): ReadableStream<Uint8Array> {
    this.#acquire(id);
    const dir = `${this.dir}/${id}`;
    const known = meta.partSizes === undefined ? null : decodePartSizes(meta.partSizes);
    const count = meta.partsCount ?? known?.length;
    let remaining = range ? range.end - range.start + 1 : meta.size;
    let skip = range?.start ?? 0;
    let index = 0;
    let current: ReadableStreamDefaultReader<Uint8Array> | undefined;
    let finished = false;
    const finish = () => {
      if (finished) return;
      finished = true;
      this.#release(id);
    };
    const openNext = async (): Promise<ReadableStreamDefaultReader<Uint8Array>> => {
      for (;;) {
        if (count !== undefined && index >= count) {
          throw new Error(`Extents "${id}" ended ${remaining} bytes early`);
        }
        const path = `${dir}/${extentName(index)}`;
        const size = known?.[index] ?? (await Deno.stat(path)).size;
        index++;
        if (skip >= size) {
          skip -= size;
          continue;
        }
        const file = await Deno.open(path);
        const length = Math.min(size - skip, remaining);
        const stream = fileRangeStream(file, skip, length, size);
        skip = 0;
        remaining -= length;
        return stream.getReader();
      }
    };
    let pending = remaining;
    return new ReadableStream<Uint8Array>({
      async pull(controller) {
        try {
          for (;;) {
            if (current === undefined) {
              if (pending === 0) {
                finish();
                return controller.close();
              }
              current = await openNext();
            }
            const { done, value } = await current.read();
            if (!done) {
              pending -= value.byteLength;
              return controller.enqueue(value);
            }
            current = undefined;
          }
        } catch (err) {
          finish();
          throw err;
        }
      },
      async cancel(reason) {
        finish();
        await current?.cancel(reason);
      },
    }, { highWaterMark: 0 });
  }

  /** The object that used these extents is gone: remove them once no read streams them. */
  async release(id: string | undefined): Promise<void> {
    if (id === undefined || !ID_SHAPE.test(id)) return;
    if ((this.#readers.get(id) ?? 0) > 0) {
      this.#released.add(id);
      return;
    }
    await this.#remove(id);
  }

  #acquire(id: string): void {
    this.#readers.set(id, (this.#readers.get(id) ?? 0) + 1);
  }

  #release(id: string): void {
    const left = (this.#readers.get(id) ?? 1) - 1;
    if (left > 0) return void this.#readers.set(id, left);
    this.#readers.delete(id);
    if (this.#released.delete(id)) void this.#remove(id).catch(() => {}); // swept at start else
  }

  async #remove(id: string): Promise<void> {
    // Renamed first, so a crash mid-removal leaves a trash directory, never half an object.
    const trash = `${this.dir}/${TRASH_PREFIX}${id}`;
    try {
      await Deno.rename(`${this.dir}/${id}`, trash);
    } catch (err) {
      if (errorCode(err) === "ENOENT") return;
      throw err;
    }
    // Freeing a large object's blocks takes ~0.35 ms per MiB here: not on the request's path.
    if (this.removeLater) this.removeLater(trash);
    else await Deno.remove(trash, { recursive: true });
  }
}

function extentName(index: number): string {
  return String(index + 1).padStart(5, "0");
}
