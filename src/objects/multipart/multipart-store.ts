/**
 * On-disk state of multipart uploads, so an upload started before a restart can be continued and
 * completed after it. Layout under the store directory (the server uses `<data>/.svc/multipart`):
 *
 *   <uploadId>/upload.json   the UploadRecord, written once
 *   <uploadId>/00001 … 10000 part bytes; xattr `user.svc.part` = {etag, size, lastModified,
 *                            keyId?}: with keyId, the bytes are sealed under that key (below)
 *   .tmp-*                   staging and trash; anything left by a crash is removed on open
 *
 * Every change becomes visible through one rename: an upload directory appears complete with its
 * record, a part file appears with its bytes fsynced and its xattr set (so re-uploading a part
 * replaces the old one atomically), and an aborted upload disappears in one step before its files
 * are deleted. Upload ids are checked against their generated shape before any path is built, so
 * a client-supplied id can never point outside the store.
 *
 * A part of a bucket whose backend encrypts is sealed on its way to disk (the backend's
 * ScratchSealer: the same frame format as its objects, one sealed "object" per part), so svc's
 * state directory never holds an encrypted backend's plaintext; etag and size are the
 * plaintext's. Reading it back (openPart) takes the sealer to open it.
 */

import {
  compareUtf8,
  fileRangeStream,
  PRIVATE_DIR_MODE,
  PRIVATE_FILE_MODE,
  privateDir,
  SvcError,
  syncDirectory as fsyncDirectory,
  writeAll,
  writeStreamToFile,
} from "../../lib/mod.ts";
import type { ScratchSealer, StoredHeader } from "../../storage/mod.ts";
import { getJsonXattr, setJsonXattr, XattrError } from "../../native/mod.ts";
import { checkedPart, type PutPartOptions } from "./part-receive.ts";
import { isUploadId, newUploadId, validatePartNumber } from "./upload-ids.ts";

export { isUploadId, MAX_PART_NUMBER, newUploadId, validatePartNumber } from "./upload-ids.ts";

const PART_XATTR = "user.svc.part";
/** svc's own files are its user's alone (lib/private-file.ts); extents link these files. */
const PRIVATE_NEW_FILE = { write: true, createNew: true, mode: PRIVATE_FILE_MODE };
const RECORD_FILE = "upload.json";
const TEMP_PREFIX = ".tmp-";
const PART_FILE_SHAPE = /^\d{5}$/;

export interface UploadRecord<M = unknown> {
  uploadId: string;
  bucket: string;
  key: string;
  /** Epoch milliseconds. */
  initiated: number;
  contentType: string;
  userMeta: Record<string, string>;
  headers: Partial<Record<StoredHeader, string>>;
  /** Object tags from CreateMultipartUpload's `x-amz-tagging`, applied at completion. */
  tags?: Record<string, string>;
  /** Whatever else the caller wants back at completion (e.g. object metadata). */
  meta?: M;
}

export type NewUpload<M = unknown> = Omit<UploadRecord<M>, "uploadId" | "initiated"> & {
  initiated?: number;
};

export interface PartInfo {
  partNumber: number;
  /** md5 hex of the part, without quotes. */
  etag: string;
  size: number;
  /** Epoch milliseconds. */
  lastModified: number;
  /** The key the part's bytes are sealed under; absent when they are stored as they are. */
  keyId?: string;
  /** Backend-resident parts: which stored version this is (backend-records.ts). */
  stored?: string;
}

export interface SweptUpload {
  uploadId: string;
  /** Absent when the record could not be read. */
  bucket?: string;
  key?: string;
  bytes: number;
  lastActivity: number;
}

export type SweepResult = { count: number; bytes: number; removed: SweptUpload[] };

export class MultipartStore<M = unknown> {
  readonly dir: string;

  private constructor(dir: string) {
    this.dir = dir;
  }

  /** Opens (creating if needed) the store and removes what a crash left half-written. */
  static async open<M = unknown>(dir: string): Promise<MultipartStore<M>> {
    const store = new MultipartStore<M>(dir.replace(/\/+$/, "") || "/");
    await privateDir(store.dir);
    await store.removeStaleTemps();
    return store;
  }

