/**
 * Backend-resident multipart uploads (backend-records.ts has the layout): the state of an upload on
 * an S3 backend lives in its bucket, so an upload created on one svc instance takes parts,
 * ListParts, Complete and Abort on any other instance over the same backend, and survives the
 * loss of the instance that created it.
 *
 * Part bytes stream from the client through the storage stack below the delta layer (compressed
 * and sealed as any object of the bucket, never plaintext on an encrypted backend) with
 * stageObject/commit: an atomic PUT. Records go through the backend's raw client
 * (backend-records.ts), created conditionally where two instances could race:
 *
 * - a Complete first claims the upload (`claim`, `If-None-Match: *`); a second Complete
 *   elsewhere finds the claim and waits for the completed-upload record instead of writing the
 *   object again. A claim older than CLAIM_STALE_MS (its holder died) may be taken over
 *   (`If-Match` on the stale claim's ETag). The sweeper claims the same way, so it never removes
 *   an upload that is being completed;
 * - the completed-upload record is created with `If-None-Match: *`: the first one stands.
 *
 * Removal deletes the record first (the upload is gone for everyone at once), then the rest;
 * deletes tolerate keys already gone, so two instances sweeping or aborting at once both succeed.
 */
import { compareUtf8, SvcError } from "../../lib/mod.ts";
import type { Backend, ObjectMeta } from "../../storage/mod.ts";
import {
  type BackendBucket,
  claimKey,
  COMPLETED_PREFIX,
  completedKey,
  dataKey,
  deleteKeys,
  indexKey,
  INTERNAL_PREFIX,
  listKeys,
  newStamp,
  parseIndex,
  readRecord,
  recordKey,
  uploadIdOf,
  uploadPrefix,
  writeRecord,
} from "./backend-records.ts";
import type { CompletedUpload } from "./completed-uploads.ts";
import { noSuchUpload } from "./multipart-completion.ts";
import type {
  NewUpload,
  PartInfo,
  SweepResult,
  SweptUpload,
  UploadRecord,
} from "./multipart-store.ts";
import { checkedPart, type PutPartOptions } from "./part-receive.ts";
import { isUploadId, newUploadId, validatePartNumber } from "./upload-ids.ts";
import type { CompletionClaim, UploadStore } from "./upload-store.ts";

/** A completion claim this old is taken to be a dead holder's. */
export const CLAIM_STALE_MS = 30 * 60 * 1000;

export interface BackendUploadsOptions {
  /** The storage stack below the delta layer (the bucket router): part bytes go through it. */
  stack: Pick<Backend, "stageObject" | "getObject">;
  /** The raw client and real name of a bucket on an S3 backend. */
  locate(bucket: string): Promise<BackendBucket>;
  /** The buckets whose uploads live in their backend (for the sweep). */
  buckets(): Promise<string[]>;
  now?: () => number;
}

interface Claim {
  at: number;
  by: string;
}

export class BackendUploads implements UploadStore {
  readonly #stack: BackendUploadsOptions["stack"];
  readonly #locate: BackendUploadsOptions["locate"];
  readonly #buckets: BackendUploadsOptions["buckets"];
  readonly #now: () => number;

  constructor(options: BackendUploadsOptions) {
    this.#stack = options.stack;
    this.#locate = options.locate;
    this.#buckets = options.buckets;
    this.#now = options.now ?? Date.now;
  }

  async create(input: NewUpload): Promise<UploadRecord> {
    const record: UploadRecord = {
      ...input,
      uploadId: newUploadId(),
      initiated: input.initiated ?? this.#now(),
    };
    if (record.meta === undefined) delete record.meta;
    const at = await this.#locate(input.bucket);
    if (!await writeRecord(at, recordKey(record.uploadId), record, "absent")) {
      throw new SvcError("InternalError", `Upload id "${record.uploadId}" exists already`);
    }
    return record;
  }

