/**
 * The streaming completion's body: an upload's parts read back in order, as one stream. Used when
 * the backend cannot keep the parts where they are (a delta-eligible key, parts on another
 * filesystem, parts sealed for an encrypted backend); the object service then hashes and commits
 * it like any upload.
 */
import { SvcError } from "../../lib/mod.ts";
import type { ScratchSealer } from "../../storage/mod.ts";
import type { PartInfo } from "./multipart-store.ts";
import type { UploadStore } from "./upload-store.ts";

/** The parts' plaintext in order, one part open at a time (sealed local ones opened by `sealer`). */
export function concatenateParts(
  store: Pick<UploadStore, "openPart">,
  bucket: string,
  uploadId: string,
  parts: readonly PartInfo[],
  sealer: ScratchSealer | null = null,
): ReadableStream<Uint8Array> {
  let index = 0;
  let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      for (;;) {
        if (reader === undefined) {
          if (index >= parts.length) return controller.close();
          const stored = parts[index++];
          const partNumber = stored.partNumber;
          const part = await store.openPart(bucket, uploadId, stored, sealer);
          if (part === null) {
            throw new SvcError(
              "NoSuchUpload",
              `Part ${partNumber} of upload "${uploadId}" disappeared during completion`,
            );
          }
          reader = part.getReader();
        }
        const { done, value } = await reader.read();
        if (!done) return controller.enqueue(value);
        reader = undefined;
      }
    },
    async cancel(reason) {
      await reader?.cancel(reason);
    },
  });
}