  async create(input: NewUpload<M>): Promise<UploadRecord<M>> {
    const record: UploadRecord<M> = {
      ...input,
      uploadId: newUploadId(),
      initiated: input.initiated ?? Date.now(),
    };
    if (record.meta === undefined) delete record.meta; // what get() would return
    const staging = `${this.dir}/${TEMP_PREFIX}${record.uploadId}`;
    await Deno.mkdir(staging, { mode: PRIVATE_DIR_MODE });
    try {
      const file = await Deno.open(`${staging}/${RECORD_FILE}`, PRIVATE_NEW_FILE);
      try {
        await writeAll(file, new TextEncoder().encode(JSON.stringify(record)));
        await file.sync();
      } finally {
        file.close();
      }
      await fsyncDirectory(staging);
      await Deno.rename(staging, this.uploadDir(record.uploadId));
      await fsyncDirectory(this.dir);
    } catch (err) {
      await Deno.remove(staging, { recursive: true }).catch(() => {});
      throw err;
    }
    return record;
  }

  /** The upload's record; null when there is no such upload (or the id is malformed). */
  async get(uploadId: string): Promise<UploadRecord<M> | null> {
    if (!isUploadId(uploadId)) return null;
    const path = `${this.uploadDir(uploadId)}/${RECORD_FILE}`;
    const text = await Deno.readTextFile(path).catch(nullIfAbsent);
    if (text === null) return null;
    // A record that does not parse is damage, not absence: say so rather than answer 404.
    const record = JSON.parse(text) as UploadRecord<M>;
    if (record?.uploadId !== uploadId) throw new Error(`Multipart record "${path}" is corrupt.`);
    return record;
  }

  /**
   * Streams one part to disk, hashing as it goes, and commits it by rename. Throws NoSuchUpload,
   * InvalidArgument (part number), EntityTooLarge, BadDigest, or the signal's reason; on any
   * failure nothing of this attempt remains and a previous upload of the part is untouched.
   */
  async putPart(
    uploadId: string,
    partNumber: number,
    body: ReadableStream<Uint8Array>,
    options: PutPartOptions & { sealer?: ScratchSealer | null } = {},
  ): Promise<PartInfo> {
    const { signal, sealer } = options;
    validatePartNumber(partNumber);
    await this.requireUpload(uploadId);
    const dir = this.uploadDir(uploadId);
    const name = partFileName(partNumber);
    const temp = `${dir}/${TEMP_PREFIX}${name}-${crypto.randomUUID()}`;
    const reader = body.getReader();
    // Cancelling the reader settles a read that waits on a stalled client.
    const onAbort = () => void reader.cancel(signal?.reason).catch(() => {});
    signal?.addEventListener("abort", onAbort, { once: true });
    let file: Deno.FsFile | undefined;
    try {
      signal?.throwIfAborted();
      file = await Deno.open(temp, PRIVATE_NEW_FILE).catch((err) => {
        throw err instanceof Deno.errors.NotFound ? noSuchUpload(uploadId) : err;
      });
      const part = checkedPart(reader, options);
      const keyId = sealer?.keyId;
      const stored = keyId === undefined ? part.body : await sealer!.seal(part.body);
      // Sealed batches are pooled buffers lent to their writer (encrypt-stream.ts): give them
      // back. The client's own chunks are left alone, as every part's were before.
      await writeStreamToFile(stored, file, signal, undefined, { recycle: keyId !== undefined });
      const { etag, size } = part.received();
      const info: PartInfo = {
        partNumber,
        etag,
        size,
        lastModified: Date.now(),
        ...(keyId !== undefined ? { keyId } : {}),
      };
      // Set before fsync so the attribute is as durable as the bytes, and before the rename so
      // the part never exists without it.
      const { partNumber: _, ...attribute } = info;
      setJsonXattr(temp, PART_XATTR, attribute);
      await file.sync();
      file.close();
      file = undefined;
      await Deno.rename(temp, `${dir}/${name}`).catch((err) => {
        throw err instanceof Deno.errors.NotFound ? noSuchUpload(uploadId) : err;
      });
      await fsyncDirectory(dir);
      return info;
    } catch (err) {
      file?.close();
      await reader.cancel().catch(() => {});
      await Deno.remove(temp).catch(() => {});
      throw err;
    } finally {
      signal?.removeEventListener("abort", onAbort);
    }
  }