  async get(bucket: string, uploadId: string): Promise<UploadRecord | null> {
    if (!isUploadId(uploadId)) return null;
    const found = await readRecord<UploadRecord>(await this.#locate(bucket), recordKey(uploadId));
    if (found === null) return null;
    if (found.value?.uploadId !== uploadId) {
      throw new SvcError("InternalError", `Multipart record of "${uploadId}" is corrupt`);
    }
    return found.value.bucket === bucket ? found.value : null;
  }

  async #require(bucket: string, uploadId: string): Promise<BackendBucket> {
    if (await this.get(bucket, uploadId) === null) throw noSuchUpload(uploadId);
    return await this.#locate(bucket);
  }

  async putPart(
    bucket: string,
    uploadId: string,
    partNumber: number,
    body: ReadableStream<Uint8Array>,
    options: PutPartOptions,
  ): Promise<PartInfo> {
    validatePartNumber(partNumber);
    let at: BackendBucket;
    const reader = body.getReader();
    try {
      at = await this.#require(bucket, uploadId);
    } catch (err) {
      await reader.cancel().catch(() => {});
      throw err;
    }
    const stamp = newStamp(this.#now());
    const bytesKey = dataKey(uploadId, partNumber, stamp);
    const part = checkedPart(reader, options);
    // The body streams into the stack's staging (a spool file on an S3 backend), never memory.
    const staged = await this.#stack.stageObject(bucket, bytesKey, part.body, options.signal)
      .catch(async (err) => {
        await part.body.cancel(err).catch(() => {}); // refused before reading: release the client
        throw err;
      });
    let info: PartInfo & { stored: string };
    try {
      const { etag, size } = part.received();
      info = { partNumber, etag, size, lastModified: this.#now(), stored: stamp };
      await staged.commit(partMeta(info));
    } catch (err) {
      await staged.abort();
      throw err;
    }
    const index = indexKey(uploadId, info);
    try {
      await writeRecord(at, index, undefined);
      // Aborted or completed meanwhile (on any instance): this part must not linger.
      if (await this.get(bucket, uploadId) === null) throw noSuchUpload(uploadId);
    } catch (err) {
      await deleteKeys(at, [index, bytesKey]).catch(() => {});
      throw err;
    }
    await this.#dropOlderVersions(at, uploadId, info);
    return info;
  }

  /** Removes the versions of this part stored before `kept` (never a later one). */
  async #dropOlderVersions(
    at: BackendBucket,
    uploadId: string,
    kept: PartInfo & { stored: string },
  ) {
    const prefix = `${uploadPrefix(uploadId)}i${String(kept.partNumber).padStart(5, "0")}.`;
    const older = (await listKeys(at, prefix)).keys
      .map(({ key }) => parseIndex(key.slice(uploadPrefix(uploadId).length)))
      .filter((part) => part !== null && part.stored < kept.stored);
    const keys = older.flatMap((part) => [
      indexKey(uploadId, part!),
      dataKey(uploadId, part!.partNumber, part!.stored),
    ]);
    await deleteKeys(at, keys);
  }

  async listParts(bucket: string, uploadId: string): Promise<PartInfo[]> {
    const at = await this.#require(bucket, uploadId);
    const prefix = uploadPrefix(uploadId);
    const newest = new Map<number, PartInfo & { stored: string }>();
    for (const { key } of (await listKeys(at, `${prefix}i`)).keys) {
      const part = parseIndex(key.slice(prefix.length));
      if (part === null) continue;
      const seen = newest.get(part.partNumber);
      if (seen === undefined || seen.stored < part.stored) newest.set(part.partNumber, part);
    }
    return [...newest.values()].sort((a, b) => a.partNumber - b.partNumber);
  }

  async openPart(
    bucket: string,
    uploadId: string,
    part: PartInfo,
  ): Promise<ReadableStream<Uint8Array> | null> {
    if (!isUploadId(uploadId) || part.stored === undefined) return null;
    const key = dataKey(uploadId, part.partNumber, part.stored);
    const got = await this.#stack.getObject(bucket, key);
    if (got === null) return null;
    if (got.info.meta.size !== part.size) {
      await got.body.cancel().catch(() => {});
      throw new SvcError("InternalError", `Part ${part.partNumber} of "${uploadId}" is damaged`);
    }
    return got.body;
  }

  async remove(bucket: string, uploadId: string): Promise<boolean> {
    if (!isUploadId(uploadId)) return false;
    const at = await this.#locate(bucket);
    const existed = await this.get(bucket, uploadId) !== null;
    // The record goes first: from then on the upload is gone for every instance.
    await deleteKeys(at, [recordKey(uploadId)]);
    const rest = (await listKeys(at, uploadPrefix(uploadId))).keys.map(({ key }) => key);
    await deleteKeys(at, rest);
    return existed;
  }

  async list(bucket: string): Promise<UploadRecord[]> {
    const at = await this.#locate(bucket);
    const ids = (await listKeys(at, INTERNAL_PREFIX, "/")).prefixes
      .map((prefix) => uploadIdOf(prefix))
      .filter((id): id is string => id !== null);
    const records: UploadRecord[] = [];
    for (const id of ids) {
      const record = await this.get(bucket, id);
      if (record !== null) records.push(record);
    }
    return records.sort((a, b) =>
      compareUtf8(a.key, b.key) || a.initiated - b.initiated ||
      compareUtf8(a.uploadId, b.uploadId)
    );
  }

  async count(bucket: string): Promise<number> {
    const at = await this.#locate(bucket);
    return (await listKeys(at, INTERNAL_PREFIX, "/")).prefixes
      .filter((prefix) => uploadIdOf(prefix) !== null).length;
  }

  async claim(bucket: string, uploadId: string, staleMs = CLAIM_STALE_MS) {
    if (!isUploadId(uploadId)) return null;
    const at = await this.#locate(bucket);
    const key = claimKey(uploadId);
    const mine: Claim = { at: this.#now(), by: crypto.randomUUID() };
    let won = await writeRecord(at, key, mine, "absent");
    if (!won) {
      const held = await readRecord<Claim>(at, key);
      // Gone meanwhile (released): try once more; held by a live caller: not ours.
      if (held === null) won = await writeRecord(at, key, mine, "absent");
      else if (this.#now() - (held.value?.at ?? 0) > staleMs) {
        won = await writeRecord(at, key, mine, { etag: held.etag });
      }
    }
    if (!won) return null;
    // A long completion keeps its claim fresh, so it is never taken for a dead holder's.
    const renew = async () => {
      const held = await readRecord<Claim>(at, key);
      if (held?.value?.by !== mine.by) return;
      await writeRecord(at, key, { ...mine, at: this.#now() }, { etag: held.etag });
    };
    const timer = setInterval(() => void renew().catch(() => {}), staleMs / 3);
    Deno.unrefTimer(timer);
    const claim: CompletionClaim = {
      release: async () => {
        clearInterval(timer);
        const held = await readRecord<Claim>(at, key);
        if (held?.value?.by === mine.by) await deleteKeys(at, [key]);
      },
    };
    return claim;
  }

  async completed(bucket: string, uploadId: string): Promise<CompletedUpload | null> {
    if (!isUploadId(uploadId)) return null;
    const at = await this.#locate(bucket);
    const found = await readRecord<CompletedUpload>(at, completedKey(uploadId));
    if (found === null) return null;
    if (found.value?.uploadId !== uploadId) {
      throw new SvcError("InternalError", `Completed-upload record of "${uploadId}" is corrupt`);
    }
    return found.value.bucket === bucket ? found.value : null;
  }

  async recordCompleted(done: CompletedUpload): Promise<CompletedUpload> {
    const at = await this.#locate(done.bucket);
    if (await writeRecord(at, completedKey(done.uploadId), done, "absent")) return done;
    return await this.completed(done.bucket, done.uploadId) ?? done;
  }

  async pruneCompleted(
    options: { olderThanMs?: number; bucket?: string; now?: number },
  ): Promise<void> {
    const now = options.now ?? this.#now();
    const buckets = options.bucket !== undefined ? [options.bucket] : await this.#buckets();
    for (const bucket of buckets) {
      const at = await this.#locate(bucket).catch(() => null);
      if (at === null) continue;
      const listed = await listKeys(at, COMPLETED_PREFIX).catch(() => null);
      const expired = (listed?.keys ?? []).filter(({ lastModified }) =>
        options.bucket !== undefined ||
        (options.olderThanMs !== undefined && now - lastModified > options.olderThanMs)
      );
      await deleteKeys(at, expired.map(({ key }) => key));
    }
  }

  /** Removes everything svc keeps under `.svc/multipart/` in `bucket` (it is being deleted). */
  async purge(bucket: string): Promise<void> {
    const at = await this.#locate(bucket);
    await deleteKeys(at, (await listKeys(at, INTERNAL_PREFIX)).keys.map(({ key }) => key));
  }

  /**
   * Removes uploads of every backend-resident bucket idle for longer than `olderThanMs` (no key
   * of theirs written since). Each is claimed first, so of several instances sweeping at once
   * one removes (and counts) it, and an upload being completed is left alone.
   */
  async sweep(olderThanMs: number, now: number): Promise<SweepResult> {
    const result: SweepResult = { count: 0, bytes: 0, removed: [] };
    const failures: unknown[] = [];
    for (const bucket of await this.#buckets()) {
      try {
        for (const swept of await this.#sweepBucket(bucket, olderThanMs, now)) {
          result.count++;
          result.bytes += swept.bytes;
          result.removed.push(swept);
        }
      } catch (err) {
        if (!(err instanceof SvcError && err.code === "NoSuchBucket")) failures.push(err);
      }
    }
    if (failures.length > 0) throw failures[0];
    return result;
  }

  async #sweepBucket(bucket: string, olderThanMs: number, now: number): Promise<SweptUpload[]> {
    const at = await this.#locate(bucket);
    const uploads = new Map<string, { lastActivity: number; bytes: number }>();
    for (const { key, lastModified } of (await listKeys(at, INTERNAL_PREFIX)).keys) {
      const uploadId = uploadIdOf(key);
      if (uploadId === null) continue;
      const state = uploads.get(uploadId) ?? { lastActivity: 0, bytes: 0 };
      state.lastActivity = Math.max(state.lastActivity, lastModified);
      state.bytes += parseIndex(key.slice(uploadPrefix(uploadId).length))?.size ?? 0;
      uploads.set(uploadId, state);
    }
    const removed: SweptUpload[] = [];
    for (const [uploadId, state] of uploads) {
      if (now - state.lastActivity <= olderThanMs) continue;
      const claim = await this.claim(bucket, uploadId, olderThanMs);
      if (claim === null) continue;
      const record = await this.get(bucket, uploadId).catch(() => null);
      const existed = await this.remove(bucket, uploadId)
        .finally(() => claim.release().catch(() => {}));
      // Another instance removed it between our listing and our claim (its removal deletes the
      // record first, and its claim with the rest): what was left is gone now, counted there.
      if (existed) removed.push({ uploadId, bucket, key: record?.key, ...state });
    }
    return removed;
  }
}

/** A part version's metadata: its own md5 and size, so reading it back checks them. */
function partMeta(part: PartInfo): ObjectMeta {
  return {
    size: part.size,
    etag: part.etag,
    md5: part.etag,
    sha256: "",
    contentType: "application/octet-stream",
    userMeta: {},
    headers: {},
    lastModified: part.lastModified,
    storage: "passthrough",
  };
}
