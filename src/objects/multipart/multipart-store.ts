/**
 * On-disk state of multipart uploads, so an upload started before a restart can be continued and
 * completed after it. Layout under the store directory (the server uses `<data>/.svc/multipart`):
 *
 *   <uploadId>/upload.json   the UploadRecord, written once
 *   <uploadId>/00001 … 10000 part bytes; xattr `user.svc.part` = {etag, size, lastModified}
 *   .tmp-*                   staging and trash; anything left by a crash is removed on open
 *
 * Every change becomes visible through one rename: an upload directory appears complete with its
 * record, a part file appears with its bytes fsynced and its xattr set (so re-uploading a part
 * replaces the old one atomically), and an aborted upload disappears in one step before its files
 * are deleted. Upload ids are checked against their generated shape before any path is built, so
 * a client-supplied id can never point outside the store.
 */

import {
  compareUtf8,
  fileRangeStream,
  SvcError,
  syncDirectory as fsyncDirectory,
  writeAll,
} from "../../lib/mod.ts";
import type { StoredHeader } from "../../storage/mod.ts";
import { getJsonXattr, setJsonXattr, XattrError } from "../../native/mod.ts";
import { type PutPartOptions, receivePart } from "./part-receive.ts";

export const MAX_PART_NUMBER = 10_000;
const PART_XATTR = "user.svc.part";
const RECORD_FILE = "upload.json";
const TEMP_PREFIX = ".tmp-";
// base64url of 24 random bytes: 32 characters, no padding, never "." or "/".
const UPLOAD_ID_SHAPE = /^[A-Za-z0-9_-]{32}$/;
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

/** A new unguessable, URL-safe upload id. */
export function newUploadId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(24));
  return btoa(String.fromCharCode(...bytes)).replaceAll("+", "-").replaceAll("/", "_");
}

/** Whether a value has the shape of an id this store generates. */
export function isUploadId(value: string): boolean {
  return UPLOAD_ID_SHAPE.test(value);
}

/** Throws InvalidArgument unless the part number is an integer in 1..10000. */
export function validatePartNumber(partNumber: number): void {
  if (!Number.isInteger(partNumber) || partNumber < 1 || partNumber > MAX_PART_NUMBER) {
    throw new SvcError(
      "InvalidArgument",
      `Part number must be an integer between 1 and 10000, inclusive; got "${partNumber}".`,
      { ArgumentName: "partNumber", ArgumentValue: String(partNumber) },
    );
  }
}

export class MultipartStore<M = unknown> {
  readonly dir: string;

  private constructor(dir: string) {
    this.dir = dir;
  }

  /** Opens (creating if needed) the store and removes what a crash left half-written. */
  static async open<M = unknown>(dir: string): Promise<MultipartStore<M>> {
    const store = new MultipartStore<M>(dir.replace(/\/+$/, "") || "/");
    await Deno.mkdir(store.dir, { recursive: true });
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
    await Deno.mkdir(staging);
    try {
      const file = await Deno.open(`${staging}/${RECORD_FILE}`, { write: true, createNew: true });
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
    options: PutPartOptions = {},
  ): Promise<PartInfo> {
    const { signal } = options;
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
      file = await Deno.open(temp, { write: true, createNew: true }).catch((err) => {
        throw err instanceof Deno.errors.NotFound ? noSuchUpload(uploadId) : err;
      });
      const { etag, size } = await receivePart(reader, file, options);
      const info: PartInfo = { partNumber, etag, size, lastModified: Date.now() };
      // Set before fsync so the attribute is as durable as the bytes, and before the rename so
      // the part never exists without it.
      setJsonXattr(temp, PART_XATTR, { etag, size, lastModified: info.lastModified });
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
      const { etag, size, lastModified } = stored;
      parts.push({ partNumber: Number(entry.name), etag, size, lastModified });
    }
    return parts.sort((a, b) => a.partNumber - b.partNumber);
  }

  /** The bytes of one part as a pull-based stream; null when the part (or upload) is absent. */
  async openPart(
    uploadId: string,
    partNumber: number,
  ): Promise<ReadableStream<Uint8Array> | null> {
    validatePartNumber(partNumber);
    if (!isUploadId(uploadId)) return null;
    const path = `${this.uploadDir(uploadId)}/${partFileName(partNumber)}`;
    const file = await Deno.open(path).catch(nullIfAbsent);
    if (file === null) return null;
    try {
      // Pull-based: one chunk read per consumer read, so memory stays flat.
      const { size } = await file.stat();
      return fileRangeStream(file, 0, size, size);
    } catch (err) {
      file.close();
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
