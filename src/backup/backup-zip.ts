/**
 * The zip container of a backup (fflate): written as a stream, read whole but bounded.
 *
 * - Writing: one deflated entry per part, produced on demand (`pull`), so the archive is never
 *   held twice in memory and a slow client slows the producer instead of growing a queue.
 * - Reading: the request body is read bounded by the caller; here every entry's declared
 *   uncompressed size is checked against `maxEntryBytes` and the sum against `maxTotalBytes`
 *   BEFORE anything is inflated (fflate inflates into a buffer of the declared size and never
 *   past it, so a zip bomb that lies about its size yields truncated bytes, which the manifest's
 *   sha256 then refuses). Duplicate entry names are refused (a second `iam.json` must not be
 *   able to shadow the first), as are directories and anything that is not stored or deflated.
 */
import { unzipSync, Zip, ZipDeflate } from "fflate";

export interface ZipEntry {
  name: string;
  bytes: Uint8Array;
}

/** Why an archive cannot be read; the routes answer 400 (or 413 when `tooLarge`). */
export class BackupFormatError extends Error {
  readonly tooLarge: boolean;
  constructor(message: string, options: { tooLarge?: boolean } = {}) {
    super(message);
    this.name = "BackupFormatError";
    this.tooLarge = options.tooLarge ?? false;
  }
}

/** A zip of `entries` (in order), deflated, as a byte stream. */
export function zipStream(entries: ZipEntry[], mtime = new Date()): ReadableStream<Uint8Array> {
  const pending: Uint8Array[] = [];
  let finished = false;
  let failure: Error | undefined;
  const zip = new Zip((err, chunk, final) => {
    if (err) failure = err;
    else pending.push(chunk);
    if (final) finished = true;
  });
  let next = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      // Each pull feeds one entry (or the central directory) and hands out what it produced.
      if (next < entries.length) {
        const entry = entries[next++];
        const file = new ZipDeflate(entry.name, { level: 6 });
        file.mtime = mtime;
        zip.add(file);
        file.push(entry.bytes, true);
      } else if (!finished) {
        zip.end();
      }
      if (failure) return controller.error(failure);
      for (const chunk of pending.splice(0)) controller.enqueue(chunk);
      if (finished) controller.close();
    },
    cancel() {
      zip.terminate();
    },
  });
}

export interface ReadZipLimits {
  maxEntryBytes: number;
  maxTotalBytes: number;
  maxEntries: number;
}

/** The entries of a zip by name, within the limits; throws BackupFormatError. */
export function readZip(bytes: Uint8Array, limits: ReadZipLimits): Map<string, Uint8Array> {
  const seen = new Set<string>();
  let total = 0;
  let refusal: BackupFormatError | undefined;
  const refuse = (error: BackupFormatError) => {
    refusal ??= error;
    return false;
  };
  let files: Record<string, Uint8Array>;
  try {
    files = unzipSync(bytes, {
      filter: (file) => {
        if (refusal) return false;
        if (seen.has(file.name)) {
          return refuse(new BackupFormatError(`The zip holds "${file.name}" twice`));
        }
        seen.add(file.name);
        if (seen.size > limits.maxEntries) {
          return refuse(
            new BackupFormatError(`The zip holds more than ${limits.maxEntries} files`),
          );
        }
        if (file.name.endsWith("/")) {
          return refuse(new BackupFormatError(`The zip holds a directory "${file.name}"`));
        }
        // A backup is flat; and `__proto__` would not survive fflate's plain result object.
        if (/[/\\]/.test(file.name) || file.name === "__proto__") {
          return refuse(new BackupFormatError(`The zip holds a file named "${file.name}"`));
        }
        if (file.compression !== 0 && file.compression !== 8) {
          return refuse(
            new BackupFormatError(
              `Zip entry "${file.name}" uses compression method ${file.compression} ` +
                "(only stored and deflated entries are read)",
            ),
          );
        }
        if (file.originalSize > limits.maxEntryBytes) {
          return refuse(
            new BackupFormatError(
              `Zip entry "${file.name}" unpacks to ${file.originalSize} bytes ` +
                `(at most ${limits.maxEntryBytes})`,
              { tooLarge: true },
            ),
          );
        }
        total += file.originalSize;
        if (total > limits.maxTotalBytes) {
          return refuse(
            new BackupFormatError(
              `The zip unpacks to more than ${limits.maxTotalBytes} bytes`,
              { tooLarge: true },
            ),
          );
        }
        return true;
      },
    });
  } catch (err) {
    throw new BackupFormatError(`The body is not a readable zip: ${(err as Error).message}`);
  }
  if (refusal) throw refusal;
  return new Map(Object.entries(files));
}
