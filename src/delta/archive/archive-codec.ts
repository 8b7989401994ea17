/**
 * Archive-aware deltas (issue 28): the public face of the archive token form. A compressed
 * archive (gzip family, zip family) changes almost every compressed byte when a few members
 * change, so xdelta3 finds nothing to reuse between two versions. `expandArchive` rewrites each
 * deflate stream as the tokens it codes (literals, matches, block headers) next to the
 * container's other bytes verbatim, so unchanged content gives unchanged bytes; `contractArchive`
 * Huffman-codes the tokens again with the recorded codes and gives back the exact original bytes
 * (no compressor is re-run, so any producer's output rebuilds exactly). Format: docs/DELTA.md,
 * "Archive token form".
 *
 * Both run in a worker (archive-worker.ts), file to file with fixed buffers; an abort ends the
 * worker and removes the partial output.
 */
import { SvcError } from "../../lib/mod.ts";
import type { ArchiveReply, ArchiveRequest } from "./archive-worker.ts";
import type { ArchiveFormat, ExpandResult } from "./token-files.ts";

export type { ArchiveFormat, ExpandResult } from "./token-files.ts";

const GZIP_EXTENSIONS = [".gz", ".tgz", ".crate"];
const ZIP_EXTENSIONS = [
  ".zip",
  ".jar",
  ".war",
  ".ear",
  ".whl",
  ".nupkg",
  ".apk",
  ".vsix",
  ".aar",
];

/** The container of a key by its extension (case-insensitive; `.tar.gz` is gzip), else null. */
export function archiveFormatOf(key: string): ArchiveFormat | null {
  const name = key.slice(key.lastIndexOf("/") + 1).toLowerCase();
  if (GZIP_EXTENSIONS.some((ext) => name.endsWith(ext) && name.length > ext.length)) return "gzip";
  if (ZIP_EXTENSIONS.some((ext) => name.endsWith(ext) && name.length > ext.length)) return "zip";
  return null;
}

/**
 * Writes the token form of the archive at `inPath` to `outPath`. `{ ok: false, reason }` when the
 * input is not something the form represents exactly (a damaged or truncated deflate stream, an
 * invalid code): store the object as it is then. `deflateStreams` may be 0 (nothing gained).
 * Rejects on I/O failure or abort (the output is removed then).
 */
export function expandArchive(
  format: ArchiveFormat,
  inPath: string,
  outPath: string,
  signal?: AbortSignal,
): Promise<ExpandResult> {
  return run({ op: "expand", format, inPath, outPath }, signal).then((reply) => {
    if ("expand" in reply) return reply.expand;
    throw new SvcError("InternalError", "Archive worker answered an expansion with a contraction");
  });
}

/**
 * Rebuilds the original archive from the token form at `expandedPath` into `outPath`, and checks
 * it against the size and sha256 the token form records. Rejects with an InternalError SvcError
 * when the token form is damaged or the rebuilt bytes differ, on I/O failure and on abort (the
 * output is removed then).
 */
export function contractArchive(
  expandedPath: string,
  outPath: string,
  signal?: AbortSignal,
): Promise<{ size: number; sha256: string }> {
  return run({ op: "contract", expandedPath, outPath }, signal).then((reply) => {
    if ("contract" in reply) return reply.contract;
    throw new SvcError("InternalError", "Archive worker answered a contraction with an expansion");
  });
}

type Success = Extract<ArchiveReply, { ok: true }>;

function run(request: ArchiveRequest, signal?: AbortSignal): Promise<Success> {
  if (signal?.aborted) return Promise.reject(signal.reason);
  const { promise, resolve, reject } = Promise.withResolvers<Success>();
  let worker: Worker;
  try {
    worker = new Worker(new URL("./archive-worker.ts", import.meta.url).href, { type: "module" });
  } catch (err) {
    return Promise.reject(err);
  }
  let settled = false;
  /** Ends the job: a failure or an unusable expansion leaves no output file behind. */
  const finish = (failure: unknown, reply?: Success): void => {
    if (settled) return;
    settled = true;
    signal?.removeEventListener("abort", onAbort);
    worker.terminate();
    const unusable = reply === undefined || ("expand" in reply && !reply.expand.ok);
    if (!unusable) return resolve(reply);
    Deno.remove(request.outPath).catch(() => {}).finally(() =>
      reply === undefined ? reject(failure) : resolve(reply)
    );
  };
  const onAbort = (): void => finish(signal?.reason ?? new DOMException("Aborted", "AbortError"));
  signal?.addEventListener("abort", onAbort, { once: true });
  worker.onmessage = (event: MessageEvent<ArchiveReply>) => {
    const reply = event.data;
    if (reply.ok) return finish(undefined, reply);
    finish(
      reply.damaged
        ? new SvcError("InternalError", `Archive token form: ${reply.message}`)
        : new Error(`Archive codec failed: ${reply.message}`),
    );
  };
  worker.onerror = (event) => {
    event.preventDefault();
    finish(new Error(`Archive worker failed: ${event.message}`));
  };
  worker.postMessage(request);
  return promise;
}
