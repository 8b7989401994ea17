/**
 * The fast completion of a local upload: the parts become the object's bytes where they are
 * (hard links on the filesystem, backend parts on S3) and the sha256 comes from the hash chain
 * (part-hash-chain.ts). null when the backend cannot (delta-eligible keys, parts on another
 * filesystem, sealed parts): then the parts are streamed through the object write path.
 */
import type { ObjectInfo, ObjectMeta } from "../../storage/mod.ts";
import type { ObjectService } from "../object-service.ts";
import type { WriteContext } from "../usage/write-observer.ts";
import {
  type ClientMetadata,
  type CommitPlan,
  DEFAULT_CONTENT_TYPE,
  type WritePrecondition,
} from "../write-options.ts";
import { vanished } from "./multipart-completion.ts";
import type { PartInfo } from "./multipart-store.ts";

export interface InPlaceCompletion {
  bucket: string;
  key: string;
  uploadId: string;
  parts: PartInfo[];
  /** Where a local part's file is. */
  partPath(partNumber: number): string;
  /** The sha256 of the parts in order. */
  digest(): Promise<string>;
  metadata: ClientMetadata;
  plan: CommitPlan;
  precondition: WritePrecondition | undefined;
  signal: AbortSignal | undefined;
  context: WriteContext | undefined;
}

export async function completeInPlace(
  objects: ObjectService,
  completion: InPlaceCompletion,
): Promise<ObjectInfo | null> {
  const { bucket, key, uploadId, parts, metadata, plan, signal } = completion;
  const backend = objects.backend;
  // Sealed parts are opened and streamed into the object (sealed again, under its own salt):
  // linked or sent as they are, they would be neither the object's format nor plaintext.
  if (!backend.stageExtents || parts.some((part) => part.keyId !== undefined)) return null;
  const extents = parts.map((part) => ({
    path: completion.partPath(part.partNumber),
    size: part.size,
  }));
  const staged = await backend.stageExtents(bucket, key, extents, signal)
    .catch((err) => Promise.reject(vanished(err, uploadId)));
  if (staged === null) return null;
  try {
    const meta: ObjectMeta = {
      size: staged.size,
      etag: plan.etag!,
      md5: "",
      sha256: await completion.digest().catch((err) => Promise.reject(vanished(err, uploadId))),
      contentType: metadata.contentType || DEFAULT_CONTENT_TYPE,
      userMeta: metadata.userMeta,
      headers: metadata.headers,
      lastModified: objects.now(),
      storage: "passthrough",
      partsCount: plan.partsCount,
      ...(plan.partSizes !== undefined ? { partSizes: plan.partSizes } : {}),
      ...(metadata.tags ? { tags: metadata.tags } : {}),
    };
    signal?.throwIfAborted();
    return await objects.commitStaged(
      bucket,
      key,
      staged,
      meta,
      completion.precondition,
      completion.context,
    );
  } catch (err) {
    await staged.abort();
    throw err;
  }
}
