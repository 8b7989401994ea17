/**
 * Records of completed multipart uploads, so a repeated CompleteMultipartUpload with the same
 * part list answers as the first did. SDKs retry a Complete that timed out on their side while
 * the server finished it; without a record the retry would find no upload and answer 404
 * NoSuchUpload for an upload that succeeded.
 *
 * One small JSON file per completed upload, `<dir>/<uploadId>.json`, written temp + fsync +
 * rename before the upload's own state is removed, so it survives a restart. Records are kept
 * for the multipart idle TTL (the sweeper removes older ones) and removed with their bucket.
 */
import type { StorageKind } from "../../storage/mod.ts";
import {
  PRIVATE_FILE_MODE,
  privateDir,
  syncDirectory as fsyncDirectory,
  writeAll,
} from "../../lib/mod.ts";
import { isUploadId } from "./multipart-store.ts";

export interface CompletedUpload {
  uploadId: string;
  bucket: string;
  key: string;
  /** The part list the upload was completed with, in order. */
  parts: { partNumber: number; etag: string }[];
  /** The object's ETag, without quotes. */
  etag: string;
  /** How the object was stored (for the debug header of a repeated answer). */
  storage: StorageKind;
  /** Epoch milliseconds. */
  completedAt: number;
}

const SUFFIX = ".json";
const TEMP_PREFIX = ".tmp-";

export class CompletedUploads {
  private constructor(readonly dir: string) {}

  static async open(dir: string): Promise<CompletedUploads> {
    await privateDir(dir);
    for await (const entry of Deno.readDir(dir)) {
      if (entry.name.startsWith(TEMP_PREFIX)) {
        await Deno.remove(`${dir}/${entry.name}`).catch(() => {});
      }
    }
    return new CompletedUploads(dir);
  }

  /** Makes the record durable; call before the upload's state is removed. */
  async record(done: CompletedUpload): Promise<void> {
    const temp = `${this.dir}/${TEMP_PREFIX}${done.uploadId}-${crypto.randomUUID()}`;
    const file = await Deno.open(temp, { write: true, createNew: true, mode: PRIVATE_FILE_MODE });
    try {
      await writeAll(file, new TextEncoder().encode(JSON.stringify(done)));
      await file.sync();
    } catch (err) {
      file.close();
      await Deno.remove(temp).catch(() => {});
      throw err;
    }
    file.close();
    await Deno.rename(temp, this.path(done.uploadId));
    await fsyncDirectory(this.dir);
  }

  /** The record of a completed upload; null when there is none (or the id is malformed). */
  async get(uploadId: string): Promise<CompletedUpload | null> {
    if (!isUploadId(uploadId)) return null;
    let text: string;
    try {
      text = await Deno.readTextFile(this.path(uploadId));
    } catch (err) {
      if (err instanceof Deno.errors.NotFound) return null;
      throw err;
    }
    const done = JSON.parse(text) as CompletedUpload;
    if (done?.uploadId !== uploadId) {
      throw new Error(`Completed-upload record of "${uploadId}" is corrupt`);
    }
    return done;
  }

  /** Removes records completed more than `olderThanMs` ago, or of `bucket` when given. */
  async prune(options: { olderThanMs?: number; bucket?: string; now?: number }): Promise<number> {
    const now = options.now ?? Date.now();
    let removed = 0;
    for await (const entry of Deno.readDir(this.dir)) {
      if (!entry.name.endsWith(SUFFIX)) continue;
      const done = await this.get(entry.name.slice(0, -SUFFIX.length)).catch(() => null);
      if (done === null) continue;
      const expired = options.olderThanMs !== undefined &&
        now - done.completedAt > options.olderThanMs;
      if (!expired && (options.bucket === undefined || done.bucket !== options.bucket)) continue;
      await Deno.remove(`${this.dir}/${entry.name}`).catch(() => {});
      removed++;
    }
    return removed;
  }

  private path(uploadId: string): string {
    return `${this.dir}/${uploadId}${SUFFIX}`;
  }
}

/** Whether a retried Complete names exactly the parts the upload was completed with. */
export function sameParts(
  done: CompletedUpload,
  requested: { partNumber: number; etag: string }[],
): boolean {
  return done.parts.length === requested.length &&
    done.parts.every((part, i) =>
      part.partNumber === requested[i].partNumber && part.etag === requested[i].etag
    );
}
