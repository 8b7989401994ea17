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
 * Both run in a worker (archive-worker.ts) of a small pool kept between jobs (worker-pool.ts),
 * file to file with fixed buffers; an abort ends that job's worker and removes the partial output.
 */
import { SvcError } from "../../lib/mod.ts";
import type { ArchiveReply, ArchiveRequest } from "./archive-worker.ts";
import type { ArchiveFormat, ExpandResult } from "./token-files.ts";
import { WorkerPool } from "./worker-pool.ts";
import type { StreamMemo } from "./stream-memo.ts";

export type { ArchiveFormat, ExpandResult } from "./token-files.ts";
export { type MemoStream, type StreamMemo, StreamMemos } from "./stream-memo.ts";

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
 * output is removed then). With a `memo` (stream-memo.ts), the streams it knows are copied from
 * its archive rather than rebuilt (`copied` counts them).
 */
export function contractArchive(
  expandedPath: string,
  outPath: string,
  signal?: AbortSignal,
  memo?: StreamMemo,
): Promise<{ size: number; sha256: string; copied: number }> {
  return run({ op: "contract", expandedPath, outPath, memo }, signal).then((reply) => {
    if ("contract" in reply) return reply.contract;
    throw new SvcError("InternalError", "Archive worker answered a contraction with an expansion");
  });
}

type Success = Extract<ArchiveReply, { ok: true }>;

const pool = new WorkerPool(() =>
  new Worker(new URL("./archive-worker.ts", import.meta.url).href, { type: "module" })
);
/** The end of each running job, so a shutdown fails them at once (their workers are gone). */
const running = new Set<(failure: unknown) => void>();

/** The archive worker pool's counters (tests, benchmarks). */
export function archiveWorkerStats(): { size: number; alive: number; started: number } {
  return { size: pool.size, alive: pool.alive, started: pool.started };
}

/**
 * Ends every archive worker (the server's stop): jobs running or waiting fail, and no worker
 * outlives the server. Later jobs start new workers.
 */
export function shutdownArchiveWorkers(): void {
  pool.shutdown();
  for (const end of [...running]) end(new Error("Archive workers are shut down"));
}

async function run(request: ArchiveRequest, signal?: AbortSignal): Promise<Success> {
  const lent = await pool.take(signal);
  if (signal?.aborted) {
    pool.give(lent); // never used: still good for the next job
    throw signal.reason;
  }
  const { promise, resolve, reject } = Promise.withResolvers<Success>();
  const { worker } = lent;
  let settled = false;
  /** Ends the job: a failure or an unusable expansion leaves no output file behind. */
  const finish = (failure: unknown, reply?: Success): void => {
    if (settled) return;
    settled = true;
    running.delete(finish);
    signal?.removeEventListener("abort", onAbort);
    worker.onmessage = null;
    worker.onerror = null;
    // A worker that answered is ready for the next job; one cut off mid-job is not.
    if (reply !== undefined) pool.give(lent);
    else pool.discard(lent);
    const unusable = reply === undefined || ("expand" in reply && !reply.expand.ok);
    if (!unusable) return resolve(reply);
    Deno.remove(request.outPath).catch(() => {}).finally(() =>
      reply === undefined ? reject(failure) : resolve(reply)
    );
  };
  const onAbort = (): void => finish(signal?.reason ?? new DOMException("Aborted", "AbortError"));
  signal?.addEventListener("abort", onAbort, { once: true });
  running.add(finish);
  worker.onmessage = (event: MessageEvent<ArchiveReply>) => {
    const reply = event.data;
    if (reply.ok) return finish(undefined, reply);
    // A failed job leaves the worker as it was (the codec holds no state between jobs), but a
    // fresh one costs little next to a failure: it goes.
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
  return await promise;
}