  /** Parts uploaded so far, sorted by part number. Throws NoSuchUpload. */
  async listParts(uploadId: string): Promise<PartInfo[]> {
    await this.requireUpload(uploadId);
    const dir = this.uploadDir(uploadId);
    const parts: PartInfo[] = [];
    for await (const entry of Deno.readDir(dir)) {
      if (!entry.isFile || !PART_FILE_SHAPE.test(entry.name)) continue;
      let stored: Omit<PartInfo, "partNumber"> | null;
      try {
        stored = getJsonXattr(`${dir}/${entry.name}`, PART_XATTR);
      } catch (err) {
        if (err instanceof XattrError && err.notFound) continue; // removed meanwhile
        throw err;
      }
      if (stored === null) continue; // never renamed without it; only outside hands get here
      const { etag, size, lastModified, keyId } = stored;
      parts.push({
        partNumber: Number(entry.name),
        etag,
        size,
        lastModified,
        ...(keyId !== undefined ? { keyId } : {}),
      });
    }
    return parts.sort((a, b) => a.partNumber - b.partNumber);
  }

  /**
   * The plaintext of one part as a pull-based stream; null when the part (or upload) is absent.
   * A sealed part is opened by `sealer` (its bucket's); without one it is an InternalError.
   */
  async openPart(
    uploadId: string,
    partNumber: number,
    sealer?: Pick<ScratchSealer, "open"> | null,
  ): Promise<ReadableStream<Uint8Array> | null> {
    validatePartNumber(partNumber);
    if (!isUploadId(uploadId)) return null;
    const path = `${this.uploadDir(uploadId)}/${partFileName(partNumber)}`;
    const file = await Deno.open(path).catch(nullIfAbsent);
    if (file === null) return null;
    let stream: ReadableStream<Uint8Array> | undefined;
    try {
      const { size } = await file.stat();
      const stored = getJsonXattr<Omit<PartInfo, "partNumber">>(path, PART_XATTR);
      // Pull-based: one chunk read per consumer read, so memory stays flat.
      stream = fileRangeStream(file, 0, size, size);
      if (stored?.keyId === undefined) return stream;
      if (!sealer) throw new SvcError("InternalError", `Part ${partNumber} is sealed`);
      return await sealer.open(stream, {
        keyId: stored.keyId,
        storedSize: size,
        size: stored.size,
      });
    } catch (err) {
      // The stream owns the file once made (an open that failed has cancelled it already).
      await (stream ? stream.cancel(err).catch(() => {}) : file.close());
      throw err;
    }
  }

  /**
   * Where a stored part's file is (for hard links at completion); null for a malformed id. The
   * file is replaced, never rewritten, when the part is uploaded again.
   */
  partPath(uploadId: string, partNumber: number): string | null {
    validatePartNumber(partNumber);
    return isUploadId(uploadId) ? `${this.uploadDir(uploadId)}/${partFileName(partNumber)}` : null;
  }

  /** Removes an upload and its parts; false when there was none. */
  async remove(uploadId: string): Promise<boolean> {
    if (!isUploadId(uploadId)) return false;
    const trash = `${this.dir}/${TEMP_PREFIX}trash-${uploadId}-${crypto.randomUUID()}`;
    if (await Deno.rename(this.uploadDir(uploadId), trash).catch(nullIfAbsent) === null) {
      return false;
    }
    await fsyncDirectory(this.dir);
    await Deno.remove(trash, { recursive: true });
    return true;
  }

  /** Every upload's record, sorted by key (UTF-8 byte order) then initiation time. */
  async list(): Promise<UploadRecord<M>[]> {
    const records: UploadRecord<M>[] = [];
    for (const uploadId of await this.uploadIds()) {
      const record = await this.get(uploadId);
      if (record !== null) records.push(record);
    }
    return records.sort((a, b) =>
      compareUtf8(a.key, b.key) || a.initiated - b.initiated ||
      compareUtf8(a.uploadId, b.uploadId)
    );
  }

  async count(): Promise<number> {
    return (await this.uploadIds()).length;
  }

  /** Newest mtime (epoch ms) among the upload's files, in-flight parts included; null if absent. */
  async lastActivity(uploadId: string): Promise<number | null> {
    if (!isUploadId(uploadId)) return null;
    return (await this.inspect(uploadId))?.lastActivity ?? null;
  }

  /** Removes uploads idle for longer than `olderThanMs` and reports what they held. */
  async sweep(olderThanMs: number, now = Date.now()): Promise<SweepResult> {
    const result: SweepResult = { count: 0, bytes: 0, removed: [] };
    for (const uploadId of await this.uploadIds()) {
      const state = await this.inspect(uploadId);
      if (state === null || now - state.lastActivity <= olderThanMs) continue;
      const record = await this.get(uploadId).catch(() => null);
      if (!await this.remove(uploadId)) continue;
      result.count++;
      result.bytes += state.bytes;
      result.removed.push({ uploadId, bucket: record?.bucket, key: record?.key, ...state });
    }
    return result;
  }

  private uploadDir(uploadId: string): string {
    return `${this.dir}/${uploadId}`;
  }

  private async requireUpload(uploadId: string): Promise<void> {
    if (!isUploadId(uploadId)) throw noSuchUpload(uploadId);
    const found = await Deno.stat(`${this.uploadDir(uploadId)}/${RECORD_FILE}`)
      .catch(nullIfAbsent);
    if (found === null) throw noSuchUpload(uploadId);
  }

  private async uploadIds(): Promise<string[]> {
    const ids: string[] = [];
    for await (const entry of Deno.readDir(this.dir)) {
      if (entry.isDirectory && isUploadId(entry.name)) ids.push(entry.name);
    }
    return ids;
  }

  private async inspect(
    uploadId: string,
  ): Promise<{ lastActivity: number; bytes: number } | null> {
    const dir = this.uploadDir(uploadId);
    // The directory's own mtime moves when a part is renamed in, so it counts as activity.
    const stat = await Deno.stat(dir).catch(nullIfAbsent);
    if (stat === null) return null;
    let lastActivity = stat.mtime?.getTime() ?? 0;
    let bytes = 0;
    const names = await Array.fromAsync(Deno.readDir(dir), (e) => e.name).catch(nullIfAbsent);
    for (const name of names ?? []) {
      // A file renamed or removed meanwhile is simply not counted.
      const info = await Deno.stat(`${dir}/${name}`).catch(nullIfAbsent);
      if (info === null) continue;
      lastActivity = Math.max(lastActivity, info.mtime?.getTime() ?? 0);
      if (name !== RECORD_FILE) bytes += info.size;
    }
    return names === null ? null : { lastActivity, bytes };
  }

  private async removeStaleTemps(): Promise<void> {
    for await (const entry of Deno.readDir(this.dir)) {
      const path = `${this.dir}/${entry.name}`;
      if (entry.name.startsWith(TEMP_PREFIX)) {
        await Deno.remove(path, { recursive: true }).catch(nullIfAbsent);
      } else if (entry.isDirectory && isUploadId(entry.name)) {
        for await (const inner of Deno.readDir(path)) {
          if (inner.name.startsWith(TEMP_PREFIX)) {
            await Deno.remove(`${path}/${inner.name}`, { recursive: true }).catch(nullIfAbsent);
          }
        }
      }
    }
  }
}

function partFileName(partNumber: number): string {
  return String(partNumber).padStart(5, "0");
}

function noSuchUpload(uploadId: string): SvcError {
  return new SvcError(
    "NoSuchUpload",
    `The specified upload "${uploadId}" does not exist. The upload ID may be invalid, or the ` +
      `upload may have been aborted or completed.`,
    { UploadId: uploadId },
  );
}

/** For `.catch()`: a missing path becomes null, anything else is rethrown. */
function nullIfAbsent(err: unknown): null {
  if (err instanceof Deno.errors.NotFound) return null;
  throw err;
}
